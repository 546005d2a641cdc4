// LLM client metrics: the stack of MakeLlmStack with LlmDeps::metrics against the loopback
// FakeLlmServer, read back from the prometheus-cpp registry; and the failure payload
// HttpLlmClient attaches (call_outcome.h).
#include "common/llm/llm_metrics.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/llm/call_outcome.h"
#include "common/llm/factory.h"
#include "common/llm/testing/fake_llm_server.h"

namespace kagent::llm {
namespace {

using testing::AnthropicReply;
using testing::FakeLlmServer;
using testing::OpenAiError;
using testing::OpenAiReply;
using testing::ScriptedResponse;
using testing::WireFormat;
using Labels = std::map<std::string, std::string>;

std::unique_ptr<FakeLlmServer> StartServer(WireFormat format) {
  auto server = FakeLlmServer::Start(format);
  REQUIRE(server.ok());
  return *std::move(server);
}

// A counter's value, or a histogram's sample count; -1 when the series does not exist.
double Value(prometheus::Registry& registry, const std::string& family, const Labels& labels) {
  for (const auto& f : registry.Collect()) {
    if (f.name != family) continue;
    for (const auto& m : f.metric) {
      Labels have;
      for (const auto& l : m.label) have[l.name] = l.value;
      if (have != labels) continue;
      if (f.type == prometheus::MetricType::Histogram) {
        return static_cast<double>(m.histogram.sample_count);
      }
      return m.counter.value;
    }
  }
  return -1;
}

double Requests(prometheus::Registry& r, const std::string& outcome,
                const std::string& provider = "openai") {
  return Value(r, "kagent_llm_requests_total", {{"provider", provider}, {"outcome", outcome}});
}
double Attempts(prometheus::Registry& r, const std::string& provider = "openai") {
  return Value(r, "kagent_llm_attempts_total", {{"provider", provider}});
}
double LatencySamples(prometheus::Registry& r, const std::string& provider = "openai") {
  return Value(r, "kagent_llm_request_seconds", {{"provider", provider}});
}

// Fast retries, a breaker out of the way, prices of $3 / $15 per million tokens.
LlmConfig Config(const FakeLlmServer& server, const std::string& provider = "openai") {
  LlmConfig c;
  c.provider = provider;
  c.base_url = server.base_url();
  c.model = "test-model";
  c.timeout = absl::Seconds(5);
  c.connect_timeout = absl::Seconds(2);
  c.retry.max_attempts = 2;
  c.retry.initial_backoff = absl::Milliseconds(5);
  c.retry.max_backoff = absl::Milliseconds(20);
  c.retry.total_timeout = absl::Seconds(10);
  c.breaker.failure_threshold = 100;
  c.prices.input_usd_per_mtok = 3;
  c.prices.output_usd_per_mtok = 15;
  return c;
}

std::shared_ptr<LlmClient> Client(const LlmConfig& config, prometheus::Registry& registry) {
  LlmDeps deps;
  deps.metrics = std::make_shared<LlmMetrics>(registry);
  auto stack = MakeLlmStack(config, deps);
  REQUIRE(stack.ok());
  return stack->client;
}

ChatRequest Ask(const std::string& job = "job-1") {
  ChatRequest r;
  r.messages.push_back({Role::kUser, "Say hello."});
  r.job_id = job;
  r.tenant = "acme";
  return r;
}

TEST_CASE("llm metrics: an ok call counts a request, its tokens, cost, attempt and latency",
          "[llm][metrics]") {
  auto server = StartServer(WireFormat::kOpenAi);
  prometheus::Registry registry;
  auto client = Client(Config(*server), registry);
  // The provider's series exist at 0 before the first call.
  CHECK(Requests(registry, "ok") == 0);
  CHECK(Value(registry, "kagent_llm_tokens_total", {{"provider", "openai"}, {"kind", "prompt"}}) == 0);
  CHECK(LatencySamples(registry) == 0);

  server->Enqueue(OpenAiReply("hello", /*prompt_tokens=*/120, /*completion_tokens=*/30));
  auto reply = client->Chat(Ask());
  REQUIRE(reply.ok());
  CHECK(Requests(registry, "ok") == 1);
  CHECK(Attempts(registry) == 1);
  CHECK(Value(registry, "kagent_llm_tokens_total", {{"provider", "openai"}, {"kind", "prompt"}}) == 120);
  CHECK(Value(registry, "kagent_llm_tokens_total", {{"provider", "openai"}, {"kind", "completion"}}) == 30);
  // (120 * 3 + 30 * 15) / 1e6
  CHECK(Value(registry, "kagent_llm_cost_usd_total", {{"provider", "openai"}}) ==
        Approx(810e-6));
  CHECK(LatencySamples(registry) == 1);
  // No other outcome appeared.
  CHECK(Requests(registry, "rate_limited") == -1);
  CHECK(Requests(registry, "server_error") == -1);
}

TEST_CASE("llm metrics: HTTP 429 counts rate_limited, or ok with two attempts after a retry",
          "[llm][metrics]") {
  auto server = StartServer(WireFormat::kOpenAi);
  prometheus::Registry registry;
  auto client = Client(Config(*server), registry);

  server->Enqueue(OpenAiError(429, "Rate limit reached", "rate_limit_error"));
  server->Enqueue(OpenAiReply("after the wait"));
  REQUIRE(client->Chat(Ask()).ok());
  CHECK(Requests(registry, "ok") == 1);  // calls, not attempts
  CHECK(Requests(registry, "rate_limited") == -1);
  CHECK(Attempts(registry) == 2);

  server->Enqueue(OpenAiError(429, "Rate limit reached", "rate_limit_error"));
  server->Enqueue(OpenAiError(429, "Rate limit reached", "rate_limit_error"));
  auto reply = client->Chat(Ask());
  CHECK(absl::IsUnavailable(reply.status()));
  CHECK(absl::StrContains(reply.status().message(), "Rate limit reached"));
  // The payload is internal to the stack: the caller's status carries none.
  CHECK(!reply.status().GetPayload(kLlmFailurePayloadUrl).has_value());
  CHECK(Requests(registry, "rate_limited") == 1);
  CHECK(Requests(registry, "ok") == 1);
  CHECK(Attempts(registry) == 4);
  CHECK(LatencySamples(registry) == 2);
  // A failed call adds no tokens.
  CHECK(Value(registry, "kagent_llm_tokens_total", {{"provider", "openai"}, {"kind", "prompt"}}) == 12);
  CHECK(server->request_count() == 4);
}

TEST_CASE("llm metrics: 5xx counts server_error, then an open breaker counts circuit_open",
          "[llm][metrics]") {
  auto server = StartServer(WireFormat::kOpenAi);
  prometheus::Registry registry;
  LlmConfig config = Config(*server);
  config.breaker.failure_threshold = 2;
  config.breaker.cooldown = absl::Seconds(60);
  auto client = Client(config, registry);

  server->Enqueue(OpenAiError(503, "overloaded", "server_error"));
  server->Enqueue(OpenAiError(500, "boom", "server_error"));
  auto first = client->Chat(Ask());
  CHECK(absl::IsUnavailable(first.status()));
  CHECK(Requests(registry, "server_error") == 1);
  CHECK(Attempts(registry) == 2);
  CHECK(LatencySamples(registry) == 1);

  // Two endpoint failures opened the breaker: the next call is refused without a request.
  auto second = client->Chat(Ask());
  CHECK(absl::IsUnavailable(second.status()));
  CHECK(absl::StrContains(second.status().message(), "circuit breaker"));
  CHECK(Requests(registry, "circuit_open") == 1);
  CHECK(Requests(registry, "server_error") == 1);
  CHECK(Attempts(registry) == 2);
  CHECK(LatencySamples(registry) == 1);  // refused before sending: no latency sample
  CHECK(server->request_count() == 2);
}

TEST_CASE("llm metrics: a spent budget counts budget_exhausted and is never sent",
          "[llm][metrics]") {
  auto server = StartServer(WireFormat::kOpenAi);
  prometheus::Registry registry;
  LlmConfig config = Config(*server);
  config.job_budget.max_tokens = 10;
  auto client = Client(config, registry);
  server->SetDefault(OpenAiReply("hello"));  // 12 + 7 tokens
  REQUIRE(client->Chat(Ask("job-b")).ok());
  auto refused = client->Chat(Ask("job-b"));
  CHECK(absl::IsResourceExhausted(refused.status()));
  CHECK(Requests(registry, "ok") == 1);
  CHECK(Requests(registry, "budget_exhausted") == 1);
  CHECK(Attempts(registry) == 1);
  CHECK(LatencySamples(registry) == 1);
  CHECK(server->request_count() == 1);
}

TEST_CASE("llm metrics: timeouts, bad bodies, dropped connections and 4xx by kind",
          "[llm][metrics]") {
  auto server = StartServer(WireFormat::kOpenAi);
  prometheus::Registry registry;
  LlmConfig config = Config(*server);
  config.retry.max_attempts = 1;
  config.timeout = absl::Milliseconds(200);
  auto client = Client(config, registry);

  server->Enqueue(OpenAiReply("too late").WithDelay(absl::Seconds(2)));
  CHECK(absl::IsDeadlineExceeded(client->Chat(Ask()).status()));
  CHECK(Requests(registry, "timeout") == 1);

  ScriptedResponse odd;
  odd.body = R"({"hello":"world"})";
  server->Enqueue(odd);
  CHECK(absl::IsInternal(client->Chat(Ask()).status()));
  CHECK(Requests(registry, "bad_response") == 1);

  server->Enqueue(OpenAiReply("x").WithFault(ScriptedResponse::Fault::kCloseWithoutResponse));
  CHECK(absl::IsUnavailable(client->Chat(Ask()).status()));
  CHECK(Requests(registry, "connection_error") == 1);

  server->Enqueue(OpenAiError(400, "bad request"));
  CHECK(absl::IsInvalidArgument(client->Chat(Ask()).status()));
  CHECK(Requests(registry, "invalid_request") == 1);

  server->Enqueue(OpenAiError(401, "no key", "authentication_error"));
  CHECK(absl::IsUnauthenticated(client->Chat(Ask()).status()));
  CHECK(Requests(registry, "auth_error") == 1);

  server->Enqueue(OpenAiError(404, "no such model", "not_found_error"));
  CHECK(absl::IsNotFound(client->Chat(Ask()).status()));
  CHECK(Requests(registry, "client_error") == 1);

  CHECK(Requests(registry, "ok") == 0);
  CHECK(Attempts(registry) == 6);
  CHECK(LatencySamples(registry) == 6);
}

TEST_CASE("llm metrics: two stacks on one registry share the provider's series",
          "[llm][metrics]") {
  auto server = StartServer(WireFormat::kAnthropic);
  prometheus::Registry registry;
  auto brain = Client(Config(*server, "anthropic"), registry);
  auto narrator = Client(Config(*server, "anthropic"), registry);
  server->SetDefault(AnthropicReply("hi", 20, 5));
  REQUIRE(brain->Chat(Ask()).ok());
  REQUIRE(narrator->Chat(Ask()).ok());
  CHECK(Requests(registry, "ok", "anthropic") == 2);
  CHECK(Value(registry, "kagent_llm_tokens_total",
              {{"provider", "anthropic"}, {"kind", "completion"}}) == 10);
  CHECK(Requests(registry, "ok", "openai") == -1);
}

TEST_CASE("llm metrics: replayed calls count ok without attempts, a miss counts not_found",
          "[llm][metrics]") {
  namespace fs = std::filesystem;
  const fs::path cassette =
      fs::temp_directory_path() / absl::StrCat("kagent_llm_metrics_", ::getpid(), ".jsonl");
  fs::remove(cassette);
  {
    auto server = StartServer(WireFormat::kOpenAi);
    server->Enqueue(OpenAiReply("recorded", 40, 10));
    LlmConfig config = Config(*server);
    config.cassette_mode = CassetteMode::kRecord;
    config.cassette_path = cassette.string();
    prometheus::Registry registry;
    REQUIRE(Client(config, registry)->Chat(Ask()).ok());
    CHECK(Requests(registry, "ok") == 1);
    CHECK(Attempts(registry) == 1);
  }
  LlmConfig config;
  config.provider = "openai";
  config.model = "test-model";
  config.retry.max_attempts = 2;
  config.cassette_mode = CassetteMode::kReplay;
  config.cassette_path = cassette.string();
  prometheus::Registry registry;
  auto client = Client(config, registry);
  REQUIRE(client->Chat(Ask()).ok());
  CHECK(Requests(registry, "ok") == 1);
  CHECK(Attempts(registry) == 0);
  CHECK(Value(registry, "kagent_llm_tokens_total", {{"provider", "openai"}, {"kind", "prompt"}}) == 40);
  CHECK(LatencySamples(registry) == 1);
  ChatRequest other = Ask();
  other.messages[0].content = "never recorded";
  CHECK(absl::IsNotFound(client->Chat(other).status()));
  CHECK(Requests(registry, "not_found") == 1);
  fs::remove(cassette);
}

TEST_CASE("call outcome: HTTP statuses, codes and the payload round trip", "[llm][metrics]") {
  CHECK(OutcomeOfHttpStatus(429) == LlmOutcome::kRateLimited);
  CHECK(OutcomeOfHttpStatus(500) == LlmOutcome::kServerError);
  CHECK(OutcomeOfHttpStatus(529) == LlmOutcome::kServerError);
  CHECK(OutcomeOfHttpStatus(504) == LlmOutcome::kTimeout);
  CHECK(OutcomeOfHttpStatus(408) == LlmOutcome::kTimeout);
  CHECK(OutcomeOfHttpStatus(422) == LlmOutcome::kInvalidRequest);
  CHECK(OutcomeOfHttpStatus(403) == LlmOutcome::kAuthError);
  CHECK(OutcomeOfHttpStatus(404) == LlmOutcome::kClientError);

  absl::Status status = absl::UnavailableError("x");
  CHECK(LlmFailureOf(status).outcome == LlmOutcome::kUnavailable);
  CHECK(LlmFailureOf(status).attempts == -1);
  AttachLlmFailure(LlmOutcome::kRateLimited, 3, &status);
  CHECK(LlmFailureOf(status).outcome == LlmOutcome::kRateLimited);
  CHECK(LlmFailureOf(status).attempts == 3);
  CHECK(status.message() == "x");
  ClearLlmFailure(&status);
  CHECK(LlmFailureOf(status).outcome == LlmOutcome::kUnavailable);

  CHECK(LlmFailureOf(absl::ResourceExhaustedError("budget")).outcome ==
        LlmOutcome::kBudgetExhausted);
  absl::Status ok;
  AttachLlmFailure(LlmOutcome::kServerError, 1, &ok);
  CHECK(ok.ok());
  CHECK(LlmFailureOf(ok).outcome == LlmOutcome::kOk);
  // Every outcome's name is a distinct label value.
  std::set<std::string> names;
  for (int i = 0; i <= static_cast<int>(LlmOutcome::kOther); ++i) {
    names.insert(std::string(LlmOutcomeName(static_cast<LlmOutcome>(i))));
  }
  CHECK(names.size() == static_cast<size_t>(LlmOutcome::kOther) + 1);
}

}  // namespace
}  // namespace kagent::llm
