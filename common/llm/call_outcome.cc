#include "common/llm/call_outcome.h"

#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kagent::llm {
namespace {

constexpr LlmOutcome kAll[] = {
    LlmOutcome::kOk,           LlmOutcome::kRateLimited,     LlmOutcome::kServerError,
    LlmOutcome::kTimeout,      LlmOutcome::kConnectionError, LlmOutcome::kCircuitOpen,
    LlmOutcome::kBudgetExhausted, LlmOutcome::kBadResponse,  LlmOutcome::kInvalidRequest,
    LlmOutcome::kAuthError,    LlmOutcome::kClientError,     LlmOutcome::kUnavailable,
    LlmOutcome::kNotFound,     LlmOutcome::kOther,
};

}  // namespace

absl::string_view LlmOutcomeName(LlmOutcome outcome) {
  switch (outcome) {
    case LlmOutcome::kOk:
      return "ok";
    case LlmOutcome::kRateLimited:
      return "rate_limited";
    case LlmOutcome::kServerError:
      return "server_error";
    case LlmOutcome::kTimeout:
      return "timeout";
    case LlmOutcome::kConnectionError:
      return "connection_error";
    case LlmOutcome::kCircuitOpen:
      return "circuit_open";
    case LlmOutcome::kBudgetExhausted:
      return "budget_exhausted";
    case LlmOutcome::kBadResponse:
      return "bad_response";
    case LlmOutcome::kInvalidRequest:
      return "invalid_request";
    case LlmOutcome::kAuthError:
      return "auth_error";
    case LlmOutcome::kClientError:
      return "client_error";
    case LlmOutcome::kUnavailable:
      return "unavailable";
    case LlmOutcome::kNotFound:
      return "not_found";
    case LlmOutcome::kOther:
      return "other";
  }
  return "other";
}

LlmOutcome OutcomeOfHttpStatus(int http_status) {
  switch (http_status) {
    case 429:
      return LlmOutcome::kRateLimited;
    case 408:
    case 504:
      return LlmOutcome::kTimeout;
    case 400:
    case 413:
    case 422:
      return LlmOutcome::kInvalidRequest;
    case 401:
    case 403:
      return LlmOutcome::kAuthError;
    default:
      if (http_status >= 500) return LlmOutcome::kServerError;
      if (http_status >= 400) return LlmOutcome::kClientError;
      return LlmOutcome::kOther;
  }
}

LlmOutcome OutcomeOfCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return LlmOutcome::kOk;
    case absl::StatusCode::kResourceExhausted:  // only budgets use this code
      return LlmOutcome::kBudgetExhausted;
    case absl::StatusCode::kDeadlineExceeded:
      return LlmOutcome::kTimeout;
    case absl::StatusCode::kUnavailable:
      return LlmOutcome::kUnavailable;
    case absl::StatusCode::kInternal:
      return LlmOutcome::kBadResponse;
    case absl::StatusCode::kInvalidArgument:
      return LlmOutcome::kInvalidRequest;
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
      return LlmOutcome::kAuthError;
    case absl::StatusCode::kNotFound:
      return LlmOutcome::kNotFound;
    default:
      return LlmOutcome::kOther;
  }
}

void AttachLlmFailure(LlmOutcome outcome, int attempts, absl::Status* status) {
  if (status->ok()) return;
  status->SetPayload(kLlmFailurePayloadUrl,
                     absl::Cord(absl::StrCat(LlmOutcomeName(outcome), " ", attempts)));
}

LlmFailure LlmFailureOf(const absl::Status& status) {
  LlmFailure failure{OutcomeOfCode(status.code()), -1};
  if (status.ok()) return failure;
  auto payload = status.GetPayload(kLlmFailurePayloadUrl);
  if (!payload.has_value()) return failure;
  std::vector<std::string> parts = absl::StrSplit(std::string(*payload), ' ');
  int attempts = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &attempts)) return failure;
  for (LlmOutcome o : kAll) {
    if (LlmOutcomeName(o) == parts[0]) return LlmFailure{o, attempts};
  }
  return failure;
}

void ClearLlmFailure(absl::Status* status) { status->ErasePayload(kLlmFailurePayloadUrl); }

}  // namespace kagent::llm
