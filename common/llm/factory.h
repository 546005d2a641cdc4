// Building an LLM client from configuration.
//
// The stack, outermost first:
//   MetricsLlmClient      Prometheus metrics per call (when LlmDeps::metrics is set)
//   AccountingLlmClient   budgets + token/cost accounting (always)
//   CassetteLlmClient     record/replay (when cassette mode is record or replay)
//   HttpLlmClient         the provider over HTTP (absent in replay mode: no network)
//
// Configuration is a JSON object (all keys but "provider" and "model" optional; unknown
// keys are an error so typos do not pass silently); docs/llm.md documents every key:
//   {"provider": "openai" | "anthropic", "base_url": "...", "model": "...",
//    "api_key_env": "OPENAI_API_KEY", "api_key_file": "/run/secrets/key",
//    "anthropic_version": "2023-06-01", "max_tokens": 4096, "temperature": 0.2,
//    "timeout_s": 120, "connect_timeout_s": 10,
//    "retry": {"max_attempts": 4, "initial_backoff_s": 1, "max_backoff_s": 30,
//              "multiplier": 2, "total_timeout_s": 300, "max_retry_after_s": 120},
//    "breaker": {"failure_threshold": 5, "cooldown_s": 30},
//    "prices": {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0},
//    "budgets": {"job": {"max_tokens": 0, "max_cost_usd": 0},
//                "tenant": {"max_tokens": 0, "max_cost_usd": 0}},
//    "cassette": {"mode": "off" | "record" | "replay", "path": "..."},
//    "prompts_dir": "/etc/kagent/prompts"}
#ifndef KAGENT_COMMON_LLM_FACTORY_H_
#define KAGENT_COMMON_LLM_FACTORY_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/llm/accounting.h"
#include "common/llm/cassette.h"
#include "common/llm/circuit_breaker.h"
#include "common/llm/clock.h"
#include "common/llm/http_transport.h"
#include "common/llm/llm_client.h"
#include "common/llm/llm_metrics.h"
#include "common/llm/prompt_templates.h"
#include "common/llm/retry.h"
#include "nlohmann/json.hpp"

namespace kagent::llm {

struct LlmConfig {
  std::string provider;  // "openai" | "anthropic"
  std::string base_url;  // required unless cassette_mode is replay
  std::string model;
  std::string api_key_env;
  std::string api_key_file;
  std::string anthropic_version = "2023-06-01";
  int max_tokens = 4096;
  std::optional<double> temperature;
  absl::Duration timeout = absl::Seconds(120);
  absl::Duration connect_timeout = absl::Seconds(10);
  RetryPolicy retry;
  CircuitBreakerOptions breaker;
  Prices prices;
  Budget job_budget;
  Budget tenant_budget;
  CassetteMode cassette_mode = CassetteMode::kOff;
  std::string cassette_path;
  std::string prompts_dir;
  // Services probe the endpoint before they start (endpoint_probe.h); false skips it,
  // for endpoints without GET /v1/models.
  bool probe = true;
};

// Parses the JSON form above. INVALID_ARGUMENT naming the offending key.
absl::StatusOr<LlmConfig> ParseLlmConfig(const nlohmann::json& config);
absl::StatusOr<LlmConfig> ParseLlmConfigJson(absl::string_view json_text);

// INVALID_ARGUMENT when the configuration cannot make a client.
absl::Status ValidateLlmConfig(const LlmConfig& config);

// Shared pieces; null members are created for this client alone.
struct LlmDeps {
  // Shared across clients so a job's and a tenant's budgets cover every brain.
  std::shared_ptr<Accountant> accountant;
  // One breaker per endpoint across clients.
  std::shared_ptr<CircuitBreakerRegistry> breakers;
  std::shared_ptr<HttpTransport> transport;
  Clock* clock = nullptr;
  // The process's LLM metrics (llm_metrics.h); null: the stack exports none.
  std::shared_ptr<LlmMetrics> metrics;
};

struct LlmStack {
  std::shared_ptr<LlmClient> client;
  std::shared_ptr<Accountant> accountant;
  std::shared_ptr<PromptLibrary> prompts;
};

// Builds the stack. Loads the API key (FAILED_PRECONDITION when a named source is
// missing; not needed in replay mode); opens or loads the cassette.
absl::StatusOr<LlmStack> MakeLlmStack(const LlmConfig& config, LlmDeps deps = {});

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_FACTORY_H_
