#include "services/benchmark/harness_client.h"

#include <fstream>
#include <optional>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {
namespace {

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

const char* LanguageName(v1::KernelLanguage l) {
  return l == v1::KERNEL_LANGUAGE_CUDA ? "cuda" : "triton";
}

// Typed reads of a JSON object that never throw: a missing field or one of another type
// gives the fallback.
std::string StringField(const nlohmann::json& j, const char* key, std::string fallback = "") {
  if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  return fallback;
}

bool BoolField(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

double NumberField(const nlohmann::json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return 0;
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

// A harness answer that is a measurement, or why not. The server answers a request it
// could not parse with {ok: false, error} and no verdict.
absl::StatusOr<v1::Measurement> MeasurementFromAnswer(const nlohmann::json& answer) {
  if (answer.is_object() && !answer.contains("verdict") && answer.contains("error")) {
    return absl::InternalError(absl::StrCat("the harness refused the request: ",
                                            StringField(answer, "error", answer["error"].dump())));
  }
  return MeasurementFromHarnessJson(answer);
}

}  // namespace

absl::StatusOr<nlohmann::json> HarnessRequestFor(const v1::MeasureRequest& r) {
  nlohmann::json j;
  j["problem_source"] = r.problem().source();
  if (!r.kernel().source().empty()) {
    j["kernel_source"] = r.kernel().source();
    j["language"] = LanguageName(r.kernel().language());
  }
  if (!r.reference_kernel().source().empty()) {
    j["reference_kernel_source"] = r.reference_kernel().source();
    j["reference_kernel_language"] = LanguageName(r.reference_kernel().language());
  }
  if (r.trials() > 0) j["trials"] = r.trials();
  if (r.timing_reps() > 0) j["timing_reps"] = r.timing_reps();
  if (r.problem().has_atol()) j["atol"] = r.problem().atol();
  if (r.problem().has_rtol()) j["rtol"] = r.problem().rtol();
  j["baselines"] = r.measure_baselines();
  if (r.skip_op_signature()) j["signature"] = false;
  if (!r.shape_set().empty()) {
    bool found = false;
    for (const auto& s : r.problem().extra_shapes()) {
      if (s.name() == r.shape_set()) {
        j["get_inputs_source"] = s.get_inputs_source();
        j["shape_set"] = s.name();
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape_set '", r.shape_set(), "' is not in problem.extra_shapes"));
    }
  }
  return j;
}

nlohmann::json ScreenRequestFor(const v1::ScreenRequest& r) {
  nlohmann::json j;
  j["problem_source"] = r.problem().source();
  if (r.problem().has_atol()) j["atol"] = r.problem().atol();
  if (r.problem().has_rtol()) j["rtol"] = r.problem().rtol();
  j["job_id"] = r.job_id();
  nlohmann::json kernels = nlohmann::json::array();
  for (const v1::KernelSource& k : r.kernels()) {
    kernels.push_back({{"source", k.source()}, {"language", LanguageName(k.language())}});
  }
  j["kernels"] = std::move(kernels);
  if (r.timing_reps() > 0) j["timing_reps"] = r.timing_reps();
  return j;
}

absl::StatusOr<v1::ScreenResponse> ScreenResponseFromJson(const nlohmann::json& a, int kernels) {
  if (!a.is_object()) return absl::InternalError("the screen answer is not a JSON object");
  if (!BoolField(a, "ok")) {
    return absl::InternalError(absl::StrCat(
        "the harness could not screen: ",
        StringField(a, "error", a.contains("error") ? a["error"].dump() : "no ok and no error")));
  }
  if (!a.contains("results") || !a["results"].is_array()) {
    return absl::InternalError("the screen answer has no results list");
  }
  std::vector<std::optional<v1::ScreenResult>> by_index(static_cast<size_t>(kernels));
  for (const nlohmann::json& r : a["results"]) {
    if (!r.is_object() || !r.contains("index") || !r["index"].is_number_integer()) {
      return absl::InternalError(absl::StrCat("a screen result has no index: ", r.dump()));
    }
    int64_t i = r["index"].get<int64_t>();
    if (i < 0 || i >= kernels) {
      return absl::InternalError(absl::StrCat("a screen result's index ", i, " is not one of the ",
                                              kernels, " kernels"));
    }
    v1::ScreenResult out;
    out.set_index(static_cast<int32_t>(i));
    out.set_ok(BoolField(r, "ok"));
    out.set_reason(StringField(r, "reason"));
    if (out.ok()) out.set_median_ms(NumberField(r, "median_ms"));
    by_index[static_cast<size_t>(i)] = std::move(out);
  }
  v1::ScreenResponse resp;
  for (int i = 0; i < kernels; ++i) {
    v1::ScreenResult* out = resp.add_results();
    if (by_index[static_cast<size_t>(i)]) {
      *out = *by_index[static_cast<size_t>(i)];
    } else {
      out->set_index(i);
      out->set_reason("the harness gave no result for this kernel");
    }
  }
  resp.set_log(Tail(StringField(a, "log"), 16 << 10));
  return resp;
}

absl::StatusOr<v1::Measurement> MeasurementFromHarnessJson(const nlohmann::json& a) {
  if (!a.is_object()) return absl::InternalError("harness answer is not a JSON object");
  nlohmann::json m = nlohmann::json::object();
  std::string verdict = StringField(a, "verdict");
  if (verdict.empty()) return absl::InternalError("harness answer has no verdict");
  v1::Verdict known;
  if (!v1::Verdict_Parse("VERDICT_" + verdict, &known)) {
    return absl::InternalError(absl::StrCat("harness answered an unknown verdict '", verdict, "'"));
  }
  m["verdict"] = "VERDICT_" + verdict;
  for (const char* k : {"correctness", "candidate", "eager", "compiled", "reference_kernel",
                        "op_signature"}) {
    if (a.contains(k) && a[k].is_object()) m[k] = a[k];
  }
  if (a.contains("kernels_launched") && a["kernels_launched"].is_array()) {
    m["kernels_launched"] = a["kernels_launched"];
  }
  if (a.contains("gpu_name") && a["gpu_name"].is_string()) m["gpu_name"] = a["gpu_name"];
  if (a.contains("log") && a["log"].is_string()) m["log"] = a["log"];
  if (a.contains("shape_set") && a["shape_set"].is_string()) m["shape_set"] = a["shape_set"];
  std::string reason = StringField(a, "reason");
  if (!reason.empty()) {
    if (!m.contains("correctness")) m["correctness"] = nlohmann::json::object();
    if (!m["correctness"].contains("reason") || m["correctness"]["reason"] == "") {
      m["correctness"]["reason"] = reason;
    }
  }
  v1::Measurement out;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(m.dump(), &out, opts);
  if (!st.ok()) {
    return absl::InternalError(absl::StrCat("harness answer does not fit Measurement: ",
                                            st.message().as_string()));
  }
  return out;
}

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
  if (!options_.sandbox.empty()) {
    request["sandbox"] = options_.sandbox;
    request["sandbox_hide"] = options_.sandbox_hide;
  }
  KAGENT_ASSIGN_OR_RETURN(auto dir, ScopedTempDir::Create("kagent-harness-"));
  std::string req_path = dir->path() + "/request.json";
  std::string out_path = dir->path() + "/result.json";
  {
    std::ofstream f(req_path);
    f << request.dump();
    if (!f) return absl::InternalError("cannot write the harness request file");
  }
  SubprocessOptions so;
  so.argv = {options_.python, "-m", "kagent_harness", mode, "--request", req_path, "--out", out_path};
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

std::string HarnessClient::WhyNotPrepare(const std::string& job_id) const {
  if (server_ == nullptr) return "no harness server (one-shot measurements)";
  if (options_.prepared_max <= 0) return "preparing is off (--prepared-max 0)";
  if (job_id.empty()) return "nothing to prepare (no job id)";
  return "";
}

namespace {

// Whether a prepare-style call answered; if not, `reason` says why.
bool PrepareAnswered(const absl::StatusOr<nlohmann::json>& answer, const char* op,
                     std::string* reason) {
  if (!answer.ok()) {
    *reason = absl::StrCat(op, " failed: ", answer.status().message());
    return false;
  }
  if (!BoolField(*answer, "ok")) {
    *reason = absl::StrCat(op, " refused: ", StringField(*answer, "error", answer->dump()));
    return false;
  }
  *reason = StringField(*answer, "reason");
  return true;
}

}  // namespace

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
  if (!PrepareAnswered(answer, "prepare", &p.reason)) return p;
  if (answer->contains("result") && (*answer)["result"].is_object()) {
    absl::StatusOr<v1::Measurement> m = MeasurementFromAnswer((*answer)["result"]);
    if (m.ok()) {
      p.final = *std::move(m);
      return p;
    }
    p.reason = absl::StrCat("prepare's result is unusable: ", m.status().message());
    return p;
  }
  p.handle = StringField(*answer, "prepared");
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
  if (PrepareAnswered(answer, "prepare_screen", &p.reason)) {
    p.handle = StringField(*answer, "prepared");
  }
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
  nlohmann::json req = {{"op", "release_job"}, {"job_id", job_id}};
  KAGENT_ASSIGN_OR_RETURN(nlohmann::json answer, server_->Call(req, absl::Seconds(30), nullptr));
  if (!BoolField(answer, "ok")) {
    return absl::InternalError(absl::StrCat("the harness refused release_job: ",
                                            StringField(answer, "error", answer.dump())));
  }
  return BoolField(answer, "released");
}

void HarnessClient::ReleasePrepared(const std::string& handle) {
  if (handle.empty() || server_ == nullptr || !server_->ready()) return;
  nlohmann::json req = {{"op", "release_prepared"}, {"prepared", handle}};
  absl::StatusOr<nlohmann::json> answer = server_->Call(req, absl::Seconds(30), nullptr);
  if (!answer.ok() || !BoolField(*answer, "ok")) {
    KLOG(WARNING) << "prepared candidate " << handle << " not released: "
                  << (answer.ok() ? StringField(*answer, "error", answer->dump())
                                  : std::string(answer.status().message()));
  }
}

absl::StatusOr<nlohmann::json> HarnessClient::GpuInfo(bool measure_ceilings) const {
  nlohmann::json req;
  req["measure_ceilings"] = measure_ceilings;
  return Run("gpuinfo", req, 300, nullptr);
}

}  // namespace kagent
