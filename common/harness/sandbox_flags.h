// The candidate sandbox's flags (docs/harness.md "The sandbox"), shared by every binary
// that runs the Python harness (kagent-benchmark, kagentd's embedded workers,
// kagent-profiler), and the secret files a process adds to what the sandbox hides.
//
// The harness gets them as `serve --sandbox=MODE [--sandbox-hide PATH]...` (the harness
// server) or as the request's "sandbox": MODE and "sandbox_hide": [PATH, ...] (one-shot
// measure, profile and gpuinfo runs).
#ifndef KAGENT_COMMON_HARNESS_SANDBOX_FLAGS_H_
#define KAGENT_COMMON_HARNESS_SANDBOX_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/options.h"
#include "common/server.h"

namespace kagent {

struct SandboxFlags {
  // --sandbox: "required" (the harness refuses to start when the host cannot sandbox; the
  // worker then fails to start with its message) or "best-effort" (it runs candidates with
  // what the host allows, and says what it gave up).
  std::string mode = "required";
  // --sandbox-hide, repeatable: absolute paths made absent from the candidate's view.
  std::vector<std::string> hide;

  void Register(OptionSet& o);
  // INVALID_ARGUMENT naming the flag: an unknown mode, a path that is not absolute, is
  // "/", or holds a newline or NUL.
  absl::Status Validate() const;
};

// The secret-holding files a process's own flags name: the TLS private key (--tls-key),
// the bearer tokens file (--tokens-file) and the config file (`config_path`, --config or
// KAGENT_CONFIG). Empty names are left out.
std::vector<std::string> SecretFiles(const ServerOptions& server, const std::string& config_path);
// The files of a coordinator database given as --db: a SQLite file (PATH or sqlite:PATH)
// and its -wal, -shm and -journal companions; none for a PostgreSQL URI or :memory:.
std::vector<std::string> DatabaseFiles(const std::string& db);
// What the harness is told to hide: `flags.hide`, then `secret_files`, each once, made
// absolute (relative to the working directory).
std::vector<std::string> SandboxHidePaths(const SandboxFlags& flags,
                                          const std::vector<std::string>& secret_files);

}  // namespace kagent

#endif  // KAGENT_COMMON_HARNESS_SANDBOX_FLAGS_H_
