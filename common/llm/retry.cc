#include "common/llm/retry.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace kagent::llm {

absl::Duration BackoffCeiling(const RetryPolicy& policy, int failed_attempts) {
  if (failed_attempts < 1) failed_attempts = 1;
  const double base = absl::ToDoubleSeconds(policy.initial_backoff);
  const double cap = absl::ToDoubleSeconds(policy.max_backoff);
  const double mult = policy.multiplier < 1.0 ? 1.0 : policy.multiplier;
  // Exponent clamped so pow() cannot overflow for silly attempt counts.
  const double grown = base * std::pow(mult, std::min(failed_attempts - 1, 60));
  return absl::Seconds(std::max(0.0, std::min(cap, grown)));
}

absl::Duration BackoffDelay(const RetryPolicy& policy, int failed_attempts, double uniform01) {
  if (!(uniform01 >= 0.0)) uniform01 = 0.0;  // also catches NaN
  if (uniform01 >= 1.0) uniform01 = std::nextafter(1.0, 0.0);
  // Floored to whole nanoseconds so a draw just under 1 stays under the ceiling.
  const double ns = absl::ToDoubleNanoseconds(BackoffCeiling(policy, failed_attempts));
  return absl::Nanoseconds(static_cast<int64_t>(std::floor(ns * uniform01)));
}

std::optional<absl::Duration> ParseRetryAfter(absl::string_view value, absl::Time now) {
  value = absl::StripAsciiWhitespace(value);
  if (value.empty()) return std::nullopt;
  double seconds = 0;
  if (absl::SimpleAtod(value, &seconds)) {
    if (!(seconds >= 0) || seconds > 1e7) return std::nullopt;
    return absl::Seconds(seconds);
  }
  // HTTP-date (RFC 7231 IMF-fixdate). The obsolete RFC 850 and asctime forms are not
  // produced by any provider we talk to.
  absl::Time when;
  std::string err;
  if (absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", std::string(value), absl::UTCTimeZone(),
                      &when, &err)) {
    return std::max(absl::ZeroDuration(), when - now);
  }
  return std::nullopt;
}

bool IsRetryableHttpStatus(int http_status) {
  switch (http_status) {
    case 408:
    case 429:
    case 500:
    case 502:
    case 503:
    case 504:
    case 529:
      return true;
    default:
      return false;
  }
}

bool IsRetryableTransportError(const absl::Status& status) {
  return absl::IsDeadlineExceeded(status) || absl::IsUnavailable(status);
}

absl::StatusCode HttpStatusToCode(int http_status) {
  switch (http_status) {
    case 400:
    case 413:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 408:
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    case 429:  // rate limiting is transient; RESOURCE_EXHAUSTED is reserved for budgets
    case 500:
    case 502:
    case 503:
    case 529:
      return absl::StatusCode::kUnavailable;
    default:
      if (http_status >= 500) return absl::StatusCode::kInternal;
      if (http_status >= 400) return absl::StatusCode::kFailedPrecondition;
      return absl::StatusCode::kUnknown;
  }
}

}  // namespace kagent::llm
