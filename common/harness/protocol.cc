#include "common/harness/protocol.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

void FillTensor(const nlohmann::json& json, kagent::v1::TensorInfo* tensor) {
  if (!json.is_object()) return;
  if (auto it = json.find("shape"); it != json.end() && it->is_array()) {
    for (const auto& d : *it) {
      if (d.is_number_integer()) tensor->add_shape(d.get<int64_t>());
    }
  }
  if (auto it = json.find("strides"); it != json.end() && it->is_array()) {
    for (const auto& d : *it) {
      if (d.is_number_integer()) tensor->add_strides(d.get<int64_t>());
    }
  }
  if (auto it = json.find("dtype"); it != json.end() && it->is_string()) {
    tensor->set_dtype(it->get<std::string>());
  }
  if (auto it = json.find("id"); it != json.end() && it->is_number_integer()) {
    tensor->set_id(it->get<int64_t>());
  }
}

kagent::v1::OpSignature SignatureFromJson(const nlohmann::json& json) {
  kagent::v1::OpSignature signature;
  if (!json.is_object()) return signature;
  if (auto it = json.find("flops"); it != json.end() && it->is_number()) {
    signature.set_flops(it->get<double>());
  }
  if (auto it = json.find("min_bytes"); it != json.end() && it->is_number()) {
    signature.set_min_bytes(it->get<double>());
  }
  if (auto it = json.find("op_class"); it != json.end() && it->is_string()) {
    signature.set_op_class(it->get<std::string>());
  }
  if (auto it = json.find("ops"); it != json.end() && it->is_array()) {
    for (const auto& op_json : *it) {
      if (!op_json.is_object()) continue;
      kagent::v1::OpRecord* op = signature.add_ops();
      op->set_op(op_json.value("op", std::string()));
      if (auto in = op_json.find("inputs"); in != op_json.end() && in->is_array()) {
        for (const auto& t : *in) FillTensor(t, op->add_inputs());
      }
      if (auto out = op_json.find("outputs"); out != op_json.end() && out->is_array()) {
        for (const auto& t : *out) FillTensor(t, op->add_outputs());
      }
      // The op's numeric arguments by name (OpRecord.scalars), e.g. aten::elu's alpha.
      if (auto sc = op_json.find("scalars"); sc != op_json.end() && sc->is_object()) {
        for (const auto& [name, value] : sc->items()) {
          if (value.is_number()) (*op->mutable_scalars())[name] = value.get<double>();
        }
      }
      // Its string arguments (OpRecord.strings), e.g. aten::gelu's approximate.
      if (auto st = op_json.find("strings"); st != op_json.end() && st->is_object()) {
        for (const auto& [name, value] : st->items()) {
          if (value.is_string()) (*op->mutable_strings())[name] = value.get<std::string>();
        }
      }
    }
  }
  return signature;
}

// The longest prefix of `s` of at most `n` bytes that ends on a UTF-8 character boundary
// (a JSON string must stay valid UTF-8).
std::string Utf8Prefix(const std::string& s, int n) {
  size_t end = std::min(s.size(), static_cast<size_t>(n));
  while (end > 0 && end < s.size() && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) {
    --end;
  }
  return s.substr(0, end);
}

}  // namespace

std::vector<std::string> HarnessArgv(const std::string& python, const std::string& mode,
                                     std::vector<std::string> args) {
  std::vector<std::string> argv = {python, "-m", "kagent_harness", mode};
  for (std::string& a : args) argv.push_back(std::move(a));
  return argv;
}

