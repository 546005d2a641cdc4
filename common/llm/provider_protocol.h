// Wire formats of the supported providers: how a ChatRequest becomes an HTTP request
// body and headers, and how response and error bodies are read back.
//
//   openai:    POST {base}/v1/chat/completions, "Authorization: Bearer <key>"
//              (OpenAI, vLLM, SGLang, llama.cpp server, ...)
//   anthropic: POST {base}/v1/messages, "x-api-key: <key>", "anthropic-version: ..."
//
// Implementations are stateless and thread-safe. They never throw: JSON errors are
// turned into statuses here, at the edge.
#ifndef KAGENT_COMMON_LLM_PROVIDER_PROTOCOL_H_
#define KAGENT_COMMON_LLM_PROVIDER_PROTOCOL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/llm/llm_client.h"

namespace kagent::llm {

class ProviderProtocol {
 public:
  virtual ~ProviderProtocol() = default;
  // "openai" or "anthropic".
  virtual absl::string_view name() const = 0;
  // The path appended to the base URL, e.g. "/v1/chat/completions".
  virtual absl::string_view path() const = 0;
  // Request headers (content type and authentication). An empty key sends no auth header.
  virtual std::vector<std::pair<std::string, std::string>> Headers(
      absl::string_view api_key) const = 0;
  // The JSON body for `request`, whose model, max_tokens and temperature the caller has
  // already resolved against its defaults. INVALID_ARGUMENT for requests the provider
  // cannot take (no messages; Anthropic: first message not from the user).
  virtual absl::StatusOr<std::string> EncodeRequest(const ChatRequest& request) const = 0;
  // Parses a 2xx body. INTERNAL when it is not what the API promises.
  virtual absl::StatusOr<ChatResponse> DecodeResponse(absl::string_view body) const = 0;
  // The human-readable message from an error body, or a prefix of the raw body when it is
  // not in the provider's error format.
  virtual std::string DecodeErrorMessage(absl::string_view body) const = 0;
};

std::unique_ptr<ProviderProtocol> MakeOpenAiProtocol();
std::unique_ptr<ProviderProtocol> MakeAnthropicProtocol(
    std::string anthropic_version = "2023-06-01");

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_PROVIDER_PROTOCOL_H_
