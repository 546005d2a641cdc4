// HarnessClient: the worker's Harness (harness.h) over the Python harness
// (python/kagent_harness), mapping its JSON onto the protocol's messages.
//
// Two ways to reach it. With `use_server` (the default) measurements go to the worker's
// long-lived harness server (HarnessServer, owned here: started by StartServer() or the
// first call, restarted when it dies), which keeps a job's trial inputs and reference
// outputs warm and prepares candidates before they take the GPU. Without it, and always
// for gpuinfo, each call runs `python -m kagent_harness MODE` as a one-shot child under
// the sandboxed subprocess runner (outer wall-clock limit, process group killed, private
// temp dir); profiling (ProfilerService) runs one-shot too. Either way the harness
// isolates the candidate in a further child, the environment pins the GPU
// (CUDA_VISIBLE_DEVICES), and any harness failure becomes an INFRA_ERROR verdict with the
// reason, so a worker always answers.
//
// The JSON of every request and answer is protocol.h's; this file is the transport (the
// server and the one-shot runner) and the mapping of failures onto verdicts. What a
// worker decides (its GPU, its GPU slot, when to prepare) stays in the services.
//
// Thread-safe: one-shot calls own their child; server calls have their own connection.
#ifndef KAGENT_COMMON_HARNESS_HARNESS_CLIENT_H_
#define KAGENT_COMMON_HARNESS_HARNESS_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/registry.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cancel.h"
#include "common/harness/harness.h"
#include "common/harness/harness_server.h"
#include "common/harness/protocol.h"
#include "common/subprocess/subprocess.h"
#include "kagent/v1/benchmark_service.pb.h"
#include "nlohmann/json.hpp"

namespace kagent {

struct HarnessOptions {
  std::string python = "python3";      // interpreter with torch and triton
  std::string harness_dir;             // folder holding the kagent_harness package
  std::string device = "cuda";         // "cuda" or "cpu" (Triton interpreter; timing is plumbing)
  std::string cuda_visible_devices;    // the GPU this worker owns, e.g. "0"
  std::string cupti_lib;               // libkagent_cupti.so, when built; empty: none
  double default_timeout_seconds = 600;
  double margin_seconds = 60;          // outer limit = request timeout + margin
  std::string worker_id = "worker-0";  // metric label and log field
  // The harness server (docs/harness.md): false runs every measurement one-shot.
  bool use_server = true;
  int pool = 2;                 // warm candidate processes the server keeps (--pool)
  int64_t trial_cache_mb = 0;   // GPU memory for the job trial cache; 0: the server's default
  int prepared_max = 4;         // prepared candidates held at once; 0: no prepare step
  // The candidate sandbox (the worker's --sandbox and --sandbox-hide flags): the server's
  // --sandbox and --sandbox-hide, and a one-shot request's "sandbox" and "sandbox_hide"
  // (SetSandboxFields). Empty mode: not passed (the harness's own default).
  std::string sandbox;
  std::vector<std::string> sandbox_hide;
};

// While it lives, the harness server keeps its candidate processes (the prepared and
// preparing ones) stopped, as it does while a timing runs: the server's hold_stopped op on
// a connection of its own, which destroying this object closes (the processes are
// continued then, or after the bound it was made with). The stop takes effect when the
// server reads the request, a few milliseconds after HoldCandidatesStopped returns. A
// failure of the call (no server, a restart) is logged and ends the hold early.
class HeldStopped {
 public:
  HeldStopped(HarnessServer* server, absl::Duration max, std::string worker_id);
  ~HeldStopped();
  HeldStopped(const HeldStopped&) = delete;
  HeldStopped& operator=(const HeldStopped&) = delete;

 private:
  CancelToken cancel_;
  std::thread thread_;
};

class HarnessClient final : public Harness {
 public:
  // `registry` (may be null) gets the server's restart counter; borrowed, must outlive
  // this object.
  explicit HarnessClient(HarnessOptions options, prometheus::Registry* registry = nullptr);
  ~HarnessClient() override;

  const HarnessOptions& options() const { return options_; }

  // Starts the harness server now (it warms up while the worker registers); without
  // use_server nothing. Errors as HarnessServer::Start.
  absl::Status StartServer();
  // Waits for the harness server's first start (HarnessServer::AwaitFirstStart); OK at
  // once without use_server.
  absl::Status AwaitServerStart();
  // Stops the harness server (SIGTERM, bounded wait, SIGKILL); calls in flight fail.
  void Shutdown();
  // The harness server; null without use_server.
  HarnessServer* server() { return server_.get(); }

  // The one-shot runner: runs `mode` with `request` (a JSON object; mode, device, timeout
  // and the sandbox fields are filled in). Returns the harness's JSON answer;
  // UNAVAILABLE/INTERNAL when the harness itself could not run or answered garbage (the
  // message says why, with its stderr tail).
  absl::StatusOr<nlohmann::json> Run(const std::string& mode, nlohmann::json request,
                                     double timeout_seconds, const CancelToken* cancel) const;

  // Harness: server ops prepare, measure (with job_id and the handle), prepare_screen,
  // screen (with the handle) and release_job; without use_server, Measure runs one-shot,
  // Prepare and PrepareScreen do nothing, Screen is FAILED_PRECONDITION and ReleaseJob
  // releases nothing.
  PrepareResult Prepare(const v1::MeasureRequest& request, const CancelToken* cancel) override;
  v1::Measurement Measure(const v1::MeasureRequest& request, const std::string& prepared_handle,
                          const CancelToken* cancel) override;
  PrepareResult PrepareScreen(const v1::ScreenRequest& request, const CancelToken* cancel) override;
  absl::StatusOr<v1::ScreenResponse> Screen(const v1::ScreenRequest& request,
                                            const std::string& prepared_handle,
                                            const CancelToken* cancel) override;
  absl::StatusOr<bool> ReleaseJob(const std::string& job_id) override;
  void ReleasePrepared(const std::string& handle) override;

  // Holds the harness server's candidate processes stopped (HeldStopped) for at most
  // `max`: a worker asks for it while a GPU task that is not the server's own (a profile)
  // holds its GPU slot, so that the preparations beside it do not take its CPU. Null
  // without use_server.
  std::unique_ptr<HeldStopped> HoldCandidatesStopped(absl::Duration max);

  // The GPU this worker drives (one-shot "gpuinfo").
  absl::StatusOr<nlohmann::json> GpuInfo(bool measure_ceilings) const;

 private:
  // Why nothing can be prepared for job `job_id` (no server, preparing off, no job id);
  // empty when it can.
  std::string WhyNotPrepare(const std::string& job_id) const;
  // `request` with op, device and timeout_s, to the server, within timeout + margin.
  absl::StatusOr<nlohmann::json> CallServer(const std::string& op, nlohmann::json request,
                                            double timeout_seconds, const CancelToken* cancel);

  const HarnessOptions options_;
  std::unique_ptr<HarnessServer> server_;  // with use_server
};

}  // namespace kagent

#endif  // KAGENT_COMMON_HARNESS_HARNESS_CLIENT_H_
