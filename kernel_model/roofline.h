// The arithmetic-intensity roofline: which FLOP/s peak of a GpuSpec applies to an op
// signature, the roofline figures of a profile, and the one roofline figure the job loop
// and the reports judge a kernel by.
//
// One rule for the whole project: PeakFlops (DominantPeakKey's dtype, 3xTF32 for fp32
// matrix work) picks the peak, for the roofline below, the judge's achieved-FLOPs figure
// (ProfileView) and the report's chart.
//
// Thread-safe (pure functions).
#ifndef KAGENT_KERNEL_MODEL_ROOFLINE_H_
#define KAGENT_KERNEL_MODEL_ROOFLINE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// The peak-FLOP/s key of GpuSpec.peak_flops for a torch dtype name ("bfloat16" -> "bf16",
// "float32" -> "fp32", "float8_e4m3fn" -> "fp8", ...); empty when unknown.
std::string PeakFlopsKeyForDtype(absl::string_view torch_dtype);

// The dtype whose peak applies to `signature`: the first dtype that maps to a key as
// above, taking the ops in order and each op's inputs before its outputs; "fp32" when
// none is recorded.
std::string DominantPeakKey(const kagent::v1::OpSignature& signature);

// The FLOP/s ceiling of `signature` on `spec` (0 when the spec has no peak for its dtype):
// the peak of DominantPeakKey, except that an fp32 signature whose work is matrix products
// or convolutions (aten::mm, bmm, addmm, baddbmm, matmul, linear, convolution, ...) on a
// GPU with a TF32 peak gets the larger of the fp32 peak and a third of the TF32 one: 3xTF32
// (three TF32 products) keeps fp32's accuracy on the tensor cores, which the brain's GEMM
// templates use, so a kernel past the FMA peak is not "past the roofline". `label` (may be
// null) receives the key, "fp32 (3xTF32: tf32 / 3)" in that case.
double PeakFlops(const kagent::v1::OpSignature& signature, const kagent::v1::GpuSpec& spec,
                 std::string* label = nullptr);

// Fills the arithmetic-intensity roofline fields of `metrics` (arithmetic_intensity,
// achieved_flops, achieved_bytes_per_second, roofline_bound_pct) when the signature has
// flops > 0 and min_bytes > 0, the spec has a DRAM peak and a FLOP peak for the
// signature (PeakFlops), and the aggregate has a duration. The achieved figures use the
// signature's algorithmic work (flops and min_bytes over the total kernel time), so the
// bound compares useful work against min(peak FLOP/s, intensity x peak bandwidth).
// Returns false (fields untouched) when it cannot.
bool ApplyRoofline(const kagent::v1::OpSignature& signature, const kagent::v1::GpuSpec& spec,
                   kagent::v1::HardwareMetrics* metrics);

// roofline_bound_pct for a forward that takes `median_ms` as a whole (a measured median,
// not a profile's kernel time: the forward's launches and gaps count too, so the figure is
// at most what a profile of the same run would give); 0 when ApplyRoofline cannot.
double RooflinePctAt(const kagent::v1::OpSignature& signature, const kagent::v1::GpuSpec& spec,
                     double median_ms);

// The roofline figure to judge a kernel by: roofline_bound_pct (useful FLOPs and the op's
// minimum bytes over the time, against the roofline at that arithmetic intensity) when it
// is > 0, i.e. the op signature gave FLOPs and bytes; else roofline_efficiency_pct (the
// larger speed-of-light figure). SOL alone overstates how close a kernel is to its limit:
// memory SOL counts L1/L2 traffic, so a kernel that re-reads overlapping data through the
// caches shows ~99% while doing redundant work (a maxpool2d at 99.4% memory SOL was at 46%
// of its arithmetic-intensity roofline, and torch.compile ran it 1.8x faster).
double UsefulRooflinePct(const kagent::v1::HardwareMetrics& metrics);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_ROOFLINE_H_
