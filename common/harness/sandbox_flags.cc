#include "common/harness/sandbox_flags.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kagent {

namespace fs = std::filesystem;

void SandboxFlags::Register(OptionSet& o) {
  o.AddString("sandbox", &mode,
              "candidate sandbox: required (the worker does not start on a host that cannot "
              "sandbox) or best-effort (candidates run with what the host allows)");
  o.AddStringList("sandbox-hide", &hide,
                  "absolute path to hide from candidates, repeatable (the worker adds the "
                  "secret files its own flags name)");
  o.AddValidator([this] { return Validate(); });
}

absl::Status SandboxFlags::Validate() const {
  if (mode != "required" && mode != "best-effort") {
    return absl::InvalidArgumentError(
        absl::StrCat("--sandbox must be required or best-effort, not '", mode, "'"));
  }
  for (const std::string& p : hide) {
    if (p.empty() || p[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("--sandbox-hide needs an absolute path, not '", p, "'"));
    }
    if (p == "/") return absl::InvalidArgumentError("--sandbox-hide cannot hide /");
    if (p.find_first_of(std::string("\n\0", 2)) != std::string::npos) {
      return absl::InvalidArgumentError("--sandbox-hide paths cannot hold a newline or NUL");
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> SecretFiles(const ServerOptions& server, const std::string& config_path) {
  std::vector<std::string> out;
  for (const std::string* p : {&server.tls_key, &server.tokens_file, &config_path}) {
    if (!p->empty()) out.push_back(*p);
  }
  return out;
}

std::vector<std::string> DatabaseFiles(const std::string& db) {
  std::string path = db;
  if (absl::StartsWith(path, "sqlite:")) path = path.substr(7);
  if (path.empty() || path == ":memory:" || absl::StrContains(db, "://")) return {};
  return {path, path + "-wal", path + "-shm", path + "-journal"};
}

std::vector<std::string> SandboxHidePaths(const SandboxFlags& flags,
                                          const std::vector<std::string>& secret_files) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& p) {
    if (p.empty()) return;
    std::error_code ec;
    std::string abs = fs::path(p).is_absolute() ? p : fs::absolute(p, ec).lexically_normal().string();
    if (ec) abs = p;
    if (std::find(out.begin(), out.end(), abs) == out.end()) out.push_back(abs);
  };
  for (const std::string& p : flags.hide) add(p);
  for (const std::string& p : secret_files) add(p);
  return out;
}

}  // namespace kagent
