#include "services/benchmark/harness_client.h"

#include <fstream>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {
namespace {

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

}  // namespace

absl::StatusOr<nlohmann::json> HarnessRequestFor(const v1::MeasureRequest& r) {
  nlohmann::json j;
  j["problem_source"] = r.problem().source();
  if (!r.kernel().source().empty()) {
    j["kernel_source"] = r.kernel().source();
    j["language"] = r.kernel().language() == v1::KERNEL_LANGUAGE_CUDA ? "cuda" : "triton";
  }
  if (!r.reference_kernel().source().empty()) {
    j["reference_kernel_source"] = r.reference_kernel().source();
    j["reference_kernel_language"] =
        r.reference_kernel().language() == v1::KERNEL_LANGUAGE_CUDA ? "cuda" : "triton";
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

absl::StatusOr<v1::Measurement> MeasurementFromHarnessJson(const nlohmann::json& a) {
  if (!a.is_object()) return absl::InternalError("harness answer is not a JSON object");
  nlohmann::json m = nlohmann::json::object();
  std::string verdict = a.value("verdict", "");
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
  std::string reason = a.value("reason", "");
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

absl::StatusOr<nlohmann::json> HarnessClient::Run(const std::string& mode, nlohmann::json request,
                                                  double timeout_seconds,
                                                  const CancelToken* cancel) const {
  if (timeout_seconds <= 0) timeout_seconds = options_.default_timeout_seconds;
  request["mode"] = mode;
  request["device"] = options_.device;
  request["timeout_s"] = timeout_seconds;
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
  if (!options_.harness_dir.empty()) so.env["PYTHONPATH"] = options_.harness_dir;
  so.env["PYTHONUNBUFFERED"] = "1";
  if (options_.device == "cpu") so.env["TRITON_INTERPRET"] = "1";
  if (!options_.cuda_visible_devices.empty()) {
    so.env["CUDA_VISIBLE_DEVICES"] = options_.cuda_visible_devices;
  }
  if (!options_.cupti_lib.empty()) so.env["KAGENT_CUPTI_LIB"] = options_.cupti_lib;
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

v1::Measurement HarnessClient::Measure(const v1::MeasureRequest& request,
                                       const CancelToken* cancel) const {
  v1::Measurement m;
  auto infra = [&](const absl::Status& s) {
    m.Clear();
    m.set_verdict(s.code() == absl::StatusCode::kDeadlineExceeded ? v1::VERDICT_TIMEOUT
                                                                   : v1::VERDICT_INFRA_ERROR);
    m.mutable_correctness()->set_reason(std::string(s.message()));
    return m;
  };
  absl::StatusOr<nlohmann::json> req = HarnessRequestFor(request);
  if (!req.ok()) return infra(req.status());
  absl::StatusOr<nlohmann::json> answer = Run("measure", *req, request.timeout_seconds(), cancel);
  if (!answer.ok()) return infra(answer.status());
  absl::StatusOr<v1::Measurement> parsed = MeasurementFromHarnessJson(*answer);
  if (!parsed.ok()) return infra(parsed.status());
  return *parsed;
}

absl::StatusOr<nlohmann::json> HarnessClient::GpuInfo(bool measure_ceilings) const {
  nlohmann::json req;
  req["measure_ceilings"] = measure_ceilings;
  return Run("gpuinfo", req, 300, nullptr);
}

}  // namespace kagent
