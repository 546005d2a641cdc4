// The GPU gate of a profile: the harness's profile mode prepares without the GPU (its
// processes, imports, the candidate's construction and compile dry run), says so, and
// waits; only then is the GPU taken, so a worker's slot is held for the profiled
// forwards, not for a Python start under the profiler (python/kagent_harness/gate.py).
//
//   ProfileGpuGate* gate = ...;            // e.g. the worker's GPU slot
//   RunGatedHarness(runner, options, gate_dir, gate, timeout);
//
// The handshake is files in `gate_dir` (the caller's private directory, which the
// candidate's sandbox does not see): the harness writes `ready`, this side answers `go`
// once gate->Acquire() returned OK (or `stop` when it failed), and releases the gate
// when the harness writes `done` or the process ends, whichever comes first.
#ifndef KAGENT_SERVICES_PROFILER_PROFILE_GATE_H_
#define KAGENT_SERVICES_PROFILER_PROFILE_GATE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/subprocess/subprocess.h"
#include "services/profiler/command_runner.h"

namespace kagent {

inline constexpr char kGateDirFlag[] = "--gate-dir";

// Who decides when a profile may use the GPU. Implementations need not be thread-safe:
// one gate serves one profile, called from one thread, which may acquire it more than
// once in turn (ProfilerServiceImpl::RunProfile).
class ProfileGpuGate {
 public:
  virtual ~ProfileGpuGate() = default;
  // Blocks until this profile holds the GPU. `cancel` (may be null) fires when the
  // profile's caller went away. An error ends the profile without GPU work and is the
  // profile's error (e.g. DEADLINE_EXCEEDED: the slot was not granted in time).
  virtual absl::Status Acquire(const CancelToken* cancel) = 0;
  // The GPU work is over. Called once after each Acquire that returned OK.
  virtual void Release() = 0;
};

// What a gated run did besides the process's own result.
struct GatedRunInfo {
  bool granted = false;            // Acquire returned OK (go was written)
  double prepare_seconds = 0;      // from the start to ready
  // Where a granted run's held time went, by this side's clock: from the gate's grant to
  // `go` written; from `go` to `done` seen (or the process's end); the gate's Release.
  double grant_to_go_seconds = 0;
  double gpu_part_seconds = 0;
  double release_seconds = 0;
};

// Runs `options` (a harness profile command; `--gate-dir gate_dir` is appended to its
// argv) through `runner` with the handshake above. `timeout` bounds the preparation
// (start to ready) and, separately, the GPU part (go to the end); the wait for the gate
// is bounded by the gate itself. Either bound passing kills the process and the result
// reads timed_out, as RunSubprocess's own timeout would. `cancel` (may be null) kills
// the process and cancels a pending Acquire.
//
// Errors: the runner's; the gate's Acquire error (the process is told to stop and is
// waited for, then killed if it does not end within 30 s).
absl::StatusOr<SubprocessResult> RunGatedHarness(CommandRunner* runner,
                                                 SubprocessOptions options,
                                                 const std::string& gate_dir,
                                                 ProfileGpuGate* gate, absl::Duration timeout,
                                                 const CancelToken* cancel,
                                                 GatedRunInfo* info = nullptr);

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_PROFILE_GATE_H_
