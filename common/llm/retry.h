// Retry policy for provider calls: which failures are retried, exponential backoff with
// full jitter, and Retry-After parsing. Pure functions; no I/O, no sleeping.
#ifndef KAGENT_COMMON_LLM_RETRY_H_
#define KAGENT_COMMON_LLM_RETRY_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kagent::llm {

struct RetryPolicy {
  // Attempts in all, the first included (1 = no retries). Must be >= 1.
  int max_attempts = 4;
  // Backoff ceiling before attempt n+1 (n = 1, 2, ...) is
  // min(max_backoff, initial_backoff * multiplier^(n-1)); the actual sleep is uniform in
  // [0, ceiling) ("full jitter").
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
  double multiplier = 2.0;
  // Cap on the whole call: attempts plus sleeps. A retry whose sleep would end past it is
  // not made; each attempt's HTTP timeout is clipped to what is left.
  absl::Duration total_timeout = absl::Minutes(5);
  // A Retry-After longer than this is not waited for: the call fails at once.
  absl::Duration max_retry_after = absl::Seconds(120);
};

// The full-jitter backoff before attempt `failed_attempts + 1`, where `failed_attempts`
// >= 1 and `uniform01` is a draw in [0, 1) (clamped into it).
absl::Duration BackoffDelay(const RetryPolicy& policy, int failed_attempts, double uniform01);

// The ceiling BackoffDelay draws under (no jitter); exposed for tests and docs.
absl::Duration BackoffCeiling(const RetryPolicy& policy, int failed_attempts);

// Parses a Retry-After header value: delta-seconds ("3", "1.5" tolerated) or an
// HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT", relative to `now`; a past date is zero).
// nullopt when the value is neither.
std::optional<absl::Duration> ParseRetryAfter(absl::string_view value, absl::Time now);

// True for HTTP statuses worth retrying: 408, 429, 500, 502, 503, 504, 529.
bool IsRetryableHttpStatus(int http_status);

// True for transport failures worth retrying (timeouts, connection errors, truncated
// bodies): DEADLINE_EXCEEDED and UNAVAILABLE.
bool IsRetryableTransportError(const absl::Status& status);

// Maps a non-2xx HTTP status to the status code callers see (see llm_client.h).
absl::StatusCode HttpStatusToCode(int http_status);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_RETRY_H_
