#include "services/profiler/command_runner.h"

namespace kagent {

bool CommandRunner::CanRun(const std::string& program) {
  return FindExecutable(program).ok();
}

absl::StatusOr<SubprocessResult> SubprocessCommandRunner::Run(const SubprocessOptions& options) {
  return RunSubprocess(options);
}

CommandRunner* DefaultCommandRunner() {
  static CommandRunner* runner = new SubprocessCommandRunner();
  return runner;
}

}  // namespace kagent
