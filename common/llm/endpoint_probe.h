// The start-up check of an LLM endpoint: is it reachable, is the key accepted, and is
// the configured model served? A service that will call the endpoint for every job asks
// once, before it starts, so a wrong model name or key is a clear refusal to start rather
// than a failure of every job (docs/llm.md, "Probing the endpoint").
//
// It sends GET {base_url}/v1/models with the provider's headers (OpenAI, vLLM, SGLang,
// llama.cpp and Anthropic all serve it) and looks for the model among the ids listed.
// Thread-safe; blocks for at most the configuration's timeout (capped at 30 s).
#ifndef KAGENT_COMMON_LLM_ENDPOINT_PROBE_H_
#define KAGENT_COMMON_LLM_ENDPOINT_PROBE_H_

#include <memory>

#include "absl/status/status.h"
#include "common/llm/factory.h"
#include "common/llm/http_transport.h"

namespace kagent::llm {

// OK when the endpoint lists `config.model` (for Anthropic also a dated id of which the
// model is the alias: "claude-sonnet-4-5" is served as "claude-sonnet-4-5-20250929").
// Every error names the endpoint and starts with "the LLM endpoint":
//   UNAVAILABLE          unreachable (connection refused, DNS, timeout) or HTTP 5xx/429
//   UNAUTHENTICATED / PERMISSION_DENIED   HTTP 401 / 403: the key is refused
//   NOT_FOUND            the model is not in the list (the message lists what is served)
//   FAILED_PRECONDITION  no GET /v1/models (HTTP 404/405) or no model list in the reply:
//                        the message says to set "probe": false for such an endpoint
//   as LoadApiKey        the key's variable or file is missing
// A null `transport` means libcurl. The key never appears in a message.
absl::Status ProbeLlmEndpoint(const LlmConfig& config,
                              std::shared_ptr<HttpTransport> transport = nullptr);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_ENDPOINT_PROBE_H_
