#include "common/harness/harness_client.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {
namespace {

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

// A measurement for a harness failure: TIMEOUT when it did not answer in time, else
// INFRA_ERROR, with the reason.
v1::Measurement InfraMeasurement(const absl::Status& s) {
  v1::Measurement m;
  m.set_verdict(s.code() == absl::StatusCode::kDeadlineExceeded ? v1::VERDICT_TIMEOUT
                                                                 : v1::VERDICT_INFRA_ERROR);
  m.mutable_correctness()->set_reason(std::string(s.message()));
  return m;
}

}  // namespace

HarnessClient::HarnessClient(HarnessOptions options, prometheus::Registry* registry)
    : options_(std::move(options)) {
  if (options_.use_server) {
    HarnessServerOptions so;
    so.python = options_.python;
    so.harness_dir = options_.harness_dir;
    so.device = options_.device;
    so.cuda_visible_devices = options_.cuda_visible_devices;
    so.cupti_lib = options_.cupti_lib;
    so.pool = options_.pool;
    so.cache_mb = options_.trial_cache_mb;
    so.prepared_max = options_.prepared_max;
    so.worker_id = options_.worker_id;
    so.sandbox = options_.sandbox;
    so.sandbox_hide = options_.sandbox_hide;
    server_ = std::make_unique<HarnessServer>(so, registry);
  }
}

HarnessClient::~HarnessClient() { Shutdown(); }

absl::Status HarnessClient::StartServer() {
  return server_ == nullptr ? absl::OkStatus() : server_->Start();
}

absl::Status HarnessClient::AwaitServerStart() {
  return server_ == nullptr ? absl::OkStatus() : server_->AwaitFirstStart();
}

void HarnessClient::Shutdown() {
  if (server_ != nullptr) server_->Shutdown();
}

absl::StatusOr<nlohmann::json> HarnessClient::Run(const std::string& mode, nlohmann::json request,
                                                  double timeout_seconds,
                                                  const CancelToken* cancel) const {
  if (timeout_seconds <= 0) timeout_seconds = options_.default_timeout_seconds;
  request["mode"] = mode;
  request["device"] = options_.device;
  request["timeout_s"] = timeout_seconds;
  SetSandboxFields(options_.sandbox, options_.sandbox_hide, &request);
  KAGENT_ASSIGN_OR_RETURN(auto dir, ScopedTempDir::Create("kagent-harness-"));
  std::string req_path = dir->path() + "/request.json";
  std::string out_path = dir->path() + "/result.json";
  {
    std::ofstream f(req_path);
    f << request.dump();
    if (!f) return absl::InternalError("cannot write the harness request file");
  }
  SubprocessOptions so;
  so.argv = HarnessArgv(options_.python, mode, {"--request", req_path, "--out", out_path});
  so.inherit_env = true;
  so.env = HarnessEnvironment(options_.harness_dir, options_.device,
                              options_.cuda_visible_devices, options_.cupti_lib);
  so.timeout = absl::Seconds(timeout_seconds + options_.margin_seconds);
  so.cancel = cancel;
  so.max_output_bytes = 1 << 20;
  KAGENT_ASSIGN_OR_RETURN(SubprocessResult r, RunSubprocess(so));
  if (r.cancelled) return absl::CancelledError("measurement cancelled");
  if (r.timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("harness did not answer within ",
                                                    timeout_seconds + options_.margin_seconds,
                                                    " s; killed"));
  }
  std::ifstream in(out_path);
  nlohmann::json answer = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!in || answer.is_discarded()) {
    return absl::UnavailableError(absl::StrCat("harness failed (", r.Describe(),
                                               ") without an answer: ",
                                               Tail(r.stderr_data, 2000)));
  }
  return answer;
}

absl::StatusOr<nlohmann::json> HarnessClient::CallServer(const std::string& op,
                                                         nlohmann::json request,
                                                         double timeout_seconds,
                                                         const CancelToken* cancel) {
  if (timeout_seconds <= 0) timeout_seconds = options_.default_timeout_seconds;
  request["op"] = op;
  request["device"] = options_.device;
  request["timeout_s"] = timeout_seconds;
  return server_->Call(request, absl::Seconds(timeout_seconds + options_.margin_seconds), cancel);
}

HeldStopped::HeldStopped(HarnessServer* server, absl::Duration max, std::string worker_id) {
  const double max_s = absl::ToDoubleSeconds(max);
  thread_ = std::thread([this, server, max, max_s, worker_id = std::move(worker_id)] {
    absl::StatusOr<nlohmann::json> a = server->Call(
        nlohmann::json{{"op", "hold_stopped"}, {"max_s", max_s}}, max + absl::Seconds(30),
        &cancel_);
    // CANCELLED is the normal end (the holder is gone); the server answers by itself only
    // once the bound passed.
    if (!a.ok() && !cancel_.cancelled()) {
      KLOG(WARNING).With("worker", worker_id)
          << "holding the candidate processes stopped failed: " << a.status();
    }
  });
}

HeldStopped::~HeldStopped() {
  cancel_.Cancel();
  thread_.join();
}

