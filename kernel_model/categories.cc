#include "kernel_model/categories.h"

namespace kagent {

using kagent::v1::BottleneckCategory;

std::string CategoryName(BottleneckCategory category) {
  switch (category) {
    case kagent::v1::BOTTLENECK_MEMORY_BOUND:
      return "memory-bound";
    case kagent::v1::BOTTLENECK_COMPUTE_BOUND:
      return "compute-bound";
    case kagent::v1::BOTTLENECK_LATENCY_BOUND:
      return "latency-bound";
    case kagent::v1::BOTTLENECK_OCCUPANCY_LIMITED:
      return "occupancy-limited";
    case kagent::v1::BOTTLENECK_LAUNCH_BOUND:
      return "launch-bound";
    case kagent::v1::BOTTLENECK_GRID_UNDERFILLED:
      return "grid-underfilled";
    case kagent::v1::BOTTLENECK_AT_ROOFLINE:
      return "at-roofline";
    default:
      return "unspecified";
  }
}

std::optional<BottleneckCategory> ParseCategoryName(absl::string_view name) {
  for (BottleneckCategory c :
       {kagent::v1::BOTTLENECK_MEMORY_BOUND, kagent::v1::BOTTLENECK_COMPUTE_BOUND,
        kagent::v1::BOTTLENECK_LATENCY_BOUND, kagent::v1::BOTTLENECK_OCCUPANCY_LIMITED,
        kagent::v1::BOTTLENECK_LAUNCH_BOUND, kagent::v1::BOTTLENECK_GRID_UNDERFILLED,
        kagent::v1::BOTTLENECK_AT_ROOFLINE}) {
    if (CategoryName(c) == name) return c;
  }
  return std::nullopt;
}

}  // namespace kagent