std::map<std::string, std::string> HarnessEnvironment(const std::string& harness_dir,
                                                      const std::string& device,
                                                      const std::string& cuda_visible_devices,
                                                      const std::string& cupti_lib) {
  std::map<std::string, std::string> env;
  // The harness's folder first, then the worker's own PYTHONPATH (packages installed
  // there, such as the CUTLASS headers' nvidia-cutlass, must reach the candidates).
  if (!harness_dir.empty()) {
    const char* worker = std::getenv("PYTHONPATH");
    env["PYTHONPATH"] = worker != nullptr && *worker != '\0'
                            ? absl::StrCat(harness_dir, ":", worker)
                            : harness_dir;
  }
  env["PYTHONUNBUFFERED"] = "1";
  if (device == "cpu") env["TRITON_INTERPRET"] = "1";
  if (!cuda_visible_devices.empty()) env["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices;
  if (!cupti_lib.empty()) env["KAGENT_CUPTI_LIB"] = cupti_lib;
  return env;
}

void SetSandboxFields(const std::string& mode, const std::vector<std::string>& hide,
                      nlohmann::json* request) {
  if (mode.empty()) return;
  (*request)["sandbox"] = mode;
  (*request)["sandbox_hide"] = hide;
}

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
  if (r.timing_budget_ms() > 0) j["timing_budget_ms"] = r.timing_budget_ms();
  if (r.timing_budget_ms() < 0) j["timing_budget_ms"] = 0;  // the harness's "no budget"
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
  if (auto it = a.find("phases_ms"); it != a.end() && it->is_object()) {
    for (const auto& [name, ms] : it->items()) {
      if (ms.is_number()) (*resp.mutable_phases_ms())[name] = ms.get<double>();
    }
  }
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
  if (a.contains("harness") && a["harness"].is_object()) {
    const nlohmann::json& h = a["harness"];
    if (h.contains("phases_ms") && h["phases_ms"].is_object()) {
      nlohmann::json phases = nlohmann::json::object();
      for (const auto& [name, ms] : h["phases_ms"].items()) {
        if (ms.is_number()) phases[name] = ms;
      }
      m["phases_ms"] = std::move(phases);
    }
    for (const char* k : {"checks", "warnings"}) {
      if (!h.contains(k) || !h[k].is_array()) continue;
      nlohmann::json notes = nlohmann::json::array();
      for (const auto& note : h[k]) {
        if (!note.is_string()) continue;
        if (notes.size() == static_cast<size_t>(kMaxHarnessNotes)) break;
        std::string text = note.get<std::string>();
        if (text.size() > static_cast<size_t>(kMaxHarnessNoteChars)) {
          text = Utf8Prefix(text, kMaxHarnessNoteChars) + "...";
        }
        notes.push_back(std::move(text));
      }
      m[k] = std::move(notes);
    }
  }
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

absl::StatusOr<v1::Measurement> MeasurementFromAnswer(const nlohmann::json& answer) {
  if (answer.is_object() && !answer.contains("verdict") && answer.contains("error")) {
    return absl::InternalError(absl::StrCat("the harness refused the request: ",
                                            StringField(answer, "error", answer["error"].dump())));
  }
  return MeasurementFromHarnessJson(answer);
}

std::string LargestPhases(const google::protobuf::Map<std::string, double>& phases_ms, int n) {
  std::vector<std::pair<double, std::string>> phases;
  for (const auto& [name, ms] : phases_ms) phases.emplace_back(ms, name);
  std::sort(phases.begin(), phases.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string out;
  for (int i = 0; i < n && i < static_cast<int>(phases.size()); ++i) {
    absl::StrAppend(&out, i > 0 ? "; " : "", phases[i].second, " ",
                    absl::StrFormat("%.0f", phases[i].first), " ms");
  }
  return out;
}

bool ParsePrepareAnswer(const absl::StatusOr<nlohmann::json>& answer, const char* op,
                        PrepareAnswer* out) {
  if (!answer.ok()) {
    out->reason = absl::StrCat(op, " failed: ", answer.status().message());
    return false;
  }
  if (!BoolField(*answer, "ok")) {
    out->reason = absl::StrCat(op, " refused: ", StringField(*answer, "error", answer->dump()));
    return false;
  }
  out->reason = StringField(*answer, "reason");
  if (answer->contains("result") && (*answer)["result"].is_object()) {
    out->final = MeasurementFromAnswer((*answer)["result"]);
  }
  out->handle = StringField(*answer, "prepared");
  return true;
}

nlohmann::json ReleaseJobRequest(const std::string& job_id) {
  return {{"op", "release_job"}, {"job_id", job_id}};
}

absl::StatusOr<bool> ReleaseJobAnswer(const nlohmann::json& answer) {
  if (!BoolField(answer, "ok")) {
    return absl::InternalError(absl::StrCat("the harness refused release_job: ",
                                            StringField(answer, "error", answer.dump())));
  }
  return BoolField(answer, "released");
}

nlohmann::json ReleasePreparedRequest(const std::string& handle) {
  return {{"op", "release_prepared"}, {"prepared", handle}};
}

absl::Status ReleasePreparedAnswer(const absl::StatusOr<nlohmann::json>& answer) {
  if (!answer.ok()) return answer.status();
  if (!BoolField(*answer, "ok")) {
    return absl::InternalError(StringField(*answer, "error", answer->dump()));
  }
  return absl::OkStatus();
}

nlohmann::json GpuInfoRequest(bool measure_ceilings) {
  nlohmann::json req;
  req["measure_ceilings"] = measure_ceilings;
  return req;
}

std::string BuildHarnessProfileRequest(const kagent::v1::ProfileRequest& request,
                                       const HarnessProfileParams& params) {
  nlohmann::json json;
  json["mode"] = "profile";
  json["problem_name"] = request.problem().name();
  json["problem_source"] = request.problem().source();
  json["kernel_source"] = request.kernel().source();
  json["language"] = LanguageName(request.kernel().language());
  if (request.problem().has_atol()) json["atol"] = request.problem().atol();
  if (request.problem().has_rtol()) json["rtol"] = request.problem().rtol();
  json["profile_iters"] = params.profile_iters;
  json["profile_warmup_iters"] = params.profile_warmup_iters;
  json["timeout_s"] = absl::ToDoubleSeconds(params.timeout);
  json["network_isolation"] = params.network_isolation;
  SetSandboxFields(params.sandbox, params.sandbox_hide, &json);
  if (!params.cuda_visible_devices.empty()) {
    json["cuda_visible_devices"] = params.cuda_visible_devices;
  }
  if (!params.cupti_counters.empty()) json["cupti_counters"] = params.cupti_counters;
  if (!request.task_id().empty()) json["task_id"] = request.task_id();
  if (!request.job_id().empty()) json["job_id"] = request.job_id();
  // A signature the caller already has is not recorded again (the profiler uses the
  // request's for the roofline).
  if (request.op_signature().ops_size() > 0) json["signature"] = false;
  return json.dump();
}

absl::StatusOr<HarnessProfileResult> ParseHarnessProfileResult(absl::string_view text) {
  nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError("the harness result is not a JSON object");
  }
  HarnessProfileResult result;
  result.ok = json.value("ok", false);
  if (auto it = json.find("verdict"); it != json.end() && it->is_string()) {
    result.verdict = it->get<std::string>();
  }
  if (auto it = json.find("reason"); it != json.end() && it->is_string()) {
    result.reason = it->get<std::string>();
  }
  if (auto it = json.find("log"); it != json.end() && it->is_string()) {
    result.log = it->get<std::string>();
  }
  if (auto it = json.find("kernels_launched"); it != json.end() && it->is_array()) {
    for (const auto& name : *it) {
      if (name.is_string()) result.kernels_launched.push_back(name.get<std::string>());
    }
  }
  if (auto it = json.find("cupti_records"); it != json.end() && it->is_array()) {
    for (const auto& record : *it) {
      if (record.is_object()) result.cupti_trace_jsonl += record.dump() + "\n";
    }
  }
  if (auto it = json.find("cupti_counters"); it != json.end() && it->is_object()) {
    result.cupti_counters_ran = true;
    result.cupti_counters_ok = it->value("ok", false);
    if (auto passes = it->find("passes"); passes != it->end() && passes->is_number_integer()) {
      result.cupti_counter_passes = passes->get<int>();
    }
    if (auto error = it->find("error"); error != it->end() && error->is_string()) {
      result.cupti_counters_error = error->get<std::string>();
    }
  }
  if (auto it = json.find("op_signature"); it != json.end() && it->is_object()) {
    result.has_op_signature = true;
    result.op_signature = SignatureFromJson(*it);
  }
  if (auto it = json.find("phases_ms"); it != json.end() && it->is_object()) {
    for (const auto& [name, ms] : it->items()) {
      if (ms.is_number()) result.phases_ms[name] = ms.get<double>();
    }
  }
  return result;
}

kagent::v1::OpSignature OpSignatureFromJson(absl::string_view text) {
  nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (json.is_discarded()) return {};
  return SignatureFromJson(json);
}

}  // namespace kagent
