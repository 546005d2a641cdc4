// The static Python text of a package written by RenderPythonPackage (tools/package.h).
// Internal to tools/package.cc; the texts live in package_python.cc.
#ifndef KAGENT_TOOLS_PACKAGE_PYTHON_H_
#define KAGENT_TOOLS_PACKAGE_PYTHON_H_

namespace kagent::package_python {

// The package module's code after its generated header (which defines JOB_ID, OP_NAME,
// VERIFIED_DEVICE, LANGUAGE and FIGURES): the shape guard, the torch.library custom op
// with its fake implementation, the drop-in Model and `functional`.
extern const char kModuleBody[];

// The package's pytest file (test_package.py).
extern const char kTestFile[];

}  // namespace kagent::package_python

#endif  // KAGENT_TOOLS_PACKAGE_PYTHON_H_
