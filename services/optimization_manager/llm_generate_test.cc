// The optimization manager running the LLM brain against the loopback FakeLlmServer:
// the job's and the request's LLM budgets as the RPC's status and usage, and the
// BrainRouter's brains by name.
#include <catch2/catch.hpp>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/llm/testing/fake_llm_server.h"
#include "common/llm/usage_status.h"
#include "engines/heuristic/heuristic_brain.h"
#include "engines/heuristic/template_library.h"
#include "engines/llm/testing/llm_test_rig.h"
#include "services/optimization_manager/optimization_manager_service.h"
#include "services/optimization_manager/optimization_manager_setup.h"

namespace kagent {
namespace {

using llm_testing::Answer;
using llm_testing::FormatName;
using llm_testing::Kernel;
using llm_testing::kCallCost;
using llm_testing::kCallTokens;
using llm_testing::MakeRig;
using llm_testing::Reply;
using llm_testing::Rig;
using llm_testing::RoundRequest;
using llm_testing::WireFormat;
using llm_testing::WithPrices;
using llm::testing::AnthropicError;
using llm::testing::OpenAiError;
using llm::testing::OpenAiReply;
using llm_testing::VllmBadRequest;
using llm_testing::VllmModelNotFound;

#define ANY_FORMAT() GENERATE(WireFormat::kOpenAi, WireFormat::kAnthropic)

TEST_CASE("LLM brain: a spent budget is the optimization manager's RPC status", "[llm_brain][budget]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  // 19 tokens a call: the first call crosses 15 (a call is admitted while the job is
  // under budget), the next is refused before it is sent.
  Rig rig = MakeRig(f, [](llm::LlmConfig& c) { c.job_budget = {.max_tokens = 15}; });
  rig.server->SetDefault(Reply(f, Answer(Kernel("budget"))));
  OptimizationManagerOptions mo;
  mo.max_parallel_workers = 1;
  OptimizationManagerServiceImpl svc(mo, rig.brain.get(), nullptr, nullptr);

  v1::GenerateResponse first;
  REQUIRE(svc.DoGenerate(RoundRequest("job-b", "llm", 1), &first).ok());
  REQUIRE(first.kernels_size() == 1);
  CHECK(first.kernels(0).kernel().source() == Kernel("budget"));
  CHECK_THAT(first.kernels(0).prompt(), Catch::Contains("The fix to apply: fix 0"));
  CHECK(first.kernels(0).reply() == Answer(Kernel("budget")));
  CHECK(rig.stack.accountant->JobUsage("job-b").tokens() == 19);

  v1::GenerateResponse second;
  absl::Status s = svc.DoGenerate(RoundRequest("job-b", "llm", 3), &second);
  CHECK(absl::IsResourceExhausted(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("job-b"));
  CHECK(second.kernels_size() == 0);
  CHECK(rig.server->request_count() == 1);  // the refused call stops the round: nothing sent
  CHECK(rig.stack.accountant->JobUsage("job-b").refused == 1);
  // Another job still has its budget.
  v1::GenerateResponse other;
  CHECK(svc.DoGenerate(RoundRequest("job-c", "llm", 1), &other).ok());
  CHECK(other.kernels(0).has_kernel());
}

TEST_CASE("LLM brain: the request's LLM budget bounds its calls, the reply counts them",
          "[llm_brain][budget]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f, [](llm::LlmConfig& c) { WithPrices(c); });  // no configured budget
  rig.server->SetDefault(Reply(f, Answer(Kernel("metered"))));
  OptimizationManagerOptions mo;
  mo.max_parallel_workers = 1;
  OptimizationManagerServiceImpl svc(mo, rig.brain.get(), nullptr, nullptr);

  // No limit in the request: three calls, all reported.
  v1::GenerateResponse open;
  REQUIRE(svc.DoGenerate(RoundRequest("job-m", "llm", 3), &open).ok());
  CHECK(open.llm_usage().calls() == 3);
  CHECK(open.llm_usage().input_tokens() == 3 * 12);
  CHECK(open.llm_usage().output_tokens() == 3 * 7);
  CHECK(open.llm_usage().cost_usd() == Approx(3 * kCallCost));
  CHECK(rig.server->request_count() == 3);

  // 30 tokens left: the 2nd call crosses the line, the 3rd is refused and never sent.
  v1::GenerateRequest tokens = RoundRequest("job-m", "llm", 3);
  tokens.set_llm_tokens_left(30);
  v1::GenerateResponse partial;
  absl::Status s = svc.DoGenerate(tokens, &partial);
  REQUIRE(absl::IsResourceExhausted(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("job job-m"));
  CHECK_THAT(std::string(s.message()), Catch::Contains("38 of 30 tokens"));
  CHECK(rig.server->request_count() == 5);
  std::optional<v1::LlmUsage> spent = llm::LlmUsageOf(s);
  REQUIRE(spent.has_value());
  CHECK(spent->calls() == 2);
  CHECK(spent->input_tokens() + spent->output_tokens() == 2 * kCallTokens);
  CHECK(spent->cost_usd() == Approx(2 * kCallCost));
  CHECK(partial.llm_usage().calls() == 2);
  // The Accountant saw every call; the per-request limit is not a job budget.
  CHECK(rig.stack.accountant->JobUsage("job-m").calls == 5);

  // Nothing left: refused before anything is sent; no usage to report.
  v1::GenerateRequest none = RoundRequest("job-m", "llm", 2);
  none.set_llm_tokens_left(0);
  v1::GenerateResponse nothing;
  s = svc.DoGenerate(none, &nothing);
  CHECK(absl::IsResourceExhausted(s));
  CHECK_FALSE(llm::LlmUsageOf(s).has_value());
  CHECK(rig.server->request_count() == 5);

  // A cost limit: $0.03 admits two calls of $0.026.
  v1::GenerateRequest cost = RoundRequest("job-m", "llm", 3);
  cost.set_llm_cost_usd_left(0.03);
  v1::GenerateResponse costly;
  s = svc.DoGenerate(cost, &costly);
  CHECK(absl::IsResourceExhausted(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("LLM cost budget"));
  REQUIRE(llm::LlmUsageOf(s).has_value());
  CHECK(llm::LlmUsageOf(s)->calls() == 2);
  CHECK(rig.server->request_count() == 7);

  // Enough left: OK, and the usage is in the reply.
  v1::GenerateRequest plenty = RoundRequest("job-m", "llm", 2);
  plenty.set_llm_tokens_left(1000);
  plenty.set_llm_cost_usd_left(1.0);
  v1::GenerateResponse fine;
  REQUIRE(svc.DoGenerate(plenty, &fine).ok());
  CHECK(fine.llm_usage().calls() == 2);
  CHECK(fine.kernels(0).has_kernel());
}

TEST_CASE("BrainRouter: brains by name, aliases, unknown names", "[llm_brain][router]") {
  Rig rig = MakeRig(WireFormat::kOpenAi);
  rig.server->SetDefault(OpenAiReply(Answer(Kernel("routed"))));
  HeuristicBrain heuristic(TemplateLibrary::Embedded().value());
  OptimizationManagerOptions mo;
  mo.check_sources = false;
  BrainRouter router("heuristic", nullptr);
  router.Add("heuristic", std::make_unique<OptimizationManagerServiceImpl>(mo, &heuristic, nullptr, nullptr));
  router.Add("llm", std::make_unique<OptimizationManagerServiceImpl>(mo, rig.brain.get(), nullptr, nullptr),
             {"openai"});
  CHECK(router.Names() == std::vector<std::string>{"heuristic", "llm", "openai"});

  for (const char* name : {"llm", "openai"}) {
    v1::GenerateResponse out;
    REQUIRE(router.DoGenerate(RoundRequest("job-r", name, 1), &out).ok());
    REQUIRE(out.kernels_size() == 1);
    INFO(out.kernels(0).error());
    CHECK(out.kernels(0).kernel().origin() == "brain:llm");
  }
  CHECK(rig.server->request_count() == 2);

  v1::GenerateResponse out;
  absl::Status s = router.DoGenerate(RoundRequest("job-r", "gpt-9", 1), &out);
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("unknown brain 'gpt-9'"));
  CHECK_THAT(std::string(s.message()), Catch::Contains("heuristic, llm, openai"));
  CHECK(rig.server->request_count() == 2);
}

TEST_CASE("LLM brain: the endpoint's failures are flagged as the endpoint's, not the fix's",
          "[llm_brain][endpoint]") {
  Rig rig = MakeRig(WireFormat::kOpenAi);
  OptimizationManagerOptions mo;
  mo.max_parallel_workers = 2;
  mo.check_sources = false;
  OptimizationManagerServiceImpl svc(mo, rig.brain.get(), nullptr, nullptr);
  auto generate = [&](llm::testing::ScriptedResponse answer) {
    rig.server->SetDefault(std::move(answer));
    v1::GenerateResponse out;
    REQUIRE(svc.DoGenerate(RoundRequest("job-e", "llm", 2), &out).ok());
    REQUIRE(out.kernels_size() == 2);
    return out;
  };

  SECTION("vLLM's 404 for a model it does not serve is permanent") {
    v1::GenerateResponse out = generate(VllmModelNotFound("test-model"));
    for (const auto& k : out.kernels()) {
      CHECK_FALSE(k.has_kernel());
      REQUIRE(k.has_endpoint_failure());
      CHECK(k.endpoint_failure().permanent());
      CHECK_THAT(k.endpoint_failure().message(),
                 Catch::StartsWith("NOT_FOUND: llm brain (rewrite_kernel)"));
      CHECK_THAT(k.endpoint_failure().message(),
                 Catch::Contains("The model `test-model` does not exist."));
      CHECK_THAT(k.endpoint_failure().message(), Catch::Contains("HTTP 404"));
      CHECK(k.endpoint_failure().retry_after_seconds() == 0);
      CHECK_THAT(k.error(), Catch::StartsWith("generation failed: NOT_FOUND"));
    }
  }
  SECTION("a refused key is permanent") {
    v1::GenerateResponse out = generate(OpenAiError(401, "Incorrect API key provided"));
    CHECK(out.kernels(0).endpoint_failure().permanent());
    CHECK_THAT(out.kernels(0).endpoint_failure().message(), Catch::StartsWith("UNAUTHENTICATED"));
  }
  SECTION("an unavailable endpoint is transient") {
    v1::GenerateResponse out = generate(OpenAiError(503, "overloaded", "server_error"));
    REQUIRE(out.kernels(1).has_endpoint_failure());
    CHECK_FALSE(out.kernels(1).endpoint_failure().permanent());
    CHECK_THAT(out.kernels(1).endpoint_failure().message(), Catch::StartsWith("UNAVAILABLE"));
  }
  SECTION("a quota's long Retry-After travels with the failure") {
    v1::GenerateResponse out = generate(
        OpenAiError(429, "You exceeded your current quota", "insufficient_quota")
            .WithHeader("Retry-After", "600"));
    REQUIRE(out.kernels(0).has_endpoint_failure());
    CHECK_FALSE(out.kernels(0).endpoint_failure().permanent());
    CHECK(out.kernels(0).endpoint_failure().retry_after_seconds() == 600);
  }
  SECTION("vLLM's 400 is the request's problem, not the endpoint's") {
    v1::GenerateResponse out = generate(VllmBadRequest(
        "This model's maximum context length is 8192 tokens. However, you requested 9000 "
        "tokens. Please reduce the length of the messages or completion."));
    for (const auto& k : out.kernels()) {
      CHECK_FALSE(k.has_endpoint_failure());
      CHECK_THAT(k.error(), Catch::Contains("maximum context length"));
    }
  }
  SECTION("unusable replies are the model's, not the endpoint's") {
    v1::GenerateResponse out = generate(OpenAiReply("I would rather not."));
    for (const auto& k : out.kernels()) {
      CHECK_FALSE(k.has_endpoint_failure());
      CHECK_THAT(k.error(), Catch::Contains("generation failed: INTERNAL"));
      // The record keeps what was asked and both unusable replies.
      CHECK_THAT(k.prompt(), Catch::Contains("[user]\nApply one optimization"));
      CHECK(k.reply() == "[reply 1]\nI would rather not.\n\n[reply 2]\nI would rather not.");
    }
  }
  SECTION("code that is no kernel, twice: both replies are kept") {
    const std::string answer = Answer("print('no kernel here')\n");
    v1::GenerateResponse out = generate(OpenAiReply(answer));
    for (const auto& k : out.kernels()) {
      CHECK_FALSE(k.has_kernel());
      CHECK_THAT(k.error(), Catch::Contains("unusable after 2 questions"));
      // The prompt is the last question's conversation: the first reply and the
      // complaint about it are in it.
      CHECK_THAT(k.prompt(), Catch::Contains("[assistant]\n"));
      CHECK_THAT(k.prompt(), Catch::Contains("Your code cannot be used"));
      CHECK(k.reply() == absl::StrCat("[reply 1]\n", answer, "\n\n[reply 2]\n", answer));
    }
  }
}

TEST_CASE("LLM brain: a rewrite that left the named knob as it was is recorded as a fallback",
          "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  OptimizationManagerOptions mo;
  mo.check_sources = false;
  OptimizationManagerServiceImpl svc(mo, rig.brain.get(), nullptr, nullptr);
  // The parent and the reply both launch with BLOCK=1024.
  rig.server->SetDefault(Reply(f, Answer(Kernel("v2"))));
  v1::GenerateRequest g = RoundRequest("job-k", "llm", 1);
  v1::Prescription* p = g.mutable_plan()->mutable_assignments(0)->mutable_prescription();
  (*p->mutable_knob_changes())["BLOCK"] = "4096";
  p->set_expected_speedup(1.4);
  v1::GenerateResponse out;
  REQUIRE(svc.DoGenerate(g, &out).ok());
  REQUIRE(out.kernels_size() == 1);
  const v1::Prescription& rx = out.kernels(0).assignment().prescription();
  // The reflexion judges the move made, not the pattern (reflexion.cc: a fallback's
  // pattern is kept off the avoid-list), and expects no speedup of it.
  CHECK_THAT(rx.fallback(), Catch::StartsWith("the rewrite left BLOCK = 1024 as the parent had it"));
  CHECK(rx.expected_speedup() == 1.0);
  CHECK_THAT(rx.fix(), Catch::Contains("llm rewrite: fix 0"));
}

TEST_CASE("LLM brain: Anthropic's 404 for an unknown model is permanent", "[llm_brain][endpoint]") {
  Rig rig = MakeRig(WireFormat::kAnthropic);
  rig.server->SetDefault(AnthropicError(404, "not_found_error", "model: claude-none"));
  OptimizationManagerOptions mo;
  mo.check_sources = false;
  OptimizationManagerServiceImpl svc(mo, rig.brain.get(), nullptr, nullptr);
  v1::GenerateResponse out;
  REQUIRE(svc.DoGenerate(RoundRequest("job-a", "llm", 1), &out).ok());
  REQUIRE(out.kernels(0).has_endpoint_failure());
  CHECK(out.kernels(0).endpoint_failure().permanent());
  CHECK_THAT(out.kernels(0).endpoint_failure().message(), Catch::Contains("model: claude-none"));
}

}  // namespace
}  // namespace kagent
