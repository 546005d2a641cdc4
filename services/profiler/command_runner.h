// The seam between the profiler and the processes it starts (ncu, the harness), so unit
// tests can feed recorded ncu output without a GPU. The real implementation runs
// commands through kagent_subprocess; the service uses it unless told otherwise.
#ifndef KAGENT_SERVICES_PROFILER_COMMAND_RUNNER_H_
#define KAGENT_SERVICES_PROFILER_COMMAND_RUNNER_H_

#include "absl/status/statusor.h"
#include "common/subprocess/subprocess.h"

namespace kagent {

// Runs one command to completion. Implementations must be thread-safe.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Same contract as RunSubprocess (common/subprocess/subprocess.h).
  virtual absl::StatusOr<SubprocessResult> Run(const SubprocessOptions& options) = 0;
  // Whether `program` (a name looked up on PATH, or a path) can be run.
  virtual bool CanRun(const std::string& program);
};

// RunSubprocess, for real. Stateless and thread-safe.
class SubprocessCommandRunner final : public CommandRunner {
 public:
  absl::StatusOr<SubprocessResult> Run(const SubprocessOptions& options) override;
};

// A process-wide SubprocessCommandRunner; never destroyed.
CommandRunner* DefaultCommandRunner();

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_COMMAND_RUNNER_H_
