// Finding the project's own files (the harness package, the Python venv, data files)
// from a running binary, whether it runs from the build tree or an install.
#ifndef KAGENT_COMMON_INSTALL_PATHS_H_
#define KAGENT_COMMON_INSTALL_PATHS_H_

#include <string>

namespace kagent {

// The first existing `<dir>/<relative>` where <dir> walks up from the running binary's
// folder to the root, then the current directory. Empty when none exists.
std::string FindInstallFile(const std::string& relative);

// The project's Python: <root>/.venv/bin/python when present, else "python3".
std::string DefaultPython();

}  // namespace kagent

#endif  // KAGENT_COMMON_INSTALL_PATHS_H_
