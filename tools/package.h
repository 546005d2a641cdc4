// A finished job's best kernel as an importable Python package (`kagent export JOB DIR
// --package`): the kernel registered as a torch.library custom op with a fake (meta)
// implementation, so it works under torch.compile; a guard on the inputs it was verified
// on (the shapes, strides and dtypes of the problem's get_inputs(), the device type it was
// measured on) that sends every other input to the problem's reference; a drop-in Model
// and a functional form; a pytest file that checks it against the reference; and the
// measured figures (figures.json, README.md and the module's docstring).
//
// The package's folder holds:
//   __init__.py       the module
//   kernel.py         the best kernel's source as the job verified it: a Python source
//                     defining ModelNew, so also a starting kernel for another job
//   reference.py      the problem's source (Model, get_inputs, get_init_inputs)
//   figures.json      the final run's figures; README.md says the same for people
//   test_package.py   pytest: verified inputs, torch.compile, a fallback input, kernel.py
//
// Triton kernels run wherever the job verified them (a CUDA device, or the CPU under
// TRITON_INTERPRET=1). A CUDA C++ kernel (load_inline) is embedded the same way and
// compiles when first used on a CUDA device; elsewhere the package takes the reference's
// path and its tests that need the kernel are skipped with that reason.
#ifndef KAGENT_TOOLS_PACKAGE_H_
#define KAGENT_TOOLS_PACKAGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

struct PackageFile {
  std::string path;      // relative to the export folder, e.g. "kagent_relu_add/kernel.py"
  std::string contents;
};

struct PythonPackage {
  std::string name;      // the package's import name, e.g. "kagent_relu_add"
  std::vector<PackageFile> files;
};

// "kagent_" and the problem's name as a Python identifier (lower case, every other
// character '_'), e.g. "matvec-bf16" -> "kagent_matvec_bf16".
std::string PythonPackageName(const std::string& problem_name);

// The package of `job`'s best kernel. FAILED_PRECONDITION when the job has no best kernel
// whose final run was CORRECT (a job still running, or one that found none).
absl::StatusOr<PythonPackage> RenderPythonPackage(const v1::Job& job);

}  // namespace kagent

#endif  // KAGENT_TOOLS_PACKAGE_H_
