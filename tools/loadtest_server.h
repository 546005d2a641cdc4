// The server a load test runs against, as a process: kagentd started as a child (its
// ready line read from stdout, stopped with SIGTERM then SIGKILL) and the samples of its
// resident memory, threads and open descriptors that the soak reports.
//
// Not thread-safe: one thread owns a ServerProcess.
#ifndef KAGENT_TOOLS_LOADTEST_SERVER_H_
#define KAGENT_TOOLS_LOADTEST_SERVER_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kagent {

// One sample of /proc/PID: -1 where unknown.
struct ProcSample {
  double rss_mib = -1;
  int64_t threads = -1;
  int64_t fds = -1;
};


// Reads VmRSS and Threads from /proc/PID/status and counts /proc/PID/fd.
ProcSample ReadProc(int64_t pid);

class ServerProcess {
 public:
  ~ServerProcess() { Stop(absl::Seconds(5)); }

  // Starts argv with stdout on a pipe and stderr in `log`; waits for the JSON ready line.
  absl::StatusOr<nlohmann::json> Start(const std::vector<std::string>& argv, const std::string& log,
                                       absl::Duration timeout);

  pid_t pid() const { return pid_; }
  // Whether the process still runs (reaps it when it has exited).
  bool Alive();

  // SIGTERM, then SIGKILL after `grace`. Returns the seconds it took and the exit status.
  std::pair<double, int> Stop(absl::Duration grace);

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  int exit_status_ = -1;
};

}  // namespace kagent

#endif  // KAGENT_TOOLS_LOADTEST_SERVER_H_
