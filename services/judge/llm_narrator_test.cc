// LlmNarrator against the loopback FakeLlmServer (both wire formats), alone and inside
// the judge, whose ValidateNarrative keeps only citations that match the profile.
#include "engines/llm/llm_narrator.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/llm/factory.h"
#include "common/llm/testing/fake_llm_server.h"
#include "common/logging.h"
#include "common/testing/fixtures.h"
#include "engines/llm/prompt_values.h"
#include "kernel_model/metric_names.h"
#include "nlohmann/json.hpp"
#include "services/judge/judge.h"
#include "services/judge/narrator.h"

namespace kagent {
namespace {

using llm::testing::AnthropicReply;
using llm::testing::FakeLlmServer;
using llm::testing::OpenAiReply;
using llm::testing::WireFormat;

v1::DiagnoseRequest GemvRequest() {
  v1::DiagnoseRequest request;
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gemv_memory_bound.json",
                                   request.mutable_metrics()).ok());
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gpu_h200.json",
                                   request.mutable_gpu()).ok());
  request.mutable_op_signature()->set_op_class("matvec");
  return request;
}

struct NarratorRig {
  std::unique_ptr<FakeLlmServer> server;
  llm::LlmStack stack;
  std::unique_ptr<LlmNarrator> narrator;
};

NarratorRig MakeNarratorRig(WireFormat f) {
  NarratorRig rig;
  rig.server = FakeLlmServer::Start(f).value();
  llm::LlmConfig c;
  c.provider = f == WireFormat::kOpenAi ? "openai" : "anthropic";
  c.model = "test-model";
  c.base_url = rig.server->base_url();
  c.retry.max_attempts = 1;
  rig.stack = llm::MakeLlmStack(c).value();
  rig.narrator = std::make_unique<LlmNarrator>(
      rig.stack.client, rig.stack.prompts,
      LlmNarratorOptions{.name = absl::StrCat("llm:", c.provider), .gpu = "NVIDIA H200 (sm_90)"});
  return rig;
}

void Enqueue(NarratorRig& rig, WireFormat f, const std::string& content) {
  rig.server->Enqueue(f == WireFormat::kOpenAi ? OpenAiReply(content) : AnthropicReply(content));
}

std::string UserPrompt(WireFormat f, const llm::testing::ReceivedRequest& r) {
  nlohmann::json messages = r.Json()["messages"];
  return messages[f == WireFormat::kOpenAi ? 1 : 0]["content"].get<std::string>();
}

TEST_CASE("LLM narrator: narrative and causes over loopback", "[llm_narrator]") {
  const WireFormat f = GENERATE(WireFormat::kOpenAi, WireFormat::kAnthropic);
  NarratorRig rig = MakeNarratorRig(f);
  v1::DiagnoseRequest request = GemvRequest();
  v1::BottleneckReport report;
  report.set_primary(v1::BOTTLENECK_MEMORY_BOUND);
  report.set_dominant_kernel("matvec_kernel");
  nlohmann::json answer = {
      {"narrative", "DRAM runs at 89.7% of peak (dram__throughput.avg.pct_of_peak_sustained_elapsed)."},
      {"additional_causes",
       {{{"metric", metric::kDramThroughput}, {"value", 89.7}, {"explanation", "HBM saturated"}},
        {{"metric", metric::kL2HitRate}, {"value", "2.9%"}, {"explanation", "no L2 reuse"}},
        {{"metric", "no_value"}, {"explanation", "left out: nothing cited"}}}}};
  Enqueue(rig, f, absl::StrCat("```json\n", answer.dump(), "\n```"));
  LogScope scope({.job_id = "job-n", .request_id = "", .tenant = "acme"});
  auto r = rig.narrator->Narrate(report, request.metrics(), /*gpu=*/nullptr);  // the configured words
  REQUIRE(r.ok());
  CHECK_THAT(r->narrative, Catch::Contains("89.7%"));
  REQUIRE(r->extra_root_causes.size() == 2);
  CHECK(r->extra_root_causes[0].cause() == "HBM saturated");
  CHECK(r->extra_root_causes[0].source() == "llm");
  REQUIRE(r->extra_root_causes[0].evidence_size() == 1);
  CHECK(r->extra_root_causes[0].evidence(0).metric() == metric::kDramThroughput);
  CHECK(r->extra_root_causes[0].evidence(0).value() == Approx(89.7));
  CHECK(r->extra_root_causes[1].evidence(0).value() == Approx(2.9));
  CHECK(rig.narrator->Name() == (f == WireFormat::kOpenAi ? "llm:openai" : "llm:anthropic"));
  // The record: the conversation sent (system and user) and the reply.
  CHECK_THAT(r->prompt, Catch::StartsWith("[system]"));
  CHECK_THAT(r->prompt, Catch::Contains("dram__throughput.avg.pct_of_peak_sustained_elapsed = 89.7\n"));
  CHECK_THAT(r->reply, Catch::Contains("HBM saturated"));

  const std::string prompt = UserPrompt(f, rig.server->requests().at(0));
  CHECK_THAT(prompt, Catch::Contains("Kernel: matvec_kernel"));
  CHECK_THAT(prompt, Catch::Contains("Category (fixed): memory-bound"));
  CHECK_THAT(prompt, Catch::Contains("NVIDIA H200 (sm_90)"));
  CHECK_THAT(prompt, Catch::Contains("dram__throughput.avg.pct_of_peak_sustained_elapsed = 89.7\n"));
  CHECK(rig.stack.accountant->JobUsage("job-n").calls == 1);
}

