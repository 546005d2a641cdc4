// How one LLM call ended, as a small closed set of names (the `outcome` label of
// kagent_llm_requests_total, see llm_metrics.h).
//
// The status code alone cannot tell a rate limit from a server error or an open circuit
// breaker (all are UNAVAILABLE, see llm_client.h), so HttpLlmClient, which sees every
// attempt, attaches the outcome of the call's last attempt and the number of HTTP
// attempts made to each error it returns, as an absl::Status payload. LlmFailureOf()
// reads it back above the client (through the cassette and accounting decorators, which
// pass statuses on unchanged); a status without it (a budget refusal, a replayed error, a
// cassette miss) is classified by its code.
//
// Pure functions; thread-safe.
#ifndef KAGENT_COMMON_LLM_CALL_OUTCOME_H_
#define KAGENT_COMMON_LLM_CALL_OUTCOME_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kagent::llm {

enum class LlmOutcome {
  kOk,               // "ok"
  kRateLimited,      // "rate_limited": HTTP 429
  kServerError,      // "server_error": HTTP 5xx (504 is a timeout), 529
  kTimeout,          // "timeout": attempt timed out, HTTP 408/504, or no time left
  kConnectionError,  // "connection_error": refused, reset, closed or cut-short responses
  kCircuitOpen,      // "circuit_open": the endpoint's breaker refused the call
  kBudgetExhausted,  // "budget_exhausted": a job, tenant or request budget is spent
  kBadResponse,      // "bad_response": 2xx whose body is not in the API's shape
  kInvalidRequest,   // "invalid_request": ours, or HTTP 400/413/422
  kAuthError,        // "auth_error": HTTP 401/403
  kClientError,      // "client_error": any other HTTP 4xx (404, ...)
  kUnavailable,      // "unavailable": UNAVAILABLE without a finer reason (e.g. replayed)
  kNotFound,         // "not_found": NOT_FOUND without a finer reason (a cassette miss)
  kOther,            // "other": anything else
};

// The label value, e.g. "rate_limited".
absl::string_view LlmOutcomeName(LlmOutcome outcome);

// The outcome of a non-2xx HTTP response.
LlmOutcome OutcomeOfHttpStatus(int http_status);

// The outcome a status stands for when nothing finer is known (OK -> kOk).
LlmOutcome OutcomeOfCode(absl::StatusCode code);

struct LlmFailure {
  LlmOutcome outcome = LlmOutcome::kOther;
  // HTTP attempts the call made; -1 when unknown (no payload).
  int attempts = -1;
};

// The payload's type URL.
inline constexpr char kLlmFailurePayloadUrl[] = "type.kagent.dev/kagent.llm.Failure";

// Attaches `outcome` and `attempts` to a non-OK `status` (an OK one is left alone).
void AttachLlmFailure(LlmOutcome outcome, int attempts, absl::Status* status);

// The attached failure; without one, OutcomeOfCode(status.code()) and attempts -1.
// An OK status is {kOk, -1}.
LlmFailure LlmFailureOf(const absl::Status& status);

// Removes the payload (the message and code stay).
void ClearLlmFailure(absl::Status* status);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_CALL_OUTCOME_H_
