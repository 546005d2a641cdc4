#include "kernel_model/profile_view.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernel_model/metric_names.h"
#include "kernel_model/roofline.h"

namespace kagent {
namespace {

using kagent::v1::GpuSpec;
using kagent::v1::HardwareMetrics;
using kagent::v1::KernelMetrics;
using kagent::v1::OpSignature;
using kagent::v1::TimingStats;

int64_t Product(const google::protobuf::RepeatedField<int64_t>& dims) {
  if (dims.empty()) return 0;
  int64_t product = 1;
  for (int64_t d : dims) product *= std::max<int64_t>(d, 1);
  return product;
}

absl::Status CheckKernel(const KernelMetrics& kernel, absl::string_view where) {
  if (!std::isfinite(kernel.duration_ns()) || kernel.duration_ns() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, " (", kernel.kernel_name(),
                                                   "): duration_ns must be finite and >= 0, got ",
                                                   kernel.duration_ns()));
  }
  for (const auto& [name, value] : kernel.values()) {
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(where, " (", kernel.kernel_name(),
                                                     "): metric ", name, " is not finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ProfileView> ProfileView::Build(const HardwareMetrics& metrics,
                                               const GpuSpec& gpu,
                                               const OpSignature* op_signature,
                                               const TimingStats* timing) {
  if (metrics.kernels().empty()) {
    return absl::InvalidArgumentError(
        "metrics.kernels is empty: the profile must hold at least one kernel");
  }
  for (int i = 0; i < metrics.kernels_size(); ++i) {
    absl::Status status = CheckKernel(metrics.kernels(i), absl::StrCat("metrics.kernels[", i, "]"));
    if (!status.ok()) return status;
  }
  if (metrics.has_aggregate()) {
    absl::Status status = CheckKernel(metrics.aggregate(), "metrics.aggregate");
    if (!status.ok()) return status;
  }

  ProfileView view;
  view.gpu_ = gpu;

  // Group launches by kernel name, keeping first-seen order for ties.
  absl::flat_hash_map<std::string, int> index;
  std::vector<std::vector<const KernelMetrics*>> members;
  for (const KernelMetrics& kernel : metrics.kernels()) {
    std::string name = kernel.kernel_name().empty() ? "<unnamed>" : kernel.kernel_name();
    auto [it, inserted] = index.emplace(name, static_cast<int>(view.groups_.size()));
    if (inserted) {
      view.groups_.push_back(KernelGroup{name, 0, 0});
      members.emplace_back();
    }
    KernelGroup& group = view.groups_[it->second];
    group.launches += 1;
    group.total_ns += kernel.duration_ns();
    members[it->second].push_back(&kernel);
    view.total_duration_ns_ += kernel.duration_ns();
    view.launches_ += 1;
  }
  // Dominant: largest total time; ties by name so the choice is deterministic.
  int dominant = 0;
  for (int i = 1; i < static_cast<int>(view.groups_.size()); ++i) {
    const KernelGroup& a = view.groups_[i];
    const KernelGroup& b = view.groups_[dominant];
    if (a.total_ns > b.total_ns || (a.total_ns == b.total_ns && a.name < b.name)) dominant = i;
  }
  const KernelGroup dominant_group = view.groups_[dominant];
  const std::vector<const KernelMetrics*> launches = members[dominant];
  view.dominant_kernel_ = dominant_group.name;
  view.dominant_share_ =
      view.total_duration_ns_ > 0 ? dominant_group.total_ns / view.total_duration_ns_
                                  : 1.0 / static_cast<double>(view.groups_.size());
  view.dominant_mean_duration_ns_ = dominant_group.total_ns / dominant_group.launches;
  std::stable_sort(view.groups_.begin(), view.groups_.end(),
                   [](const KernelGroup& a, const KernelGroup& b) {
                     return a.total_ns > b.total_ns;
                   });

  // 1. Duration-weighted mean of the dominant kernel's values over its launches. A
  //    metric missing in some launches is averaged over the launches that have it.
  {
    std::map<std::string, std::pair<double, double>> sums;  // name -> (sum w*v, sum w)
    for (const KernelMetrics* launch : launches) {
      double weight = dominant_group.total_ns > 0 ? launch->duration_ns() : 1.0;
      if (weight <= 0) weight = 1e-9;
      for (const auto& [name, value] : launch->values()) {
        auto& [wv, w] = sums[name];
        wv += weight * value;
        w += weight;
      }
    }
    for (const auto& [name, sum] : sums) view.values_[name] = sum.first / sum.second;
  }

  // 2. Single-kernel profiles: the aggregate and the top-level SOL fields describe the
  //    same kernel, so they fill gaps.
  if (view.groups_.size() == 1) {
    if (metrics.has_aggregate()) {
      for (const auto& [name, value] : metrics.aggregate().values()) {
        view.values_.emplace(name, value);
      }
    }
    if (metrics.compute_sol_pct() > 0) view.values_.emplace(metric::kComputeSol, metrics.compute_sol_pct());
    if (metrics.memory_sol_pct() > 0) view.values_.emplace(metric::kMemorySol, metrics.memory_sol_pct());
  }

  // 3. Launch configuration and duration from the structured fields.
  const KernelMetrics* longest = launches.front();
  for (const KernelMetrics* launch : launches) {
    if (launch->duration_ns() > longest->duration_ns()) longest = launch;
  }
  if (view.dominant_mean_duration_ns_ > 0) {
    view.values_.emplace(metric::kDuration, view.dominant_mean_duration_ns_);
  }
  if (int64_t ctas = Product(longest->grid()); ctas > 0) {
    view.values_.emplace(metric::kGridSize, static_cast<double>(ctas));
  }
  if (int64_t threads = Product(longest->block()); threads > 0) {
    view.values_.emplace(metric::kBlockSize, static_cast<double>(threads));
  }

  // 4. Derived values.
  view.values_[metric::kLaunches] = view.launches_;
  view.values_[metric::kDistinctKernels] = static_cast<double>(view.groups_.size());
  view.values_[metric::kTotalKernelTime] = view.total_duration_ns_;
  view.values_[metric::kMeanLaunchDuration] = view.total_duration_ns_ / view.launches_;
  view.values_[metric::kDominantShare] = 100.0 * view.dominant_share_;
  if (auto ctas = view.Get(metric::kGridSize); ctas && gpu.sm_count() > 0) {
    view.values_[metric::kGridFill] = 100.0 * *ctas / gpu.sm_count();
  }
  if (timing != nullptr && timing->median_ms() > 0 && view.total_duration_ns_ > 0) {
    view.values_[metric::kGpuBusy] = 100.0 * view.total_duration_ns_ / (timing->median_ms() * 1e6);
  }
  if (op_signature != nullptr) {
    auto read = view.Get(metric::kDramBytesRead);
    auto write = view.Get(metric::kDramBytesWrite);
    // Bytes over the minimum compares the whole op's minimum with the dominant kernel's
    // traffic, so it is only meaningful for a single-kernel profile.
    if (op_signature->min_bytes() > 0 && read && write && view.groups_.size() == 1) {
      view.values_[metric::kBytesOverMin] = (*read + *write) / op_signature->min_bytes();
    }
    const double seconds = view.total_duration_ns_ * 1e-9;
    if (seconds > 0 && op_signature->min_bytes() > 0 && gpu.peak_dram_bytes_per_second() > 0) {
      view.values_[metric::kAchievedBandwidthPct] =
          100.0 * op_signature->min_bytes() / seconds / gpu.peak_dram_bytes_per_second();
    }
    if (seconds > 0 && op_signature->flops() > 0) {
      // The peak the roofline uses too (roofline.h).
      if (const double peak = PeakFlops(*op_signature, gpu); peak > 0) {
        view.values_[metric::kAchievedFlopsPct] = 100.0 * op_signature->flops() / seconds / peak;
      }
    }
  }
  // Theoretical occupancy from the limiters when ncu did not report it.
  if (!view.Has(metric::kTheoreticalOccupancy)) {
    auto block = view.Get(metric::kBlockSize);
    std::optional<double> min_blocks;
    for (const char* name : {metric::kLimitRegisters, metric::kLimitSharedMem,
                             metric::kLimitBlocks, metric::kLimitWarps}) {
      if (auto v = view.Get(name); v && (!min_blocks || *v < *min_blocks)) min_blocks = v;
    }
    if (block && min_blocks && gpu.max_threads_per_sm() > 0) {
      double warps_per_block = std::ceil(*block / 32.0);
      double max_warps = gpu.max_threads_per_sm() / 32.0;
      view.values_[metric::kDerivedTheoreticalOccupancy] =
          std::min(100.0, 100.0 * *min_blocks * warps_per_block / max_warps);
    }
  }
  return view;
}

std::optional<double> ProfileView::Get(absl::string_view metric) const {
  auto it = values_.find(metric);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

}  // namespace kagent
