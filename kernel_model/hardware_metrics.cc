#include "kernel_model/hardware_metrics.h"

#include <algorithm>
#include <map>

#include "absl/status/status.h"
#include "kernel_model/metric_names.h"
#include "kernel_model/ncu_metrics.h"
#include "kernel_model/roofline.h"

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
  auto compute = values.find(metric::kComputeSol);
  auto memory = values.find(metric::kMemorySol);
  if (compute != values.end()) metrics.set_compute_sol_pct(compute->second);
  if (memory != values.end()) metrics.set_memory_sol_pct(memory->second);
  metrics.set_roofline_efficiency_pct(
      std::max(metrics.compute_sol_pct(), metrics.memory_sol_pct()));
  if (signature != nullptr && spec != nullptr) ApplyRoofline(*signature, *spec, &metrics);
  return metrics;
}

}  // namespace kagent