TEST_CASE("LLM narrator inside the judge: wrong citations dropped, category kept",
          "[llm_narrator]") {
  const WireFormat f = GENERATE(WireFormat::kOpenAi, WireFormat::kAnthropic);
  NarratorRig rig = MakeNarratorRig(f);
  v1::DiagnoseRequest request = GemvRequest();
  nlohmann::json answer = {
      {"narrative",
       "The kernel streams the matrix once. "
       "dram__throughput.avg.pct_of_peak_sustained_elapsed is 89.7, near the roofline. "
       "The L2 hit rate lts__t_sector_hit_rate.pct is 60."},
      {"additional_causes",
       {{{"metric", metric::kDramThroughput}, {"value", 89.7}, {"explanation", "HBM saturated"}},
        {{"metric", metric::kL2HitRate}, {"value", 60}, {"explanation", "invented"}},
        {{"metric", "made__up.metric"}, {"value", 1}, {"explanation", "not in the profile"}}}}};
  Enqueue(rig, f, answer.dump());
  Judge with_llm(JudgeOptions{}, rig.narrator.get());
  v1::AgentExchange exchange;
  auto report = with_llm.Diagnose(request, &exchange);
  v1::AgentExchange untouched;
  auto baseline = Judge().Diagnose(request, &untouched);
  REQUIRE(report.ok());
  REQUIRE(baseline.ok());
  CHECK(exchange.agent() == "narrate");
  CHECK(exchange.brain() == rig.narrator->Name());
  CHECK_THAT(exchange.prompt(), Catch::Contains("Category (fixed): memory-bound"));
  // {{gpu}} from the request's spec (name and ceilings), not the configured words.
  CHECK_THAT(exchange.prompt(), Catch::Contains(llm_engine::DescribeGpu(&request.gpu())));
  CHECK_THAT(exchange.prompt(), Catch::Contains(" SMs, "));
  CHECK_THAT(exchange.reply(), Catch::Contains("streams the matrix once"));
  CHECK(exchange.fallback().empty());
  CHECK(untouched.agent().empty());  // the heuristic narrator has no exchange
  CHECK(untouched.prompt().empty());
  CHECK(report->primary() == baseline->primary());
  CHECK(report->limiter() == baseline->limiter());
  REQUIRE(report->root_causes_size() == baseline->root_causes_size() + 1);
  CHECK(report->root_causes(baseline->root_causes_size()).cause() == "HBM saturated");
  CHECK_THAT(report->narrative(), Catch::Contains("streams the matrix once"));
  CHECK_THAT(report->narrative(), Catch::Contains("near the roofline"));
  CHECK_THAT(report->narrative(), !Catch::Contains("is 60"));

  // A failing provider: the judge falls back to the heuristic narrative.
  rig.server->Enqueue(f == WireFormat::kOpenAi ? llm::testing::OpenAiError(400, "bad")
                                               : llm::testing::AnthropicError(400, "invalid_request_error", "bad"));
  v1::AgentExchange failed;
  auto fallback = with_llm.Diagnose(request, &failed);
  REQUIRE(fallback.ok());
  CHECK(fallback->narrative() == baseline->narrative());
  CHECK(failed.agent() == "narrate");
  CHECK_THAT(failed.fallback(), Catch::Contains("narrate: "));
  CHECK_THAT(failed.prompt(), Catch::Contains("Category (fixed): memory-bound"));  // still recorded
}

