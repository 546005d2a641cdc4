#include "common/llm/endpoint_failure.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kagent::llm {

EndpointFailure ClassifyEndpointFailure(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return EndpointFailure::kTransient;
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return EndpointFailure::kPermanent;
    default:
      return EndpointFailure::kNone;
  }
}

void MarkEndpointFailure(absl::Status* status) {
  switch (ClassifyEndpointFailure(*status)) {
    case EndpointFailure::kNone:
      return;
    case EndpointFailure::kTransient:
      status->SetPayload(kEndpointFailurePayloadUrl, absl::Cord("transient"));
      return;
    case EndpointFailure::kPermanent:
      status->SetPayload(kEndpointFailurePayloadUrl, absl::Cord("permanent"));
      return;
  }
}

EndpointFailure EndpointFailureOf(const absl::Status& status) {
  auto payload = status.GetPayload(kEndpointFailurePayloadUrl);
  if (!payload.has_value()) return EndpointFailure::kNone;
  if (*payload == "permanent") return EndpointFailure::kPermanent;
  if (*payload == "transient") return EndpointFailure::kTransient;
  return EndpointFailure::kNone;
}

void AttachRetryAfter(absl::Duration retry_after, absl::Status* status) {
  if (status->ok()) return;
  status->SetPayload(kRetryAfterPayloadUrl,
                     absl::Cord(absl::StrCat(absl::ToDoubleSeconds(retry_after))));
}

std::optional<absl::Duration> RetryAfterOf(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryAfterPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  double seconds = 0;
  if (!absl::SimpleAtod(std::string(*payload), &seconds) || seconds < 0) return std::nullopt;
  return absl::Seconds(seconds);
}

absl::Status PrefixMessage(absl::string_view prefix, const absl::Status& status) {
  if (status.ok()) return status;
  absl::Status out(status.code(), absl::StrCat(prefix, status.message()));
  status.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

}  // namespace kagent::llm
