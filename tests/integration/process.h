// Test helper: a real child process (a kagent binary) running in the background, with
// its stdout captured line by line (the services print one JSON line with their ports).
#ifndef KAGENT_TESTS_INTEGRATION_PROCESS_H_
#define KAGENT_TESTS_INTEGRATION_PROCESS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace kagent::testing {

class Process {
 public:
  // Starts `argv` with the parent's environment plus `env`; stderr goes to `log_path`.
  Process(std::vector<std::string> argv, std::map<std::string, std::string> env,
          std::string log_path);
  ~Process();  // SIGKILL if still running

  // Waits for the first stdout line that parses as JSON; null on timeout or exit.
  nlohmann::json ReadyLine(absl::Duration timeout);
  // Sends `sig`; Wait returns the exit status (or 128+signal), -1 on timeout.
  void Signal(int sig);
  int Wait(absl::Duration timeout);
  bool running();
  int pid() const { return pid_; }
  std::string Log() const;  // the stderr file's content

 private:
  int pid_ = -1;
  int out_fd_ = -1;
  std::string log_path_;
  std::string buffer_;
  int status_ = -1;
  bool reaped_ = false;
};

// Runs a command to completion; returns the exit code and fills stdout/stderr.
int RunCommand(const std::vector<std::string>& argv, std::string* out, std::string* err,
               const std::map<std::string, std::string>& env = {},
               absl::Duration timeout = absl::Minutes(10));

// GET http://127.0.0.1:<port><path> over a plain socket; the body ("" on failure).
std::string HttpGet(int port, const std::string& path);

std::string BinaryDir();  // KAGENT_BINARY_DIR
std::string SourceDir();  // KAGENT_SOURCE_DIR
// A fresh directory for this test, removed when the test process exits (kept when
// KAGENT_KEEP_TEST_DIRS is set, to look at the services' logs and databases).
std::string TempDir();

}  // namespace kagent::testing

#endif  // KAGENT_TESTS_INTEGRATION_PROCESS_H_
