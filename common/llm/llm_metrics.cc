#include "common/llm/llm_metrics.h"

#include <string>
#include <utility>

#include "common/metrics.h"

namespace kagent::llm {

LlmMetrics::LlmMetrics(prometheus::Registry& registry) {
  requests_ = &prometheus::BuildCounter()
                   .Name("kagent_llm_requests_total")
                   .Help("LLM calls (not HTTP attempts), by provider and outcome.")
                   .Register(registry);
  attempts_ = &prometheus::BuildCounter()
                   .Name("kagent_llm_attempts_total")
                   .Help("HTTP attempts made by LLM calls, retries included, by provider.")
                   .Register(registry);
  tokens_ = &prometheus::BuildCounter()
                 .Name("kagent_llm_tokens_total")
                 .Help("LLM tokens used, by provider and kind (prompt, completion).")
                 .Register(registry);
  cost_ = &prometheus::BuildCounter()
               .Name("kagent_llm_cost_usd_total")
               .Help("LLM cost in US dollars at the configured prices, by provider.")
               .Register(registry);
  seconds_ = &prometheus::BuildHistogram()
                  .Name("kagent_llm_request_seconds")
                  .Help("Wall time of an LLM call that was sent, retries included, by provider.")
                  .Register(registry);
}

void LlmMetrics::Touch(const std::string& provider) {
  const std::string ok(LlmOutcomeName(LlmOutcome::kOk));
  requests_->Add({{"provider", provider}, {"outcome", ok}});
  attempts_->Add({{"provider", provider}});
  tokens_->Add({{"provider", provider}, {"kind", "prompt"}});
  tokens_->Add({{"provider", provider}, {"kind", "completion"}});
  cost_->Add({{"provider", provider}});
  seconds_->Add({{"provider", provider}}, Metrics::LatencyBuckets());
}

void LlmMetrics::Record(const std::string& provider, const absl::StatusOr<ChatResponse>& result,
                        absl::Duration elapsed) {
  LlmOutcome outcome = LlmOutcome::kOk;
  int attempts = 0;
  bool sent = false;
  if (result.ok()) {
    attempts = result->attempts;
    sent = true;  // answered by the provider or a cassette
  } else {
    const LlmFailure failure = LlmFailureOf(result.status());
    outcome = failure.outcome;
    if (failure.attempts >= 0) {
      attempts = failure.attempts;
      sent = failure.attempts > 0;
    } else {
      // No payload: not from HttpLlmClient. A budget refusal was never sent; anything
      // else (a replayed error, a cassette miss) was answered by the cassette.
      sent = outcome != LlmOutcome::kBudgetExhausted;
    }
  }
  const std::string name(LlmOutcomeName(outcome));
  requests_->Add({{"provider", provider}, {"outcome", name}}).Increment();
  if (attempts > 0) attempts_->Add({{"provider", provider}}).Increment(attempts);
  if (result.ok()) {
    tokens_->Add({{"provider", provider}, {"kind", "prompt"}})
        .Increment(static_cast<double>(result->usage.input_tokens));
    tokens_->Add({{"provider", provider}, {"kind", "completion"}})
        .Increment(static_cast<double>(result->usage.output_tokens));
    cost_->Add({{"provider", provider}}).Increment(result->cost_usd);
  }
  if (sent) {
    seconds_->Add({{"provider", provider}}, Metrics::LatencyBuckets())
        .Observe(absl::ToDoubleSeconds(elapsed));
  }
}

MetricsLlmClient::MetricsLlmClient(std::shared_ptr<LlmClient> inner,
                                   std::shared_ptr<LlmMetrics> metrics, std::string provider,
                                   Clock* clock)
    : inner_(std::move(inner)),
      metrics_(std::move(metrics)),
      provider_(std::move(provider)),
      clock_(clock != nullptr ? clock : RealClock()) {
  metrics_->Touch(provider_);
}

absl::StatusOr<ChatResponse> MetricsLlmClient::Chat(const ChatRequest& request) {
  const absl::Time start = clock_->Now();
  absl::StatusOr<ChatResponse> result = inner_->Chat(request);
  metrics_->Record(provider_, result, clock_->Now() - start);
  if (!result.ok()) {
    absl::Status status = result.status();
    ClearLlmFailure(&status);
    return status;
  }
  return result;
}

}  // namespace kagent::llm
