// LlmRoundPlanner (llm_planner.h) over the loopback FakeLlmServer: the prompt carries the
// beam kernels' medians and ratios to eager and torch.compile, their diagnoses, the offered fixes, the excluded pairs with their reasons, the lessons and the
// budget; a valid plan is used in the model's order; entries naming an unknown kernel or
// fix, an excluded pair, a pair twice, one past fixes_per_kernel or past the budget are
// dropped with their reasons; an unusable reply, a plan with nothing left and a provider
// error are errors carrying the exchange (the orchestrator then uses the heuristic plan).
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/llm/testing/fake_llm_server.h"
#include "common/llm/transcript_status.h"
#include "engines/llm/llm_planner.h"
#include "engines/llm/testing/llm_test_rig.h"

namespace kagent {
namespace {

using llm::testing::OpenAiError;
using llm::testing::OpenAiReply;
using llm::testing::WireFormat;

v1::Prescription Fix(const std::string& id, double speedup) {
  v1::Prescription p;
  p.set_pattern_id(id);
  p.set_title(id + " title");
  p.set_expected_speedup(speedup);
  p.set_expected_effect(id + " moves DRAM throughput");
  return p;
}

// Kernel c0 (best) offers split-k; row-per-program was tried on it and vectorize is
// avoided. Kernel c1 offers split-k, tile-64 and unroll. M = 2.
struct Planned {
  v1::PlanRoundRequest request;
  RoundPlanInput input;
  Planned() {
    request.set_job_id("job-plan");
    request.set_round(3);
    request.set_fixes_per_kernel(2);
    v1::Reflexion* r = request.add_memory();
    r->set_round(2);
    r->set_parent_id("c0");
    r->set_pattern_id("row-per-program");
    r->set_actual_speedup(0.91);
    r->set_lesson("row-per-program lost 9% on c0: the loads were not coalesced");
    r->add_avoid_patterns("vectorize");
    v1::BeamEntry* best = request.add_beam();
    best->set_kernel_id("c0");
    best->mutable_measurement()->mutable_candidate()->set_median_ms(0.2);
    best->mutable_measurement()->mutable_eager()->set_median_ms(0.5);
    best->mutable_measurement()->mutable_compiled()->set_median_ms(0.4);
    best->mutable_measurement()->set_gpu_name("NVIDIA H200");
    best->mutable_report()->set_primary(v1::BOTTLENECK_MEMORY_BOUND);
    best->mutable_report()->set_summary("DRAM throughput at 41% of peak");
    request.add_beam()->set_kernel_id("c1");
    auto add = [&](const std::string& parent, const v1::Prescription& p, const std::string& excluded) {
      input.options.push_back(PlanOption{parent, p, excluded});
    };
    add("c0", Fix("split-k", 1.4), "");
    add("c0", Fix("row-per-program", 1.2), "already tried on this kernel");
    add("c0", Fix("vectorize", 1.1), "on the avoid-list");
    add("c1", Fix("split-k", 1.3), "");
    add("c1", Fix("tile-64", 1.2), "");
    add("c1", Fix("unroll", 1.05), "");
    input.request = &request;
    input.budget = 3;
  }
};

nlohmann::json Entry(const std::string& parent, const std::string& pattern) {
  return {{"parent", parent}, {"pattern", pattern}, {"reason", "because " + pattern + " on " + parent}};
}

std::string PlanReply(const std::vector<nlohmann::json>& entries) {
  return nlohmann::json{{"plan", entries}}.dump();
}

struct PlannerRig {
  llm_testing::Rig llm = llm_testing::MakeRig(WireFormat::kOpenAi);
  LlmRoundPlanner planner{llm.stack.client, llm.stack.prompts, llm_engine::AgentOptions{.name = "llm:openai"}};
};

TEST_CASE("LLM planner: a valid plan is used in the model's order", "[llm_planner]") {
  PlannerRig rig;
  Planned p;
  rig.llm.server->Enqueue(OpenAiReply(PlanReply({Entry("c1", "tile-64"), Entry("c0", "split-k")})));
  absl::StatusOr<RoundPlanDraft> d = rig.planner.Plan(p.input);
  REQUIRE(d.ok());
  REQUIRE(d->plan.assignments_size() == 2);
  CHECK(d->plan.round() == 3);
  CHECK(d->plan.assignments(0).parent_kernel_id() == "c1");
  CHECK(d->plan.assignments(0).prescription().pattern_id() == "tile-64");
  CHECK(d->plan.assignments(0).prescription().expected_speedup() == 1.2);
  CHECK(d->plan.assignments(0).worker_index() == 0);
  CHECK(d->plan.assignments(1).parent_kernel_id() == "c0");
  CHECK(d->plan.assignments(1).prescription().pattern_id() == "split-k");
  CHECK(d->plan.assignments(1).worker_index() == 1);
  CHECK(d->dropped.empty());
  CHECK_THAT(d->plan.rationale(), Catch::Contains("planned by llm:openai: c1 + tile-64: because tile-64 on c1"));
  CHECK_THAT(d->reply, Catch::Contains("tile-64"));
  // The prompt: the beam's offered fixes in rank order, the exclusions, the lessons, the budget.
  CHECK_THAT(d->prompt, Catch::Contains("kernel c0 (beam rank 1):\n  measured: current kernel: 0.2 ms median\n"
                                        "    eager PyTorch: 0.5 ms median (the current kernel is 2.50x "
                                        "faster than eager PyTorch)\n"
                                        "    torch.compile: 0.4 ms median (the current kernel is 2.00x "
                                        "faster than torch.compile)\n    (measured on NVIDIA H200)\n"
                                        "  diagnosis: category: memory"));
  CHECK_THAT(d->prompt, Catch::Contains("DRAM throughput at 41% of peak"));
  CHECK_THAT(d->prompt, Catch::Contains("  fixes offered:\n  - split-k: split-k title; expected 1.4x; "
                                        "split-k moves DRAM throughput\nkernel c1 (beam rank 2):\n"
                                        "  measured: The current kernel's time was not given.\n"
                                        "  diagnosis: No profile diagnosis was given"));
  CHECK_THAT(d->prompt, Catch::Contains("- c0 + row-per-program: already tried on this kernel"));
  CHECK_THAT(d->prompt, Catch::Contains("- c0 + vectorize: on the avoid-list"));
  CHECK_THAT(d->prompt, Catch::Contains("row-per-program lost 9% on c0: the loads were not coalesced"));
  CHECK_THAT(d->prompt, Catch::Contains("measured 0.91x"));
  CHECK_THAT(d->prompt, Catch::Contains("at most 3 pairs in all, at most 2 per kernel"));
  CHECK_THAT(d->prompt, !Catch::Contains("  - vectorize"));
}

TEST_CASE("LLM planner: entries outside the offer, twice, past M or past the budget are dropped",
          "[llm_planner]") {
  PlannerRig rig;
  Planned p;
  p.input.budget = 2;
  rig.llm.server->Enqueue(OpenAiReply(PlanReply({
      Entry("c9", "split-k"),            // 1: no such kernel
      Entry("c0", "vectorize"),          // 2: avoided
      Entry("c0", "row-per-program"),    // 3: already tried
      Entry("c0", "magic"),              // 4: not offered
      Entry("c1", "tile-64"),            // 5: kept
      Entry("c1", "tile-64"),            // 6: twice
      nlohmann::json("c1 + unroll"),     // 7: not an object
      Entry("c1", "split-k"),            // 8: kept
      Entry("c1", "unroll"),             // 9: past M = 2 for c1
      Entry("c0", "split-k"),            // 10: past the budget of 2
  })));
  absl::StatusOr<RoundPlanDraft> d = rig.planner.Plan(p.input);
  REQUIRE(d.ok());
  REQUIRE(d->plan.assignments_size() == 2);
  CHECK(d->plan.assignments(0).prescription().pattern_id() == "tile-64");
  CHECK(d->plan.assignments(1).prescription().pattern_id() == "split-k");
  CHECK(d->plan.assignments(1).parent_kernel_id() == "c1");
  REQUIRE(d->dropped.size() == 8);
  CHECK(d->dropped[0] == "entry 1: 'c9' is not a kernel of the beam");
  CHECK(d->dropped[1] == "entry 2: c0 + vectorize is excluded: on the avoid-list");
  CHECK(d->dropped[2] == "entry 3: c0 + row-per-program is excluded: already tried on this kernel");
  CHECK(d->dropped[3] == "entry 4: 'magic' is not among the fixes offered for c0");
  CHECK(d->dropped[4] == "entry 6: c1 + tile-64 is named twice");
  CHECK(d->dropped[5] == "entry 7: not an object with string \"parent\" and \"pattern\"");
  CHECK(d->dropped[6] == "entry 9: c1 + unroll is past 2 fix(es) for c1");
  CHECK(d->dropped[7] == "entry 10: c0 + split-k is past the budget of 2");
  CHECK_THAT(d->plan.rationale(), Catch::Contains("dropped: entry 1: 'c9' is not a kernel of the beam"));
}

TEST_CASE("LLM planner: an unusable reply, an empty result or a provider error is an error",
          "[llm_planner]") {
  PlannerRig rig;
  Planned p;
  std::string expected;
  SECTION("prose without the object") {
    rig.llm.server->SetDefault(OpenAiReply("I would try split-k on c0 first."));
    expected = "";
  }
  SECTION("\"plan\" is not a list") {
    rig.llm.server->Enqueue(OpenAiReply(R"({"plan": "split-k on c0"})"));
    expected = "the reply was refused: \"plan\" is not a list";
  }
  SECTION("nothing valid is left") {
    rig.llm.server->Enqueue(OpenAiReply(PlanReply({Entry("c0", "vectorize"), Entry("c2", "split-k")})));
    expected = "no entry of the plan is usable (entry 1: c0 + vectorize is excluded: on the avoid-list; "
               "entry 2: 'c2' is not a kernel of the beam)";
  }
  SECTION("an empty plan") {
    rig.llm.server->Enqueue(OpenAiReply(PlanReply({})));
    expected = "no entry of the plan is usable (it is empty)";
  }
  SECTION("the endpoint fails") {
    rig.llm.server->Enqueue(OpenAiError(503, "overloaded", "server_error"));
    expected = "overloaded";
  }
  absl::StatusOr<RoundPlanDraft> d = rig.planner.Plan(p.input);
  REQUIRE_FALSE(d.ok());
  CHECK_THAT(std::string(d.status().message()), Catch::StartsWith("llm:openai plan: "));
  CHECK_THAT(std::string(d.status().message()), Catch::Contains(expected));
  std::optional<llm::LlmTranscript> t = llm::LlmTranscriptOf(d.status());
  REQUIRE(t.has_value());
  CHECK_THAT(t->prompt, Catch::Contains("kernel c1 (beam rank 2)"));
}

TEST_CASE("LLM planner: refuses an input with nothing to plan", "[llm_planner]") {
  PlannerRig rig;
  Planned p;
  for (PlanOption& o : p.input.options) o.excluded = "on the avoid-list";
  absl::StatusOr<RoundPlanDraft> d = rig.planner.Plan(p.input);
  CHECK(absl::IsInvalidArgument(d.status()));
  p.input.budget = 0;
  CHECK(absl::IsInvalidArgument(rig.planner.Plan(p.input).status()));
  CHECK(rig.llm.server->request_count() == 0);
}

}  // namespace
}  // namespace kagent
