#include "services/profiler/harness_request.h"

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace kagent {
namespace {

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

}  // namespace

std::string BuildHarnessProfileRequest(const kagent::v1::ProfileRequest& request,
                                       const HarnessProfileParams& params) {
  nlohmann::json json;
  json["mode"] = "profile";
  json["problem_name"] = request.problem().name();
  json["problem_source"] = request.problem().source();
  json["kernel_source"] = request.kernel().source();
  json["language"] =
      request.kernel().language() == kagent::v1::KERNEL_LANGUAGE_CUDA ? "cuda" : "triton";
  if (request.problem().has_atol()) json["atol"] = request.problem().atol();
  if (request.problem().has_rtol()) json["rtol"] = request.problem().rtol();
  json["profile_iters"] = params.profile_iters;
  json["profile_warmup_iters"] = params.profile_warmup_iters;
  json["timeout_s"] = absl::ToDoubleSeconds(params.timeout);
  json["network_isolation"] = params.network_isolation;
  if (!params.sandbox.empty()) {
    json["sandbox"] = params.sandbox;
    json["sandbox_hide"] = params.sandbox_hide;
  }
  if (!params.cuda_visible_devices.empty()) {
    json["cuda_visible_devices"] = params.cuda_visible_devices;
  }
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
  if (auto it = json.find("op_signature"); it != json.end() && it->is_object()) {
    result.has_op_signature = true;
    result.op_signature = SignatureFromJson(*it);
  }
  return result;
}

kagent::v1::OpSignature OpSignatureFromJson(absl::string_view text) {
  nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (json.is_discarded()) return {};
  return SignatureFromJson(json);
}

}  // namespace kagent
