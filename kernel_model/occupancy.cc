#include "kernel_model/occupancy.h"

#include <utility>

#include "kernel_model/metric_names.h"

namespace kagent {

std::optional<std::string> OccupancyLimiter(MetricLookup get) {
  // Ties resolve in this order: a register or shared-memory limit is the actionable one.
  const std::pair<const char*, const char*> limits[] = {
      {metric::kLimitRegisters, "registers"},
      {metric::kLimitSharedMem, "shared_memory"},
      {metric::kLimitBlocks, "blocks_per_sm"},
      {metric::kLimitWarps, "warps"},
  };
  std::optional<double> best;
  std::optional<std::string> name;
  for (const auto& [metric_name, limiter] : limits) {
    std::optional<double> v = get(metric_name);
    if (v && (!best || *v < *best)) {
      best = v;
      name = limiter;
    }
  }
  return name;
}

std::optional<double> TheoreticalOccupancy(MetricLookup get, std::string* metric_name) {
  if (auto v = get(metric::kTheoreticalOccupancy)) {
    if (metric_name) *metric_name = metric::kTheoreticalOccupancy;
    return v;
  }
  if (auto v = get(metric::kDerivedTheoreticalOccupancy)) {
    if (metric_name) *metric_name = metric::kDerivedTheoreticalOccupancy;
    return v;
  }
  return std::nullopt;
}

std::optional<std::string> OccupancyLimiter(const ProfileView& view) {
  return OccupancyLimiter([&view](absl::string_view m) { return view.Get(m); });
}

std::optional<double> TheoreticalOccupancy(const ProfileView& view, std::string* metric_name) {
  return TheoreticalOccupancy([&view](absl::string_view m) { return view.Get(m); }, metric_name);
}

}  // namespace kagent
