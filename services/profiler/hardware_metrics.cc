#include "services/profiler/hardware_metrics.h"

#include <algorithm>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "services/profiler/ncu_metrics.h"

namespace kagent {

using kagent::v1::GpuSpec;
using kagent::v1::HardwareMetrics;
using kagent::v1::KernelMetrics;
using kagent::v1::OpSignature;

KernelMetrics AggregateKernels(const std::vector<KernelMetrics>& kernels) {
  KernelMetrics aggregate;
  aggregate.set_kernel_name("aggregate");
  aggregate.set_invocation(static_cast<int64_t>(kernels.size()));
  double total_duration = 0;
  const KernelMetrics* longest = nullptr;
  for (const KernelMetrics& kernel : kernels) {
    total_duration += std::max(0.0, kernel.duration_ns());
    if (longest == nullptr || kernel.duration_ns() > longest->duration_ns()) longest = &kernel;
  }
  aggregate.set_duration_ns(total_duration);
  if (longest != nullptr) {
    *aggregate.mutable_grid() = longest->grid();
    *aggregate.mutable_block() = longest->block();
  }
  const bool equal_weights = total_duration <= 0;

  struct Accumulator {
    double sum = 0;           // kSum: the sum; kDurationWeightedMean: sum of w * v
    double weight = 0;        // sum of w
  };
  std::map<std::string, Accumulator> accumulators;
  for (const KernelMetrics& kernel : kernels) {
    const double weight = equal_weights ? 1.0 : std::max(0.0, kernel.duration_ns());
    for (const auto& [name, value] : kernel.values()) {
      Accumulator& acc = accumulators[name];
      if (AggregationFor(name) == MetricAggregation::kSum) {
        acc.sum += value;
        acc.weight += 1;
      } else {
        acc.sum += weight * value;
        acc.weight += weight;
      }
    }
  }
  auto& values = *aggregate.mutable_values();
  for (const auto& [name, acc] : accumulators) {
    if (AggregationFor(name) == MetricAggregation::kSum) {
      values[name] = acc.sum;
    } else if (acc.weight > 0) {
      values[name] = acc.sum / acc.weight;
    }
  }
  return aggregate;
}

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

bool ApplyRoofline(const OpSignature& signature, const GpuSpec& spec,
                   HardwareMetrics* metrics) {
  const double seconds = metrics->aggregate().duration_ns() * 1e-9;
  if (signature.flops() <= 0 || signature.min_bytes() <= 0 || seconds <= 0 ||
      spec.peak_dram_bytes_per_second() <= 0) {
    return false;
  }
  auto peak = spec.peak_flops().find(DominantPeakKey(signature));
  if (peak == spec.peak_flops().end() || peak->second <= 0) return false;
  const double intensity = signature.flops() / signature.min_bytes();
  const double attainable =
      std::min(peak->second, intensity * spec.peak_dram_bytes_per_second());
  const double achieved_flops = signature.flops() / seconds;
  metrics->set_arithmetic_intensity(intensity);
  metrics->set_achieved_flops(achieved_flops);
  metrics->set_achieved_bytes_per_second(signature.min_bytes() / seconds);
  metrics->set_roofline_bound_pct(100.0 * achieved_flops / attainable);
  return true;
}

double UsefulRooflinePct(const HardwareMetrics& metrics) {
  return metrics.roofline_bound_pct() > 0 ? metrics.roofline_bound_pct()
                                          : metrics.roofline_efficiency_pct();
}

absl::StatusOr<HardwareMetrics> BuildHardwareMetrics(std::vector<KernelMetrics> kernels,
                                                     absl::string_view backend,
                                                     const OpSignature* signature,
                                                     const GpuSpec* spec) {
  if (kernels.empty()) {
    return absl::FailedPreconditionError(
        "no kernels were captured: the candidate launched no GPU kernel inside the profiled "
        "range (kagent_candidate)");
  }
  HardwareMetrics metrics;
  metrics.set_backend(std::string(backend));
  *metrics.mutable_aggregate() = AggregateKernels(kernels);
  for (KernelMetrics& kernel : kernels) *metrics.add_kernels() = std::move(kernel);
  const auto& values = metrics.aggregate().values();
  auto compute = values.find(kNcuComputeSol);
  auto memory = values.find(kNcuMemorySol);
  if (compute != values.end()) metrics.set_compute_sol_pct(compute->second);
  if (memory != values.end()) metrics.set_memory_sol_pct(memory->second);
  metrics.set_roofline_efficiency_pct(
      std::max(metrics.compute_sol_pct(), metrics.memory_sol_pct()));
  if (signature != nullptr && spec != nullptr) ApplyRoofline(*signature, *spec, &metrics);
  return metrics;
}

}  // namespace kagent
