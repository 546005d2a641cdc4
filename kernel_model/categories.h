// Names of the bottleneck categories as used in reports, docs and the optimization
// database ("memory-bound", "compute-bound", ...).
#ifndef KAGENT_KERNEL_MODEL_CATEGORIES_H_
#define KAGENT_KERNEL_MODEL_CATEGORIES_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// "memory-bound", "compute-bound", "latency-bound", "occupancy-limited", "launch-bound",
// "grid-underfilled", "at-roofline"; "unspecified" for the zero value.
std::string CategoryName(kagent::v1::BottleneckCategory category);

// Inverse of CategoryName for the seven meaningful categories; nullopt otherwise.
std::optional<kagent::v1::BottleneckCategory> ParseCategoryName(absl::string_view name);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_CATEGORIES_H_
