// Validation of the benchmark worker's requests: INVALID_ARGUMENT or RESOURCE_EXHAUSTED
// with a message naming the field. Pure functions.
#ifndef KAGENT_SERVICES_BENCHMARK_VALIDATION_H_
#define KAGENT_SERVICES_BENCHMARK_VALIDATION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kagent/v1/benchmark_service.pb.h"

namespace kagent {

// Kernels one ScreenRequest may carry.
inline constexpr int kMaxScreenKernels = 32;

absl::Status ValidateMeasureRequest(const v1::MeasureRequest& r, int64_t max_source_bytes);
absl::Status ValidateScreenRequest(const v1::ScreenRequest& r, int64_t max_source_bytes);

}  // namespace kagent

#endif  // KAGENT_SERVICES_BENCHMARK_VALIDATION_H_
