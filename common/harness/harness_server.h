// HarnessServer: the long-lived harness supervisor of one GPU worker
// (`python -m kagent_harness serve`, docs/harness.md "The harness server"), and the
// client side of its wire protocol (one JSON line in, one JSON line out, per connection
// on a Unix socket).
//
// The process runs on a thread of this object under RunSubprocess (no timeout; SIGTERM
// then SIGKILL to its process group at shutdown; PR_SET_PDEATHSIG), with its socket in a
// private temp dir. A prober pings the new process until it answers (the server is
// *ready*); one that is not ready within `start_timeout` is killed. A server still
// starting is normal (importing torch takes seconds): calls wait for it; but once it has
// ended `max_failed_starts` times in a row without becoming ready, calls fail at once
// (UNAVAILABLE, with its last exit) until a start succeeds. Whenever the process
// ends it is started again after a backoff (1 s doubling to 30 s, back to 1 s after a
// run of a minute or more), logged with the tail of its stderr and counted in
// kagent_harness_server_restarts_total{worker}.
//
//   HarnessServer server(options, registry);
//   server.Start();                      // optional: Call() starts it too
//   absl::StatusOr<nlohmann::json> a = server.Call({{"op", "ping"}}, absl::Seconds(30), &token);
//   server.Shutdown();                   // also done by the destructor
//
// Thread-safety: every method may be called from any thread; many Calls run at once
// (each has its own connection). Shutdown() waits for the process to end; Calls in
// flight then fail with UNAVAILABLE.
#ifndef KAGENT_COMMON_HARNESS_HARNESS_SERVER_H_
#define KAGENT_COMMON_HARNESS_HARNESS_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/subprocess/subprocess.h"
#include "nlohmann/json.hpp"

namespace kagent {

struct HarnessServerOptions {
  std::string python = "python3";
  std::string harness_dir;           // PYTHONPATH: the folder holding kagent_harness
  std::string device = "cuda";       // --device; "cpu" also sets TRITON_INTERPRET=1
  std::string cuda_visible_devices;  // CUDA_VISIBLE_DEVICES when not empty
  std::string cupti_lib;             // KAGENT_CUPTI_LIB when not empty
  int pool = 2;                      // --pool
  int64_t cache_mb = 0;              // --cache-mb; 0: not passed (the server's default)
  int prepared_max = 4;              // --prepared-max
  std::string worker_id = "worker-0";  // the `worker` label of the metric, and in logs
  // --sandbox=MODE (required | best-effort; empty: not passed) and one --sandbox-hide PATH
  // per path (the worker's own --sandbox and --sandbox-hide flags).
  std::string sandbox;
  std::vector<std::string> sandbox_hide;

  absl::Duration start_timeout = absl::Seconds(180);  // not answering a ping by then: killed
  int max_failed_starts = 3;
  absl::Duration restart_backoff_min = absl::Seconds(1);
  absl::Duration restart_backoff_max = absl::Seconds(30);
  absl::Duration stop_grace = absl::Seconds(10);      // SIGTERM, then SIGKILL after this
  size_t max_answer_bytes = size_t{64} << 20;
};

class HarnessServer {
 public:
  // `registry` may be null (no metric); borrowed, must outlive this object.
  HarnessServer(HarnessServerOptions options, prometheus::Registry* registry);
  ~HarnessServer();
  HarnessServer(const HarnessServer&) = delete;
  HarnessServer& operator=(const HarnessServer&) = delete;

  // Starts the supervising thread (and so the process) unless already started. After
  // Shutdown() it does nothing. Errors: INTERNAL when the socket's folder cannot be made.
  absl::Status Start();

  // Sends `request` (a JSON object) and returns the server's answer. Waits for a ready
  // server first (starting it when needed); all within `timeout`. `cancel` may be null.
  // Errors: DEADLINE_EXCEEDED (no answer within the timeout), CANCELLED (`cancel` fired);
  // in both cases the connection is closed, which cancels the request in the server.
  // UNAVAILABLE: the request was not sent (the server was not ready within the timeout,
  // keeps failing to start, see above, or was shut down), or the server closed the
  // connection without an answer, answered something that is not one JSON object, or
  // exited (the message says which, with its exit status and stderr tail when it died;
  // it is started again).
  absl::StatusOr<nlohmann::json> Call(const nlohmann::json& request, absl::Duration timeout,
                                      const CancelToken* cancel);

  // Waits until the first process answered its readiness ping (OK) or ended without
  // answering one: FAILED_PRECONDITION with its exit status and the tail of its stderr
  // (where the harness says why, e.g. that the host cannot give the required sandbox).
  // A process killed for not answering within `start_timeout` counts as ended. Starts the
  // server when needed. UNAVAILABLE after Shutdown().
  absl::Status AwaitFirstStart();

  // SIGTERM to the process group, `stop_grace`, SIGKILL; joins the thread. Idempotent.
  void Shutdown();

  // Whether the current process answered its readiness ping (false while starting, after
  // an exit, before Start()).
  bool ready() const;
  // How many times the process was started again after it ended (or failed to start).
  int64_t restarts() const;
  const std::string& socket_path() const { return socket_path_; }

  // The command line the server runs with (exposed for tests).
  std::vector<std::string> Argv() const;

 private:
  // One connection: connect, write `line`, read one answer line. `*connected` tells
  // whether the request reached the server (a failed connect is safe to retry).
  absl::StatusOr<nlohmann::json> Exchange(const std::string& line, absl::Time deadline,
                                          const CancelToken* cancel, bool* connected) const;
  void Supervise();
  void Probe(int64_t generation, CancelToken* run_cancel);
  // Kills the process of `generation` when it does not answer a ping (after a timeout).
  void KillIfUnresponsive(int64_t generation);
  // Why the process of `generation` ended, waiting up to `wait` for it to end; "" if not.
  std::string ExitOf(int64_t generation, absl::Duration wait);

  const HarnessServerOptions options_;
  std::unique_ptr<ScopedTempDir> dir_;  // holds the socket; set by Start()
  std::string socket_path_;
  prometheus::Counter* restarts_counter_ = nullptr;

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;         // processes started so far
  int64_t ended_generation_ ABSL_GUARDED_BY(mu_) = 0;   // the last one that ended
  bool ready_ ABSL_GUARDED_BY(mu_) = false;              // of generation_
  bool ever_ready_ ABSL_GUARDED_BY(mu_) = false;         // some process answered its ping
  std::string first_exit_ ABSL_GUARDED_BY(mu_);          // of the first process, when it ended
  std::string last_exit_ ABSL_GUARDED_BY(mu_);           // of ended_generation_
  CancelToken* run_cancel_ ABSL_GUARDED_BY(mu_) = nullptr;  // kills generation_
  int64_t restarts_ ABSL_GUARDED_BY(mu_) = 0;
  int failed_starts_ ABSL_GUARDED_BY(mu_) = 0;           // ended unready, in a row
  absl::Mutex join_mu_;  // serializes joining supervisor_
  std::thread supervisor_;
};

}  // namespace kagent

#endif  // KAGENT_COMMON_HARNESS_HARNESS_SERVER_H_
