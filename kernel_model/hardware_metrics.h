// From per-kernel metrics to kagent.v1.HardwareMetrics: the duration-weighted aggregate,
// speed-of-light figures and the arithmetic-intensity roofline (roofline.h).
//
// Aggregation (see MetricAggregation in ncu_metrics.h): counters (".sum": bytes,
// instructions, gpu__time_duration.sum itself) are summed over kernels; percentages,
// ratios, rates and launch configuration are averaged weighted by each kernel's duration
// (a kernel that runs 9x longer counts 9x more). A metric missing from some kernels is
// aggregated over the kernels that report it; a metric no kernel reports is absent.
//
// Thread-safe (pure functions).
#ifndef KAGENT_KERNEL_MODEL_HARDWARE_METRICS_H_
#define KAGENT_KERNEL_MODEL_HARDWARE_METRICS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// The aggregate over `kernels`: kernel_name "aggregate", invocation = number of kernels,
// duration_ns = total, grid/block of the longest kernel. Kernels with no positive
// duration get equal weights when no kernel has one.
kagent::v1::KernelMetrics AggregateKernels(
    const std::vector<kagent::v1::KernelMetrics>& kernels);

// Builds the full message: kernels as given, their aggregate, compute/memory SOL from the
// aggregate, roofline efficiency = the larger, and the roofline when `signature` and
// `spec` allow it (each may be null). FAILED_PRECONDITION when `kernels` is empty.
absl::StatusOr<kagent::v1::HardwareMetrics> BuildHardwareMetrics(
    std::vector<kagent::v1::KernelMetrics> kernels, absl::string_view backend,
    const kagent::v1::OpSignature* signature, const kagent::v1::GpuSpec* spec);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_HARDWARE_METRICS_H_
