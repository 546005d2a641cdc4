// HttpLlmClient: an LlmClient over HTTP for one provider endpoint, with per-attempt
// timeouts, retries (exponential backoff with full jitter, Retry-After honoured, bounded
// attempts and total time) and a circuit breaker.
//
// Ownership: the client owns its protocol; transport and breaker are shared (a breaker
// is per endpoint and may be shared by several clients, see CircuitBreakerRegistry).
// The clock must outlive the client. Thread-safe: Chat() may run on many threads.
//
// Every error Chat() returns carries the outcome of its last attempt (rate limited,
// server error, timeout, open breaker, ...) and the number of HTTP attempts made, as a
// payload (call_outcome.h) that the metrics decorator (llm_metrics.h) reads.
//
// The API key is held in memory only. It is sent in a header, and scrubbed from every
// status message and log line this client produces.
#ifndef KAGENT_COMMON_LLM_HTTP_LLM_CLIENT_H_
#define KAGENT_COMMON_LLM_HTTP_LLM_CLIENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/random/random.h"
#include "absl/synchronization/mutex.h"
#include "common/llm/call_outcome.h"
#include "common/llm/circuit_breaker.h"
#include "common/llm/clock.h"
#include "common/llm/http_transport.h"
#include "common/llm/llm_client.h"
#include "common/llm/provider_protocol.h"
#include "common/llm/retry.h"

namespace kagent::llm {

struct HttpLlmClientOptions {
  // Scheme, host, port and optional path prefix, e.g. "https://api.openai.com" or
  // "http://127.0.0.1:8000". A trailing "/" or "/v1" is tolerated and dropped.
  std::string base_url;
  // Default model, used when a request names none.
  std::string model;
  // The key; empty sends no authentication header.
  std::string api_key;
  int default_max_tokens = 4096;
  std::optional<double> default_temperature;
  // Per-attempt timeout (a request's own timeout overrides it) and connect timeout.
  absl::Duration timeout = absl::Seconds(120);
  absl::Duration connect_timeout = absl::Seconds(10);
  RetryPolicy retry;
  // Used only when no shared breaker is given.
  CircuitBreakerOptions breaker;
};

struct HttpLlmClientDeps {
  // Null: a CurlTransport.
  std::shared_ptr<HttpTransport> transport;
  // Null: a breaker private to this client, built from options.breaker.
  std::shared_ptr<CircuitBreaker> breaker;
  // Null: RealClock().
  Clock* clock = nullptr;
  // Draws in [0, 1) for jitter. Null: a thread-safe PRNG.
  std::function<double()> uniform01;
};

class HttpLlmClient : public LlmClient {
 public:
  HttpLlmClient(HttpLlmClientOptions options, std::unique_ptr<ProviderProtocol> protocol,
                HttpLlmClientDeps deps = {});

  absl::StatusOr<ChatResponse> Chat(const ChatRequest& request) override;

  // "{base_url}{protocol path}".
  const std::string& endpoint() const { return endpoint_; }
  CircuitBreaker& breaker() { return *breaker_; }

 private:
  // One HTTP attempt's outcome.
  struct Attempt {
    absl::StatusOr<ChatResponse> result;
    bool retryable = false;
    bool endpoint_failure = false;  // counts against the circuit breaker
    std::optional<absl::Duration> retry_after;
    int http_status = 0;
    LlmOutcome outcome = LlmOutcome::kOk;
  };
  Attempt RunAttempt(const std::string& body, absl::Duration timeout);
  // Chat() without the failure payload: sets the outcome of the last attempt (or of the
  // refusal) and the number of HTTP attempts made.
  absl::StatusOr<ChatResponse> ChatWithRetries(const ChatRequest& request, LlmOutcome* outcome,
                                               int* attempts_made);
  double Uniform01();

  const HttpLlmClientOptions options_;
  const std::unique_ptr<ProviderProtocol> protocol_;
  const std::string endpoint_;
  std::shared_ptr<HttpTransport> transport_;
  std::shared_ptr<CircuitBreaker> breaker_;
  Clock* const clock_;
  std::function<double()> uniform01_;
  absl::Mutex rng_mu_;
  absl::BitGen rng_ ABSL_GUARDED_BY(rng_mu_);
};

// Convenience constructors.
std::unique_ptr<LlmClient> MakeOpenAiClient(HttpLlmClientOptions options,
                                            HttpLlmClientDeps deps = {});
std::unique_ptr<LlmClient> MakeAnthropicClient(HttpLlmClientOptions options,
                                               HttpLlmClientDeps deps = {},
                                               std::string anthropic_version = "2023-06-01");

// The base URL normalized as described in HttpLlmClientOptions::base_url.
std::string NormalizeBaseUrl(absl::string_view base_url);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_HTTP_LLM_CLIENT_H_
