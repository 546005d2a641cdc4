// The Nsight Compute backend: runs the harness's profile mode under
//   ncu --csv --page raw --print-units base --clock-control none --nvtx
//       --nvtx-include "kagent_candidate/" --metrics <list> --target-processes all
//       --log-file <work>/ncu.csv <python> -m kagent_harness profile
//       --request <work>/request.json --out <work>/result.json
// through a CommandRunner and parses the CSV into per-kernel metrics. ncu's own output
// goes to --log-file so the harness's stdout never mixes into the CSV.
//
// Errors: ncu missing -> FAILED_PRECONDITION; ERR_NVGPUCTRPERM -> PERMISSION_DENIED with
// the fix; timeout -> DEADLINE_EXCEEDED; cancellation -> CANCELLED; the candidate failing
// under the profiler -> FAILED_PRECONDITION with the harness's verdict; nothing captured
// inside the NVTX range -> FAILED_PRECONDITION; another ncu run of the host holding the
// lock for the whole timeout -> DEADLINE_EXCEEDED.
//
// Thread-safe: no state; the caller serializes use of one GPU, and the host's ncu runs are
// serialized by the lock (NcuBackendOptions::lock_path).
#ifndef KAGENT_SERVICES_PROFILER_NCU_BACKEND_H_
#define KAGENT_SERVICES_PROFILER_NCU_BACKEND_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/harness/protocol.h"
#include "common/subprocess/subprocess.h"
#include "services/profiler/command_runner.h"
#include "services/profiler/ncu_csv.h"
#include "services/profiler/ncu_host_lock.h"
#include "services/profiler/ncu_user.h"
#include "services/profiler/profile_gate.h"

namespace kagent {

inline constexpr char kNvtxRange[] = "kagent_candidate";
// TMPDIR of ncu's run: a directory the sandboxed candidate can reach (RunNcuProfile).
inline constexpr char kNcuTempDir[] = "/tmp";
inline constexpr char kNcuMissingMessage[] =
    "ncu not found on PATH; install Nsight Compute or use the cupti backend";

// How to start the harness (shared by both backends).
struct HarnessCommand {
  std::string python = "python3";
  std::string pythonpath;             // the folder holding kagent_harness; may be empty
  std::string cuda_visible_devices;   // e.g. "0"; empty leaves the variable unset
  std::map<std::string, std::string> extra_env;
  int64_t rlimit_as_bytes = 0;        // 0: none (CUDA maps large address ranges)
};

// One profile run: the files live in `work_dir` (the caller's private temp dir).
struct ProfileRun {
  std::string work_dir;
  std::string request_path;   // the harness request, already written
  absl::Duration timeout = absl::Seconds(300);
  const CancelToken* cancel = nullptr;
  // When set, the harness prepares first and uses the GPU only once `gate` grants it
  // (profile_gate.h); `timeout` then bounds the preparation and the GPU part each.
  // Not owned. `gate_info` (may be null) gets what the gated run did.
  ProfileGpuGate* gate = nullptr;
  GatedRunInfo* gate_info = nullptr;
  // When set, the harness runs as this user (ncu_user.h): the gate directory is its.
  std::optional<NcuUser> run_as;
};

struct NcuBackendOptions {
  std::string ncu_path = "ncu";
  std::vector<std::string> metrics;   // NcuMetricsForArch(cc)
  // When set (a root worker: NcuUserForSandbox), ncu and the harness run as this user,
  // with the run's files in a directory of its own under kNcuTempDir instead of the
  // caller's work dir; setpriv (util-linux) must be on PATH.
  std::optional<NcuUser> run_as;
  // The host's ncu lock (ncu_host_lock.h): a run waits for it, within its timeout, before
  // ncu starts, and holds it until ncu has exited.
  std::string lock_path = DefaultNcuLockPath();
};

struct NcuProfile {
  NcuCsvReport report;
  std::string raw_csv;                  // ncu's log file as written (bounded by caller)
  HarnessProfileResult harness;         // when the harness wrote its result
  std::vector<std::string> missing_metrics;  // requested, absent from every kernel
};

// The full argv (exposed for tests and for record_fixtures.sh's twin).
std::vector<std::string> BuildNcuArgv(const NcuBackendOptions& options,
                                      const HarnessCommand& harness,
                                      const std::string& request_path,
                                      const std::string& result_path,
                                      const std::string& log_path);

// The environment for the harness (and ncu): the worker's, plus PYTHONPATH,
// CUDA_VISIBLE_DEVICES and extra_env.
SubprocessOptions HarnessSubprocessOptions(const HarnessCommand& harness, const ProfileRun& run,
                                           std::vector<std::string> argv);

// Runs a harness profile command (ncu's or the CUPTI backend's) for `run`: through
// RunGatedHarness with a gate directory in run.work_dir when run.gate is set, else to
// completion under run.timeout.
absl::StatusOr<SubprocessResult> RunHarnessProfileProcess(CommandRunner* runner,
                                                          SubprocessOptions options,
                                                          const ProfileRun& run);

// What the harness wrote to `result_path` after a profile run (either backend's): the
// parsed result, or a default one when the file is missing or not the harness's JSON;
// FAILED_PRECONDITION ("the candidate failed under the profiler: VERDICT: reason") when
// the harness says the candidate itself failed.
absl::StatusOr<HarnessProfileResult> ReadProfiledHarnessResult(const std::string& result_path);

// Maps a finished ncu run to an error, or OK when it may be parsed. `ncu_log` is the
// --log-file text.
absl::Status NcuFailureStatus(const SubprocessResult& result, absl::string_view ncu_log,
                              absl::Duration timeout);

// A profile run as the sandbox's user (a root worker's, under either backend: ncu_user.h
// says why), for the lifetime of this object. Move() checks that setpriv is on PATH, makes
// a directory of that user's under kNcuTempDir holding a copy of the request and points
// `run` there (work_dir, request_path, run_as); the caller then starts its command through
// RunAsUser. The directory is removed when this object goes. Not thread-safe.
class UserRunDir {
 public:
  UserRunDir() = default;
  ~UserRunDir();
  UserRunDir(const UserRunDir&) = delete;
  UserRunDir& operator=(const UserRunDir&) = delete;

  // Does nothing when `user` is empty. FAILED_PRECONDITION without setpriv; INTERNAL when
  // the directory or the copy fails. Precondition: not moved yet.
  absl::Status Move(CommandRunner* runner, const std::optional<NcuUser>& user,
                    ProfileRun* run);

 private:
  std::string dir_;
};

absl::StatusOr<NcuProfile> RunNcuProfile(CommandRunner* runner, const NcuBackendOptions& options,
                                         const HarnessCommand& harness, const ProfileRun& run);

// Reads a whole file; NOT_FOUND / INTERNAL on failure. Files over `limit` bytes keep the
// first `limit` bytes.
absl::StatusOr<std::string> ReadFileBounded(const std::string& path, size_t limit);

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_NCU_BACKEND_H_
