// Occupancy of the diagnosed kernel of a ProfileView: which launch limit caps the
// resident blocks, and the theoretical occupancy to cite. Read by the judge's
// occupancy-limited rule and by the analyzer's preconditions.
//
// Thread-safe (pure functions over an immutable view).
#ifndef KAGENT_KERNEL_MODEL_OCCUPANCY_H_
#define KAGENT_KERNEL_MODEL_OCCUPANCY_H_

#include <optional>
#include <string>

#include "kernel_model/profile_view.h"

namespace kagent {

// The occupancy limiter of the diagnosed kernel: the smallest of the
// launch__occupancy_limit_* values ("registers", "shared_memory", "blocks_per_sm",
// "warps"; ties in that order), or nullopt when none was collected.
std::optional<std::string> OccupancyLimiter(const ProfileView& view);

// The theoretical occupancy in percent: ncu's value, else the one derived from the
// limiters; nullopt when neither is known. `metric_name` receives the name to cite.
std::optional<double> TheoreticalOccupancy(const ProfileView& view, std::string* metric_name);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_OCCUPANCY_H_