TEST_CASE("LLM narrator without a profile: the prompt says so, only measured facts may be cited",
          "[llm_narrator]") {
  const WireFormat f = GENERATE(WireFormat::kOpenAi, WireFormat::kAnthropic);
  NarratorRig rig = MakeNarratorRig(f);
  v1::DiagnoseRequest request;
  request.set_no_profile_reason("it ran on a CPU worker (Triton's interpreter has no hardware counters)");
  request.mutable_op_signature()->set_op_class("matvec");
  request.mutable_measurement()->set_gpu_name("cpu");
  request.mutable_measurement()->mutable_candidate()->set_median_ms(2);
  request.mutable_measurement()->mutable_eager()->set_median_ms(3);
  nlohmann::json answer = {
      {"narrative",
       "Only times are known. At kernel__speedup_vs_eager = 1.5 the kernel beats eager. "
       "It saturates DRAM at dram__throughput.avg.pct_of_peak_sustained_elapsed 91."},
      {"additional_causes",
       {{{"metric", kFactSpeedupVsEager}, {"value", 1.5}, {"explanation", "faster than eager"}},
        {{"metric", metric::kDramThroughput}, {"value", 91}, {"explanation", "guessed"}}}}};
  Judge with_llm(JudgeOptions{}, rig.narrator.get());
  SECTION("narrated by the LLM") {
    Enqueue(rig, f, answer.dump());
    absl::StatusOr<v1::BottleneckReport> report = with_llm.Diagnose(request);
    REQUIRE(report.ok());
    CHECK(report->primary() == v1::BOTTLENECK_CATEGORY_UNSPECIFIED);
    CHECK(report->narrative() == "Only times are known. At kernel__speedup_vs_eager = 1.5 the kernel beats eager.");
    REQUIRE(report->root_causes_size() == 1);
    CHECK(report->root_causes(0).evidence(0).metric() == kFactSpeedupVsEager);
    CHECK(report->root_causes(0).source() == "llm");

    REQUIRE(rig.server->request_count() == 1);
    const std::string prompt = UserPrompt(f, rig.server->requests().at(0));
    CHECK_THAT(prompt, Catch::Contains("No hardware counters exist for this kernel: it ran on a CPU "
                                       "worker (Triton's interpreter has no hardware counters)."));
    CHECK_THAT(prompt, Catch::Contains("do not cite or guess counter values"));
    CHECK_THAT(prompt, Catch::Contains("Kernel: the matvec kernel"));
    CHECK_THAT(prompt, Catch::Contains("op class: matvec\n"));
    CHECK_THAT(prompt, Catch::Contains("kernel__median_ms = 2\n"));
    CHECK_THAT(prompt, Catch::Contains("eager__median_ms = 3\n"));
    CHECK_THAT(prompt, Catch::Contains("kernel__speedup_vs_eager = 1.5"));
    CHECK_THAT(prompt, !Catch::Contains("torch_compile__median_ms"));  // not measured
    CHECK_THAT(prompt, Catch::Contains("Triton's CPU interpreter"));     // {{gpu}} of a CPU worker
    CHECK_THAT(prompt, !Catch::Contains("NVIDIA H200"));
    CHECK_THAT(prompt, !Catch::Contains("{{"));
  }
  SECTION("a job that chose other agents: the heuristic narrative, no call") {
    request.add_llm_agents("reflect");
    absl::StatusOr<v1::BottleneckReport> report = with_llm.Diagnose(request);
    REQUIRE(report.ok());
    CHECK_THAT(report->narrative(), Catch::StartsWith("No hardware counters: it ran on a CPU worker"));
    CHECK(report->root_causes().empty());
    CHECK(rig.server->request_count() == 0);
  }
}

}  // namespace
}  // namespace kagent
