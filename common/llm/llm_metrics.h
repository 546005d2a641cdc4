// Prometheus metrics of the LLM clients, registered on the process's prometheus-cpp
// registry (common/metrics.h):
//
//   kagent_llm_requests_total{provider, outcome}   counter    calls, by how they ended
//   kagent_llm_attempts_total{provider}            counter    HTTP attempts (retries included)
//   kagent_llm_tokens_total{provider, kind}        counter    kind = prompt | completion
//   kagent_llm_cost_usd_total{provider}            counter    US dollars, at the config's prices
//   kagent_llm_request_seconds{provider}           histogram  a call's wall time
//
// What is counted: CALLS, not attempts. MetricsLlmClient is the outermost decorator of a
// stack (factory.h: Metrics -> Accounting -> Cassette -> Http), so it sees each
// LlmClient::Chat a brain makes exactly once, with its final outcome: a budget refusal
// (budget_exhausted) that never reached the provider, a cassette replay, the usage and
// the cost the accounting layer filled in, and, through the payload HttpLlmClient attaches
// to its errors (call_outcome.h), why the last HTTP attempt failed (rate_limited,
// server_error, timeout, connection_error, circuit_open, ...) and how many attempts the
// call made. A call retried after a 429 that then succeeds counts once as `ok`; its
// retries show in kagent_llm_attempts_total (attempts per call = attempts / requests).
// `outcome` takes the values of LlmOutcomeName (call_outcome.h).
//
// Tokens and cost are counted for successful calls (failed calls report no usage),
// replayed ones included, as the Accountant charges them. The latency histogram observes
// every call that was sent (at least one HTTP attempt) or answered from a cassette,
// retries and back-off sleeps included; calls refused before sending (a spent budget, an
// open breaker, a malformed request) are counted in requests but not observed.
// `provider` is the configuration's provider ("openai" or "anthropic"): bounded.
//
// Thread-safety: both classes are safe to use from many threads. LlmMetrics registers its
// families when built (several LlmMetrics on one registry share them: prometheus-cpp
// merges families of the same name and help); the registry must outlive it.
#ifndef KAGENT_COMMON_LLM_LLM_METRICS_H_
#define KAGENT_COMMON_LLM_LLM_METRICS_H_

#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/llm/call_outcome.h"
#include "common/llm/clock.h"
#include "common/llm/llm_client.h"

namespace kagent::llm {

class LlmMetrics {
 public:
  explicit LlmMetrics(prometheus::Registry& registry);

  // Creates the provider's series at zero (requests{outcome="ok"}, both token kinds, cost,
  // attempts, the histogram), so rates and ratios have a series from the start.
  void Touch(const std::string& provider);

  // Records one finished call of `provider` that took `elapsed`.
  void Record(const std::string& provider, const absl::StatusOr<ChatResponse>& result,
              absl::Duration elapsed);

 private:
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Family<prometheus::Counter>* attempts_;
  prometheus::Family<prometheus::Counter>* tokens_;
  prometheus::Family<prometheus::Counter>* cost_;
  prometheus::Family<prometheus::Histogram>* seconds_;
};

// Decorator: times each call of `inner` with `clock` (null: RealClock()) and records it in
// `metrics` under `provider`. Returns the inner result unchanged except that the failure
// payload of call_outcome.h is removed (it is internal to the stack).
class MetricsLlmClient : public LlmClient {
 public:
  MetricsLlmClient(std::shared_ptr<LlmClient> inner, std::shared_ptr<LlmMetrics> metrics,
                   std::string provider, Clock* clock = nullptr);
  absl::StatusOr<ChatResponse> Chat(const ChatRequest& request) override;

 private:
  const std::shared_ptr<LlmClient> inner_;
  const std::shared_ptr<LlmMetrics> metrics_;
  const std::string provider_;
  Clock* const clock_;
};

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_LLM_METRICS_H_
