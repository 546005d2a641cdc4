// A sandboxed child-process runner.
//
// RunSubprocess() forks and execs `argv` with an explicit environment, working directory
// and stdin bytes; captures stdout and stderr (each bounded: the last N bytes are kept);
// enforces a wall-clock timeout by sending SIGTERM and then SIGKILL to the child's whole
// process group (the child is made a process-group leader, so grandchildren die with it);
// applies RLIMIT_AS / RLIMIT_CPU / RLIMIT_NOFILE; optionally isolates the child from the
// network with a fresh network namespace (unshare(CLONE_NEWNET), falling back to a user
// namespace where the kernel allows unprivileged ones), reporting whether it applied;
// creates and removes a private temporary directory; and can be cancelled from another
// thread through a CancelToken (common/cancel.h). The child gets SIGKILL if the calling
// process dies (PR_SET_PDEATHSIG), so a killed worker leaves no measurement running
// behind it.
//
//   SubprocessOptions opts;
//   opts.argv = {"python3", "-m", "kagent_harness", "benchmark", "--request", path};
//   opts.timeout = absl::Seconds(60);
//   opts.rlimit_as_bytes = int64_t{64} << 30;
//   KAGENT_ASSIGN_OR_RETURN(SubprocessResult r, RunSubprocess(opts));
//   if (r.timed_out) ...
//
// Errors: RunSubprocess returns a non-OK status only when the child could not be started
// (NOT_FOUND: the program does not exist; PERMISSION_DENIED: it is not executable;
// INTERNAL: fork/pipe/mkdtemp failed; FAILED_PRECONDITION: network isolation was required
// and could not be applied; INVALID_ARGUMENT: empty argv). Everything that happens to a
// child once it runs (non-zero exit, signal, timeout, cancellation) is reported in the
// SubprocessResult with an OK status.
//
// Thread-safety: RunSubprocess is safe to call from many threads at once; each call owns
// its child, pipes and temp dir. All descriptors it creates are close-on-exec, and the
// child marks every inherited descriptor above stderr close-on-exec before exec, so
// concurrent runs never leak pipes into each other's children.
// Process-wide effects: none (no signal handlers are installed; SIGPIPE is blocked only
// on the calling thread while it writes stdin, and a pending one is consumed).
#ifndef KAGENT_COMMON_SUBPROCESS_SUBPROCESS_H_
#define KAGENT_COMMON_SUBPROCESS_SUBPROCESS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/cancel.h"

namespace kagent {

// A directory created with mkdtemp and removed (recursively) when destroyed.
// Not thread-safe; owned by one scope.
class ScopedTempDir {
 public:
  // Creates `<parent>/<prefix>XXXXXX`; parent defaults to $TMPDIR, else /tmp.
  static absl::StatusOr<std::unique_ptr<ScopedTempDir>> Create(
      absl::string_view prefix = "kagent-", absl::string_view parent = "");
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit ScopedTempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

struct SubprocessOptions {
  // argv[0] is looked up on PATH (the child's PATH when `env` sets one, else the
  // parent's) unless it contains a '/'. Must be non-empty.
  std::vector<std::string> argv;

  // The child's environment: when `inherit_env` is true, the parent's environment with
  // `env` applied on top (an entry with an empty value is still set); otherwise exactly
  // `env`. TMPDIR is set to the private temp dir when one is made.
  std::map<std::string, std::string> env;
  bool inherit_env = false;
  // Names removed from the inherited environment (only with inherit_env).
  std::vector<std::string> unset_env;

  // Working directory; empty means the private temp dir when one is made, else the
  // parent's current directory.
  std::string working_dir;

  // Bytes written to the child's stdin, which is then closed. Without data the child's
  // stdin is /dev/null.
  std::string stdin_data;

  // Each of stdout and stderr keeps at most this many bytes: the last ones.
  size_t max_output_bytes = size_t{8} << 20;

  // Wall-clock limit from the fork; InfiniteDuration() means none. On expiry the process
  // group gets SIGTERM, then SIGKILL after `kill_grace`.
  absl::Duration timeout = absl::InfiniteDuration();
  absl::Duration kill_grace = absl::Seconds(2);

  // Resource limits applied in the child before exec; 0 leaves the limit as inherited.
  int64_t rlimit_as_bytes = 0;      // address space (RLIMIT_AS)
  int64_t rlimit_cpu_seconds = 0;   // CPU time (RLIMIT_CPU): SIGXCPU, then SIGKILL
  int64_t rlimit_nofile = 0;        // open descriptors (RLIMIT_NOFILE)

  // Network isolation: a new, empty network namespace (only loopback, down).
  bool isolate_network = false;
  // With isolate_network: fail with FAILED_PRECONDITION instead of running unisolated.
  bool require_network_isolation = false;

  // Creates a private temp dir for the child (TMPDIR points at it; it is the working
  // directory unless `working_dir` is set) and removes it after the child is gone.
  bool private_temp_dir = true;
  std::string temp_dir_parent;  // empty: $TMPDIR, else /tmp

  // Optional (common/cancel.h): when it fires, the child's process group gets SIGTERM,
  // then SIGKILL after `kill_grace`, and the result has `cancelled` set. Not owned; must
  // outlive the call.
  const CancelToken* cancel = nullptr;
};

struct SubprocessResult {
  // Exit status when the child exited normally (exited == true), else -1.
  bool exited = false;
  int exit_code = -1;
  // The terminating signal when the child was killed by one, else 0.
  int term_signal = 0;
  bool core_dumped = false;

  bool timed_out = false;   // the wall-clock timeout fired
  bool cancelled = false;   // the CancelToken fired (and the timeout had not)
  bool network_isolated = false;  // the child ran in its own network namespace

  double wall_seconds = 0;
  double user_cpu_seconds = 0;
  double system_cpu_seconds = 0;
  int64_t peak_rss_bytes = 0;  // the child's max RSS (wait4's ru_maxrss)

  std::string stdout_data;  // the last max_output_bytes bytes
  std::string stderr_data;
  int64_t stdout_total_bytes = 0;  // everything the child wrote
  int64_t stderr_total_bytes = 0;
  bool stdout_truncated() const {
    return stdout_total_bytes > static_cast<int64_t>(stdout_data.size());
  }
  bool stderr_truncated() const {
    return stderr_total_bytes > static_cast<int64_t>(stderr_data.size());
  }

  // True when the child exited with status 0 on its own.
  bool ok() const { return exited && exit_code == 0 && !timed_out && !cancelled; }

  // One line: "exit 0", "signal 11 (Segmentation fault)", "timed out after 5.0 s", ...
  std::string Describe() const;
};

// Runs the child to completion (or timeout/cancellation) and returns what happened.
// Blocks the calling thread. See the file comment for errors and thread-safety.
absl::StatusOr<SubprocessResult> RunSubprocess(const SubprocessOptions& options);

// Looks `name` up on `path_env` (a PATH value; empty means the process's PATH) and returns
// the first executable match, or NOT_FOUND. A name containing '/' is returned unchanged
// when it is executable.
absl::StatusOr<std::string> FindExecutable(absl::string_view name,
                                           absl::string_view path_env = "");

}  // namespace kagent

#endif  // KAGENT_COMMON_SUBPROCESS_SUBPROCESS_H_