std::unique_ptr<HeldStopped> HarnessClient::HoldCandidatesStopped(absl::Duration max) {
  if (server_ == nullptr) return nullptr;
  return std::make_unique<HeldStopped>(server_.get(), max, options_.worker_id);
}

std::string HarnessClient::WhyNotPrepare(const std::string& job_id) const {
  if (server_ == nullptr) return "no harness server (one-shot measurements)";
  if (options_.prepared_max <= 0) return "preparing is off (--prepared-max 0)";
  if (job_id.empty()) return "nothing to prepare (no job id)";
  return "";
}

PrepareResult HarnessClient::Prepare(const v1::MeasureRequest& request, const CancelToken* cancel) {
  PrepareResult p;
  p.reason = WhyNotPrepare(request.job_id());
  if (!p.reason.empty()) return p;
  if (request.kernel().source().empty()) {
    p.reason = "nothing to prepare (no kernel)";
    return p;
  }
  absl::StatusOr<nlohmann::json> req = HarnessRequestFor(request);
  if (!req.ok()) {
    p.final = InfraMeasurement(req.status());  // the measurement would fail the same way
    return p;
  }
  (*req)["job_id"] = request.job_id();
  absl::Time start = absl::Now();
  absl::StatusOr<nlohmann::json> answer =
      CallServer("prepare", *std::move(req), request.timeout_seconds(), cancel);
  p.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  PrepareAnswer a;
  bool answered = ParsePrepareAnswer(answer, "prepare", &a);
  p.reason = a.reason;
  if (!answered) return p;
  if (a.final.has_value()) {
    if (a.final->ok()) {
      p.final = **std::move(a.final);
      return p;
    }
    p.reason = absl::StrCat("prepare's result is unusable: ", a.final->status().message());
    return p;
  }
  p.handle = a.handle;
  return p;
}

v1::Measurement HarnessClient::Measure(const v1::MeasureRequest& request,
                                       const std::string& prepared_handle,
                                       const CancelToken* cancel) {
  absl::StatusOr<nlohmann::json> req = HarnessRequestFor(request);
  if (!req.ok()) return InfraMeasurement(req.status());
  absl::StatusOr<nlohmann::json> answer;
  if (server_ != nullptr) {
    (*req)["job_id"] = request.job_id();
    if (!prepared_handle.empty()) (*req)["prepared"] = prepared_handle;
    answer = CallServer("measure", *std::move(req), request.timeout_seconds(), cancel);
  } else {
    answer = Run("measure", *std::move(req), request.timeout_seconds(), cancel);
  }
  if (!answer.ok()) return InfraMeasurement(answer.status());
  absl::StatusOr<v1::Measurement> parsed = MeasurementFromAnswer(*answer);
  if (!parsed.ok()) return InfraMeasurement(parsed.status());
  return *parsed;
}

PrepareResult HarnessClient::PrepareScreen(const v1::ScreenRequest& request,
                                           const CancelToken* cancel) {
  PrepareResult p;
  p.reason = WhyNotPrepare(request.job_id());
  if (!p.reason.empty()) return p;
  absl::Time start = absl::Now();
  absl::StatusOr<nlohmann::json> answer =
      CallServer("prepare_screen", ScreenRequestFor(request), request.timeout_seconds(), cancel);
  p.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  PrepareAnswer a;
  if (ParsePrepareAnswer(answer, "prepare_screen", &a)) p.handle = a.handle;
  p.reason = a.reason;
  return p;
}

absl::StatusOr<v1::ScreenResponse> HarnessClient::Screen(const v1::ScreenRequest& request,
                                                         const std::string& prepared_handle,
                                                         const CancelToken* cancel) {
  if (server_ == nullptr) {
    return absl::FailedPreconditionError(
        "screens need the harness server; this worker runs one-shot (--harness-server=false)");
  }
  nlohmann::json req = ScreenRequestFor(request);
  if (!prepared_handle.empty()) req["prepared"] = prepared_handle;
  KAGENT_ASSIGN_OR_RETURN(nlohmann::json answer,
                          CallServer("screen", std::move(req), request.timeout_seconds(), cancel));
  return ScreenResponseFromJson(answer, request.kernels_size());
}

absl::StatusOr<bool> HarnessClient::ReleaseJob(const std::string& job_id) {
  // A server that is not up holds nothing (a new one rebuilds from the next requests).
  if (server_ == nullptr || !server_->ready()) return false;
  KAGENT_ASSIGN_OR_RETURN(nlohmann::json answer,
                          server_->Call(ReleaseJobRequest(job_id), absl::Seconds(30), nullptr));
  return ReleaseJobAnswer(answer);
}

void HarnessClient::ReleasePrepared(const std::string& handle) {
  if (handle.empty() || server_ == nullptr || !server_->ready()) return;
  absl::Status released =
      ReleasePreparedAnswer(server_->Call(ReleasePreparedRequest(handle), absl::Seconds(30), nullptr));
  if (!released.ok()) {
    KLOG(WARNING) << "prepared candidate " << handle << " not released: " << released.message();
  }
}

absl::StatusOr<nlohmann::json> HarnessClient::GpuInfo(bool measure_ceilings) const {
  return Run("gpuinfo", GpuInfoRequest(measure_ceilings), 300, nullptr);
}

}  // namespace kagent
