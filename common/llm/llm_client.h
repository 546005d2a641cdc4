// The LLM client interface shared by every "brain" that asks a language model for
// judgement (judge narrative, prescriptions, reflexion, kernel rewrites).
//
// Implementations (see factory.h for how they are composed from configuration):
//   - HttpLlmClient over an OpenAI-compatible or Anthropic wire protocol (http_llm_client.h),
//     with timeouts, retries with backoff and a circuit breaker;
//   - AccountingLlmClient (accounting.h): token/cost accounting and budgets per job/tenant;
//   - CassetteLlmClient (cassette.h): record/replay for reproducible runs.
//
// Thread-safety: every LlmClient implementation in this folder is safe to call from many
// threads at once. Errors are returned as absl::Status, never thrown.
#ifndef KAGENT_COMMON_LLM_LLM_CLIENT_H_
#define KAGENT_COMMON_LLM_LLM_CLIENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kagent::llm {

enum class Role { kUser, kAssistant };

// "user" or "assistant".
absl::string_view RoleName(Role role);

struct ChatMessage {
  Role role = Role::kUser;
  std::string content;
};

struct ChatRequest {
  // The system prompt; may be empty. Sent as a system message (OpenAI) or the top-level
  // "system" field (Anthropic).
  std::string system;
  // The conversation, oldest first. Must be non-empty; Anthropic also requires the first
  // message to come from the user.
  std::vector<ChatMessage> messages;
  // Empty: the client's configured model.
  std::string model;
  // 0: the client's configured default.
  int max_tokens = 0;
  // Unset: the client's configured default (or the provider's when that is unset too).
  std::optional<double> temperature;
  // Per-attempt HTTP timeout; zero: the client's configured timeout.
  absl::Duration timeout = absl::ZeroDuration();
  // Accounting keys (see accounting.h). Never sent to the provider, never part of a
  // cassette's request hash.
  std::string job_id;
  std::string tenant;
};

struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t total() const { return input_tokens + output_tokens; }
};

struct ChatResponse {
  // The assistant's text (all text blocks concatenated). Reasoning models may still put
  // <think>...</think> blocks here (structured_output.h strips them before parsing).
  std::string content;
  // The model's reasoning when the provider returns it apart from the answer (vLLM's and
  // SGLang's `reasoning_content`, Anthropic's `thinking` blocks); never parsed as the
  // answer, and not recorded in cassettes.
  std::string reasoning;
  // The model that answered, as reported by the provider (falls back to the request's).
  std::string model;
  // "stop", "length", "end_turn", "max_tokens", ... as reported by the provider.
  std::string stop_reason;
  Usage usage;
  // Filled by AccountingLlmClient from the configured prices; 0 elsewhere.
  double cost_usd = 0.0;
  // HTTP attempts this call took (1 without retries; 0 when served from a cassette).
  int attempts = 0;
  bool from_cassette = false;
};

// The one interface. Status codes callers can rely on:
//   INVALID_ARGUMENT   bad request (ours, or HTTP 400/413/422 from the provider)
//   UNAUTHENTICATED / PERMISSION_DENIED   HTTP 401 / 403 (bad or missing key)
//   DEADLINE_EXCEEDED  the call (after retries) ran out of time
//   UNAVAILABLE        transient failures that outlived the retries (429, 5xx, connection
//                      errors, truncated bodies) or the endpoint's circuit breaker is open
//   RESOURCE_EXHAUSTED the job's or tenant's token/cost budget is spent: end the job
//   NOT_FOUND          replay mode and the cassette has no response for this request
//   INTERNAL           the provider answered 2xx with a body we cannot understand
class LlmClient {
 public:
  virtual ~LlmClient() = default;
  virtual absl::StatusOr<ChatResponse> Chat(const ChatRequest& request) = 0;
};

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_LLM_CLIENT_H_
