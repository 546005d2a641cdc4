#include "common/install_paths.h"

#include <filesystem>

namespace kagent {

std::string FindInstallFile(const std::string& relative) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path p = exe.parent_path(); !p.empty(); p = p.parent_path()) {
      if (fs::exists(p / relative, ec)) return (p / relative).string();
      if (p == p.root_path()) break;
    }
  }
  fs::path here = fs::current_path(ec) / relative;
  if (!ec && fs::exists(here, ec)) return here.string();
  return "";
}

std::string DefaultPython() {
  std::string venv = FindInstallFile(".venv/bin/python");
  return venv.empty() ? "python3" : venv;
}

}  // namespace kagent
