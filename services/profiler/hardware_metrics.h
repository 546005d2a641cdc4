// From per-kernel metrics to kagent.v1.HardwareMetrics: the duration-weighted aggregate,
// speed-of-light figures and the arithmetic-intensity roofline.
//
// Aggregation (see MetricAggregation in ncu_metrics.h): counters (".sum": bytes,
// instructions, gpu__time_duration.sum itself) are summed over kernels; percentages,
// ratios, rates and launch configuration are averaged weighted by each kernel's duration
// (a kernel that runs 9x longer counts 9x more). A metric missing from some kernels is
// aggregated over the kernels that report it; a metric no kernel reports is absent.
//
// Thread-safe (pure functions).
#ifndef KAGENT_SERVICES_PROFILER_HARDWARE_METRICS_H_
#define KAGENT_SERVICES_PROFILER_HARDWARE_METRICS_H_

#include <string>
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

// The peak-FLOP/s key of GpuSpec.peak_flops for a torch dtype name ("bfloat16" -> "bf16",
// "float32" -> "fp32", "float8_e4m3fn" -> "fp8", ...); empty when unknown.
std::string PeakFlopsKeyForDtype(absl::string_view torch_dtype);

// The dtype whose peak applies to `signature`: the dtype of the first floating-point
// input of its first op, mapped as above; "fp32" when none is recorded.
std::string DominantPeakKey(const kagent::v1::OpSignature& signature);

// Fills the arithmetic-intensity roofline fields of `metrics` (arithmetic_intensity,
// achieved_flops, achieved_bytes_per_second, roofline_bound_pct) when the signature has
// flops > 0 and min_bytes > 0, the spec has a DRAM peak and a FLOP peak for the
// signature's dtype, and the aggregate has a duration. The achieved figures use the
// signature's algorithmic work (flops and min_bytes over the total kernel time), so the
// bound compares useful work against min(peak FLOP/s, intensity x peak bandwidth).
// Returns false (fields untouched) when it cannot.
bool ApplyRoofline(const kagent::v1::OpSignature& signature, const kagent::v1::GpuSpec& spec,
                   kagent::v1::HardwareMetrics* metrics);

// The roofline figure to judge a kernel by: roofline_bound_pct (useful FLOPs and the op's
// minimum bytes over the time, against the roofline at that arithmetic intensity) when it
// is > 0, i.e. the op signature gave FLOPs and bytes; else roofline_efficiency_pct (the
// larger speed-of-light figure). SOL alone overstates how close a kernel is to its limit:
// memory SOL counts L1/L2 traffic, so a kernel that re-reads overlapping data through the
// caches shows ~99% while doing redundant work (a maxpool2d at 99.4% memory SOL was at 46%
// of its arithmetic-intensity roofline, and torch.compile ran it 1.8x faster).
double UsefulRooflinePct(const kagent::v1::HardwareMetrics& metrics);

// Builds the full message: kernels as given, their aggregate, compute/memory SOL from the
// aggregate, roofline efficiency = the larger, and the roofline when `signature` and
// `spec` allow it (each may be null). FAILED_PRECONDITION when `kernels` is empty.
absl::StatusOr<kagent::v1::HardwareMetrics> BuildHardwareMetrics(
    std::vector<kagent::v1::KernelMetrics> kernels, absl::string_view backend,
    const kagent::v1::OpSignature* signature, const kagent::v1::GpuSpec* spec);

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_HARDWARE_METRICS_H_
