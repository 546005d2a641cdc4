// Occupancy of the diagnosed kernel: which launch limit caps the resident blocks, and the
// theoretical occupancy to cite. Read by the judge's occupancy-limited rule (over its
// ProfileView) and by the prescriber's preconditions (over the values the judge's report
// carries, BottleneckReport.values).
//
// Thread-safe (pure functions over immutable inputs).
#ifndef KAGENT_KERNEL_MODEL_OCCUPANCY_H_
#define KAGENT_KERNEL_MODEL_OCCUPANCY_H_

#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "kernel_model/profile_view.h"

namespace kagent {

// Reads one metric of the diagnosed kernel by name; nullopt when unknown.
using MetricLookup = absl::FunctionRef<std::optional<double>(absl::string_view)>;

// The occupancy limiter of the diagnosed kernel: the smallest of the
// launch__occupancy_limit_* values ("registers", "shared_memory", "blocks_per_sm",
// "warps"; ties in that order), or nullopt when none was collected.
std::optional<std::string> OccupancyLimiter(const ProfileView& view);

// The theoretical occupancy in percent: ncu's value, else the one derived from the
// limiters; nullopt when neither is known. `metric_name` receives the name to cite.
std::optional<double> TheoreticalOccupancy(const ProfileView& view, std::string* metric_name);

// The same over any source of the kernel's metrics.
std::optional<std::string> OccupancyLimiter(MetricLookup get);
std::optional<double> TheoreticalOccupancy(MetricLookup get, std::string* metric_name);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_OCCUPANCY_H_
