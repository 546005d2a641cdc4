#include "kernel_model/roofline.h"

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/ascii.h"

namespace kagent {

using kagent::v1::GpuSpec;
using kagent::v1::HardwareMetrics;
using kagent::v1::OpSignature;

std::string PeakFlopsKeyForDtype(absl::string_view torch_dtype) {
  std::string dtype = absl::AsciiStrToLower(torch_dtype);
  if (dtype.rfind("torch.", 0) == 0) dtype = dtype.substr(6);
  if (dtype == "bfloat16" || dtype == "bf16") return "bf16";
  if (dtype == "float16" || dtype == "half" || dtype == "fp16") return "fp16";
  if (dtype == "float32" || dtype == "float" || dtype == "fp32") return "fp32";
  if (dtype == "float64" || dtype == "double" || dtype == "fp64") return "fp64";
  if (dtype.rfind("float8", 0) == 0 || dtype == "fp8") return "fp8";
  if (dtype == "tf32") return "tf32";
  return "";
}

std::string DominantPeakKey(const OpSignature& signature) {
  for (const auto& op : signature.ops()) {
    for (const auto& input : op.inputs()) {
      std::string key = PeakFlopsKeyForDtype(input.dtype());
      if (!key.empty()) return key;
    }
    for (const auto& output : op.outputs()) {
      std::string key = PeakFlopsKeyForDtype(output.dtype());
      if (!key.empty()) return key;
    }
  }
  return "fp32";
}

namespace {

// Whether the signature's work is matrix products or convolutions: the ops the tensor
// cores take.
bool MatrixWork(const OpSignature& signature) {
  static const auto* kOps = new std::set<std::string>{
      "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm",
      "aten::matmul", "aten::linear", "aten::einsum", "aten::convolution",
      "aten::_convolution", "aten::cudnn_convolution", "aten::conv1d", "aten::conv2d",
      "aten::conv3d", "aten::conv_transpose1d", "aten::conv_transpose2d",
      "aten::conv_transpose3d"};
  for (const auto& op : signature.ops()) {
    if (kOps->count(op.op())) return true;
  }
  return false;
}

}  // namespace

double PeakFlops(const OpSignature& signature, const GpuSpec& spec, std::string* label) {
  const std::string key = DominantPeakKey(signature);
  if (label != nullptr) *label = key;
  auto peak = spec.peak_flops().find(key);
  if (peak == spec.peak_flops().end() || peak->second <= 0) return 0;
  double flops = peak->second;
  auto tf32 = spec.peak_flops().find("tf32");
  if (key == "fp32" && tf32 != spec.peak_flops().end() && tf32->second / 3 > flops &&
      MatrixWork(signature)) {
    flops = tf32->second / 3;
    if (label != nullptr) *label = "fp32 (3xTF32: tf32 / 3)";
  }
  return flops;
}

bool ApplyRoofline(const OpSignature& signature, const GpuSpec& spec,
                   HardwareMetrics* metrics) {
  const double seconds = metrics->aggregate().duration_ns() * 1e-9;
  if (signature.flops() <= 0 || signature.min_bytes() <= 0 || seconds <= 0 ||
      spec.peak_dram_bytes_per_second() <= 0) {
    return false;
  }
  const double peak = PeakFlops(signature, spec);
  if (peak <= 0) return false;
  const double intensity = signature.flops() / signature.min_bytes();
  const double attainable = std::min(peak, intensity * spec.peak_dram_bytes_per_second());
  const double achieved_flops = signature.flops() / seconds;
  metrics->set_arithmetic_intensity(intensity);
  metrics->set_achieved_flops(achieved_flops);
  metrics->set_achieved_bytes_per_second(signature.min_bytes() / seconds);
  metrics->set_roofline_bound_pct(100.0 * achieved_flops / attainable);
  return true;
}

double RooflinePctAt(const OpSignature& signature, const GpuSpec& spec, double median_ms) {
  if (median_ms <= 0) return 0;
  HardwareMetrics at;
  at.mutable_aggregate()->set_duration_ns(median_ms * 1e6);
  return ApplyRoofline(signature, spec, &at) ? at.roofline_bound_pct() : 0;
}

double UsefulRooflinePct(const HardwareMetrics& metrics) {
  return metrics.roofline_bound_pct() > 0 ? metrics.roofline_bound_pct()
                                          : metrics.roofline_efficiency_pct();
}

}  // namespace kagent
