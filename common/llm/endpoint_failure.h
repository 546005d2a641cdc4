// Which LLM call failures are the endpoint's (the provider's) rather than the request's
// or the reply's, and how long the provider asked to be left alone.
//
// A brain whose call fails with one of these produced no kernel through no fault of the
// fix it was asked to apply; the optimization manager flags such kernels
// (GeneratedKernel.endpoint_failure) and the coordinator pauses or fails the job instead
// of holding the failure against the fix (docs/llm.md, "Provider errors").
//
// HttpLlmClient attaches the Retry-After of a failed call's last attempt, which it did not
// wait for (over the per-call cap, or no attempt or time left), as a payload, so a caller
// can wait at a higher level. Pure functions; thread-safe.
#ifndef KAGENT_COMMON_LLM_ENDPOINT_FAILURE_H_
#define KAGENT_COMMON_LLM_ENDPOINT_FAILURE_H_

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kagent::llm {

enum class EndpointFailure {
  kNone,       // not the endpoint's failure (or OK)
  kTransient,  // UNAVAILABLE, DEADLINE_EXCEEDED: down, overloaded, rate or quota limits
  kPermanent,  // NOT_FOUND (the model is not served), UNAUTHENTICATED, PERMISSION_DENIED
};

// By the status code (llm_client.h lists the codes a client returns).
// RESOURCE_EXHAUSTED is a spent budget, never the endpoint's.
EndpointFailure ClassifyEndpointFailure(const absl::Status& status);

// For a status from an LlmClient: attaches ClassifyEndpointFailure's answer as a payload
// when it is not kNone, so callers above a brain (which may fail with the same codes for
// reasons of its own, e.g. a heuristic brain's NOT_FOUND for an unknown template) can
// tell the endpoint's failure apart. Leaves other statuses alone.
void MarkEndpointFailure(absl::Status* status);

// The marked failure; kNone for a status MarkEndpointFailure did not mark.
EndpointFailure EndpointFailureOf(const absl::Status& status);

inline constexpr char kEndpointFailurePayloadUrl[] = "type.kagent.dev/kagent.llm.EndpointFailure";
inline constexpr char kRetryAfterPayloadUrl[] = "type.kagent.dev/kagent.llm.RetryAfter";

// Attaches the provider's Retry-After to a non-OK `status` (an OK one is left alone).
void AttachRetryAfter(absl::Duration retry_after, absl::Status* status);

// The attached Retry-After, if any.
std::optional<absl::Duration> RetryAfterOf(const absl::Status& status);

// `status` with `prefix` before its message, the code and every payload kept.
absl::Status PrefixMessage(absl::string_view prefix, const absl::Status& status);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_ENDPOINT_FAILURE_H_
