// Configuration, key loading, and the whole stack over loopback: budgets that end a
// job, structured output with a re-ask, cassettes recorded and replayed.
#include "common/llm/factory.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/llm/api_key.h"
#include "common/llm/structured_output.h"
#include "common/llm/testing/fake_llm_server.h"

namespace kagent::llm {
namespace {

namespace fs = std::filesystem;
using testing::AnthropicReply;
using testing::FakeLlmServer;
using testing::OpenAiReply;
using testing::WireFormat;

fs::path TempPath(const std::string& name) {
  fs::path p = fs::temp_directory_path() / absl::StrCat("kagent_llm_", name, "_", ::getpid());
  fs::remove_all(p);
  return p;
}

ChatRequest Ask(const std::string& text, const std::string& job = "job-1") {
  ChatRequest r;
  r.messages.push_back({Role::kUser, text});
  r.job_id = job;
  r.tenant = "acme";
  return r;
}

TEST_CASE("config: every key parses", "[factory]") {
  auto c = ParseLlmConfigJson(R"({
    "provider": "anthropic", "base_url": "https://api.anthropic.com", "model": "claude-x",
    "api_key_env": "ANTHROPIC_API_KEY", "api_key_file": "/run/secrets/k",
    "anthropic_version": "2023-06-01", "max_tokens": 2048, "temperature": 0.3,
    "timeout_s": 90, "connect_timeout_s": 5,
    "retry": {"max_attempts": 5, "initial_backoff_s": 0.5, "max_backoff_s": 20,
              "multiplier": 3, "total_timeout_s": 600, "max_retry_after_s": 60},
    "breaker": {"failure_threshold": 4, "cooldown_s": 15},
    "prices": {"input_usd_per_mtok": 3, "output_usd_per_mtok": 15},
    "budgets": {"job": {"max_tokens": 100000, "max_cost_usd": 2.5},
                "tenant": {"max_cost_usd": 100}},
    "cassette": {"mode": "record", "path": "/tmp/c.jsonl"},
    "prompts_dir": "/etc/kagent/prompts"
  })");
  REQUIRE(c.ok());
  CHECK(c->provider == "anthropic");
  CHECK(c->max_tokens == 2048);
  CHECK(c->temperature == 0.3);
  CHECK(c->timeout == absl::Seconds(90));
  CHECK(c->retry.max_attempts == 5);
  CHECK(c->retry.initial_backoff == absl::Milliseconds(500));
  CHECK(c->retry.multiplier == 3);
  CHECK(c->breaker.failure_threshold == 4);
  CHECK(c->prices.output_usd_per_mtok == 15);
  CHECK(c->job_budget.max_tokens == 100000);
  CHECK(c->job_budget.max_cost_usd == 2.5);
  CHECK(c->tenant_budget.max_cost_usd == 100);
  CHECK(c->cassette_mode == CassetteMode::kRecord);
  CHECK(c->prompts_dir == "/etc/kagent/prompts");
}

TEST_CASE("config: bad input names the key", "[factory]") {
  auto unknown = ParseLlmConfigJson(R"({"provider":"openai","model":"m","base_url":"u","retyr":{}})");
  CHECK(absl::IsInvalidArgument(unknown.status()));
  CHECK(absl::StrContains(unknown.status().message(), "retyr"));
  auto nested = ParseLlmConfigJson(
      R"({"provider":"openai","model":"m","base_url":"u","retry":{"max_attempts":0}})");
  CHECK(absl::StrContains(nested.status().message(), "retry.max_attempts"));
  auto provider = ParseLlmConfigJson(R"({"provider":"gemini","model":"m","base_url":"u"})");
  CHECK(absl::StrContains(provider.status().message(), "provider"));
  CHECK(absl::IsInvalidArgument(ParseLlmConfigJson("{not json").status()));
  auto no_path = ParseLlmConfigJson(
      R"({"provider":"openai","model":"m","cassette":{"mode":"replay"}})");
  CHECK(absl::StrContains(no_path.status().message(), "cassette.path"));
}

TEST_CASE("API keys come from the environment or a file", "[factory][secrets]") {
  ::setenv("KAGENT_LLM_TEST_KEY", "  sk-env-1234  ", 1);
  CHECK(LoadApiKey({.env = "KAGENT_LLM_TEST_KEY", .file = ""}).value() == "sk-env-1234");
  ::unsetenv("KAGENT_LLM_TEST_KEY");
  auto missing = LoadApiKey({.env = "KAGENT_LLM_TEST_KEY", .file = ""});
  CHECK(absl::IsFailedPrecondition(missing.status()));
  CHECK(absl::StrContains(missing.status().message(), "KAGENT_LLM_TEST_KEY"));

  const fs::path file = TempPath("key");
  std::ofstream(file) << "sk-file-5678\n";
  CHECK(LoadApiKey({.env = "", .file = file.string()}).value() == "sk-file-5678");
  // The file is the fallback when the variable is unset.
  CHECK(LoadApiKey({.env = "KAGENT_LLM_TEST_KEY", .file = file.string()}).value() ==
        "sk-file-5678");
  fs::remove(file);
  CHECK(absl::IsFailedPrecondition(LoadApiKey({.env = "", .file = file.string()}).status()));
  CHECK(LoadApiKey({}).value().empty());
  CHECK(RedactSecret("key=sk-file-5678!", "sk-file-5678") == "key=[redacted]!");
}

TEST_CASE("a missing key fails the factory, not the first call", "[factory]") {
  LlmConfig c;
  c.provider = "openai";
  c.model = "m";
  c.base_url = "http://127.0.0.1:9";
  c.api_key_env = "KAGENT_LLM_TEST_UNSET_KEY";
  ::unsetenv("KAGENT_LLM_TEST_UNSET_KEY");
  CHECK(absl::IsFailedPrecondition(MakeLlmStack(c).status()));
}

TEST_CASE("the stack over loopback: budgets end a job cleanly", "[factory][budget]") {
  auto server = FakeLlmServer::Start(WireFormat::kAnthropic).value();
  ::setenv("KAGENT_LLM_TEST_KEY", "sk-ant-test-9999", 1);
  LlmConfig c;
  c.provider = "anthropic";
  c.model = "claude-test";
  c.base_url = server->base_url();
  c.api_key_env = "KAGENT_LLM_TEST_KEY";
  c.prices = {.input_usd_per_mtok = 3.0, .output_usd_per_mtok = 15.0};
  c.job_budget = {.max_tokens = 250};
  auto stack = MakeLlmStack(c);
  REQUIRE(stack.ok());
  server->SetDefault(AnthropicReply("fine", 100, 50));

  auto first = stack->client->Chat(Ask("one"));
  REQUIRE(first.ok());
  CHECK(first->cost_usd == Approx((100 * 3.0 + 50 * 15.0) / 1e6));
  REQUIRE(stack->client->Chat(Ask("two")).ok());  // 150 < 250
  auto third = stack->client->Chat(Ask("three"));  // 300 >= 250
  CHECK(absl::IsResourceExhausted(third.status()));
  CHECK(absl::StrContains(third.status().message(), "job job-1"));
  CHECK(server->request_count() == 2);  // the refused call never left the process
  CHECK(stack->client->Chat(Ask("other job", "job-2")).ok());

  AccountingSnapshot snap = stack->accountant->Snapshot();
  CHECK(snap.jobs["job-1"].tokens() == 300);
  CHECK(snap.jobs["job-1"].refused == 1);
  CHECK(snap.tenants["acme"].calls == 3);
  CHECK(server->requests()[0].Header("x-api-key") == "sk-ant-test-9999");
  ::unsetenv("KAGENT_LLM_TEST_KEY");
}

TEST_CASE("structured output over loopback: fenced, broken, then re-asked",
          "[factory][structured]") {
  auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
  LlmConfig c;
  c.provider = "openai";
  c.model = "m";
  c.base_url = server->base_url();
  auto stack = MakeLlmStack(c).value();
  // Prose and a fence around JSON that is cut off before "code" finishes.
  server->Enqueue(OpenAiReply(
      "Here you go:\n```json\n{\"explanation\": \"tiles\", \"code\": \"import tri", 50, 200,
      "m", "length"));
  // Then a usable reply with a trailing comma and a comment.
  server->Enqueue(OpenAiReply(
      "```json\n{\"explanation\": \"tiles\", // short\n \"code\": \"import triton\",\n}\n```"));
  auto r = ChatForJson(*stack.client, Ask("rewrite"),
                       {.required_keys = {"explanation", "code"}, .max_attempts = 3});
  REQUIRE(r.ok());
  CHECK(r->attempts == 2);
  CHECK(r->value["code"] == "import triton");
  auto received = server->requests();
  REQUIRE(received.size() == 2);
  auto second = received[1].Json();
  REQUIRE(second["messages"].size() == 3);
  CHECK(second["messages"][1]["role"] == "assistant");
  const std::string follow_up = second["messages"][2]["content"];
  CHECK(absl::StrContains(follow_up, "lacks required keys: code"));
  CHECK(absl::StrContains(follow_up, "cut off"));
  CHECK(stack.accountant->JobUsage("job-1").calls == 2);
}

TEST_CASE("cassette through the factory: record, stop the server, replay", "[factory][cassette]") {
  const fs::path path = TempPath("factory_cassette.jsonl");
  auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
  server->Enqueue(OpenAiReply("recorded", 40, 10));
  LlmConfig c;
  c.provider = "openai";
  c.model = "m";
  c.base_url = server->base_url();
  c.cassette_mode = CassetteMode::kRecord;
  c.cassette_path = path.string();
  c.job_budget = {.max_tokens = 60};
  {
    auto stack = MakeLlmStack(c).value();
    CHECK(stack.client->Chat(Ask("q")).value().content == "recorded");
  }
  server->Stop();

  c.cassette_mode = CassetteMode::kReplay;
  c.base_url.clear();  // not needed: replay never touches the network
  auto stack = MakeLlmStack(c).value();
  auto replayed = stack.client->Chat(Ask("q"));
  REQUIRE(replayed.ok());
  CHECK(replayed->content == "recorded");
  CHECK(replayed->from_cassette);
  // Replayed usage is charged too, so the budget ends the replayed job at the same point.
  CHECK(stack.accountant->JobUsage("job-1").tokens() == 50);
  auto miss = stack.client->Chat(Ask("q2", "job-2"));
  CHECK(absl::IsNotFound(miss.status()));
  CHECK(absl::StrContains(miss.status().message(), "has no response for request "));
  fs::remove(path);
}

TEST_CASE("the stack is safe to call from many threads", "[factory][threads]") {
  auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
  server->SetDefault(OpenAiReply("parallel", 3, 2));
  LlmConfig c;
  c.provider = "openai";
  c.model = "m";
  c.base_url = server->base_url();
  auto stack = MakeLlmStack(c).value();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) {
        if (stack.client->Chat(Ask("hi", absl::StrCat("job-", t % 2))).ok()) ++ok;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(ok == 40);
  CHECK(server->request_count() == 40);
  CHECK(stack.accountant->Snapshot().total.tokens() == 200);
  CHECK(stack.accountant->JobUsage("job-0").calls == 20);
}

}  // namespace
}  // namespace kagent::llm
