// ProfileView: the flat, read-only view of a profile that the judge's rules and the
// analyzer's preconditions read.
//
// A profile (kagent.v1.HardwareMetrics) may hold several kernels and several launches of
// each. The view groups launches by kernel name, picks the dominant kernel (largest total
// duration; ties broken by name) and exposes that kernel's metrics as one map:
//
//   1. the dominant kernel's values, a duration-weighted mean over its launches;
//   2. when the profile holds one kernel name only, metrics missing there are taken from
//      HardwareMetrics.aggregate, then from the top-level SOL fields (when > 0);
//   3. gpu__time_duration.sum, launch__grid_size and launch__block_size are filled from
//      KernelMetrics.duration_ns / grid / block when ncu did not report them;
//   4. derived values under "kagent__" names (see metric_names.h and docs/judge.md).
//
// A metric absent from the map is unknown: Get() returns nullopt and callers must not
// cite it. Immutable after Build(); safe to share between threads.
#ifndef KAGENT_KERNEL_MODEL_PROFILE_VIEW_H_
#define KAGENT_KERNEL_MODEL_PROFILE_VIEW_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// One kernel name in the profile with its launches.
struct KernelGroup {
  std::string name;
  int launches = 0;
  double total_ns = 0;
};

class ProfileView {
 public:
  // Builds the view. `op_signature` and `timing` may be null. Returns INVALID_ARGUMENT
  // when the profile has no kernels, a duration is negative or not finite, or a metric
  // value is not finite (the message names the kernel and the metric).
  static absl::StatusOr<ProfileView> Build(const kagent::v1::HardwareMetrics& metrics,
                                           const kagent::v1::GpuSpec& gpu,
                                           const kagent::v1::OpSignature* op_signature,
                                           const kagent::v1::TimingStats* timing);

  // The value of `metric` for the diagnosed kernel, or nullopt when unknown.
  std::optional<double> Get(absl::string_view metric) const;
  bool Has(absl::string_view metric) const { return Get(metric).has_value(); }

  // Every known value (ncu metrics of the diagnosed kernel plus derived values).
  const std::map<std::string, double, std::less<>>& values() const { return values_; }

  const std::string& dominant_kernel() const { return dominant_kernel_; }
  // Fraction (0..1] of total kernel time spent in the dominant kernel.
  double dominant_share() const { return dominant_share_; }
  // Kernel names by total duration, largest first.
  const std::vector<KernelGroup>& groups() const { return groups_; }
  int launches() const { return launches_; }
  double total_duration_ns() const { return total_duration_ns_; }
  // Mean duration of one launch of the dominant kernel.
  double dominant_mean_duration_ns() const { return dominant_mean_duration_ns_; }
  const kagent::v1::GpuSpec& gpu() const { return gpu_; }

 private:
  ProfileView() = default;

  std::map<std::string, double, std::less<>> values_;
  std::string dominant_kernel_;
  double dominant_share_ = 0;
  std::vector<KernelGroup> groups_;
  int launches_ = 0;
  double total_duration_ns_ = 0;
  double dominant_mean_duration_ns_ = 0;
  kagent::v1::GpuSpec gpu_;
};

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_PROFILE_VIEW_H_
