// The judge's classification, the first half of Judge::DiagnoseByRules (judge.h lists the
// rules): from the profile view it computes the speed-of-light figures, fires the rules
// in priority order, and derives the limiter and the units the root causes name. The
// second half, root_causes.h, writes the cited causes from a Classification.
//
// Thread-safe (pure functions over immutable inputs).
#ifndef KAGENT_SERVICES_JUDGE_CLASSIFICATION_H_
#define KAGENT_SERVICES_JUDGE_CLASSIFICATION_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/common.pb.h"
#include "kagent/v1/judge_service.pb.h"
#include "kernel_model/profile_view.h"
#include "services/judge/judge.h"

namespace kagent {

// One warp-stall reason: its metric, short name (used as limiter for latency-bound
// kernels) and what a high value means.
struct StallReason {
  const char* metric;
  const char* name;
  const char* meaning;
};

// What the rules decided about the diagnosed kernel. Optional values are unknown when
// the profile lacks the metric they come from.
struct Classification {
  // Speed of light: ncu's SOL metrics, else the op signature's achieved fractions
  // (compute_metric and memory_metric name the ones used).
  std::string compute_metric;
  std::string memory_metric;
  std::optional<double> compute;
  std::optional<double> memory;
  std::optional<double> efficiency;  // the larger of the two
  bool memory_side = false;          // memory SOL >= compute SOL (ties: memory)
  // The op's own bytes and FLOPs over the time against the ceiling (with ncu's SOL only).
  std::optional<double> useful;
  bool redundant_traffic = false;  // SOL at the roofline, useful work far under it
  // Launches.
  double mean_launch_ns = 0;
  std::optional<double> gpu_busy;
  bool short_launches = false;
  bool mostly_idle = false;
  kagent::v1::BottleneckCategory sol_category = kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED;
  // Grid and occupancy.
  std::optional<double> ctas;
  bool grid_underfilled = false;
  std::string theoretical_metric;  // the metric `theoretical` comes from
  std::optional<double> theoretical;
  std::optional<std::string> occupancy_limiter;
  // The first rule that fired, and the next (UNSPECIFIED when only one did).
  kagent::v1::BottleneckCategory primary = kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED;
  kagent::v1::BottleneckCategory secondary = kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED;
  // The busiest memory unit ("dram_bandwidth", "l2_bandwidth", "l1_bandwidth") and
  // compute unit ("tensor_pipe", "fma_pipe"); empty when unknown.
  std::string memory_unit;
  std::string compute_unit;
  std::optional<double> tensor;
  std::optional<double> ffma;
  // Stall reasons of at least min_stall_cycles, the largest first.
  std::vector<std::pair<double, const StallReason*>> stalls;
  std::string limiter;

  bool Is(kagent::v1::BottleneckCategory c) const { return primary == c || secondary == c; }
};

// Classifies the kernel `view` describes. INVALID_ARGUMENT when no rule fires (no SOL
// metrics, no op signature to derive them, and neither the launch nor the grid rule
// applies).
absl::StatusOr<Classification> Classify(const kagent::v1::DiagnoseRequest& request,
                                        const ProfileView& view, const JudgeOptions& o);

}  // namespace kagent

#endif  // KAGENT_SERVICES_JUDGE_CLASSIFICATION_H_
