// The orchestrator service's round plan with an LlmRoundPlanner (plan_agent.h,
// engines/llm/llm_planner.h) over the loopback FakeLlmServer: the rules' options
// (PlanOptions) go into the prompt, the model's plan is used in its order, a failing
// endpoint or a refused reply keeps the heuristic plan and says so in the rationale, and
// without a writer no call is made.
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/llm/testing/fake_llm_server.h"
#include "engines/llm/llm_planner.h"
#include "engines/llm/testing/llm_test_rig.h"
#include "services/orchestrator/orchestrator_service.h"
#include "services/orchestrator/planner.h"

namespace kagent {
namespace {

using llm::testing::OpenAiError;
using llm::testing::OpenAiReply;
using llm::testing::WireFormat;

class NoReflector : public Reflector {
 public:
  absl::StatusOr<v1::ReflectResponse> Reflect(const v1::ReflectRequest&) override {
    return absl::UnimplementedError("not used by these tests");
  }
};

// Kernels k1 and k2 with fixes a, b, c; a failed on k1 and the memory avoids c.
v1::PlanRoundRequest Request() {
  v1::PlanRoundRequest r;
  r.set_job_id("job-plan");
  r.set_round(2);
  r.set_fixes_per_kernel(2);
  for (const char* id : {"k1", "k2"}) {
    v1::BeamEntry* e = r.add_beam();
    e->set_kernel_id(id);
    for (const char* p : {"a", "b", "c"}) e->add_prescriptions()->set_pattern_id(p);
  }
  r.mutable_beam(0)->mutable_measurement()->mutable_candidate()->set_median_ms(1.5);
  r.mutable_beam(0)->mutable_measurement()->mutable_eager()->set_median_ms(3);
  v1::Reflexion* m = r.add_memory();
  m->set_parent_id("k1");
  m->set_pattern_id("a");
  m->set_lesson("a broke the tail mask on k1");
  m->add_avoid_patterns("c");
  return r;
}

std::vector<std::string> Pairs(const v1::RoundPlan& plan) {
  std::vector<std::string> out;
  for (const v1::Assignment& a : plan.assignments()) {
    out.push_back(a.parent_kernel_id() + "+" + a.prescription().pattern_id());
  }
  return out;
}

struct Rig {
  llm_testing::Rig llm = llm_testing::MakeRig(WireFormat::kOpenAi);
  LlmRoundPlanner writer{llm.stack.client, llm.stack.prompts, llm_engine::AgentOptions{.name = "llm:openai"}};
  NoReflector reflector;
  OrchestratorServiceImpl service{&reflector, nullptr, &writer};
};

TEST_CASE("planner options: every pair, with the rules' reason on those excluded", "[orchestrator]") {
  absl::StatusOr<std::vector<PlanOption>> options = PlanOptions(Request());
  REQUIRE(options.ok());
  REQUIRE(options->size() == 6);
  CHECK((*options)[0].excluded == "already tried on this kernel");  // k1 + a
  CHECK((*options)[1].excluded.empty());                            // k1 + b
  CHECK((*options)[2].excluded == "on the avoid-list");             // k1 + c
  CHECK((*options)[3].excluded.empty());                            // k2 + a
  CHECK((*options)[3].parent_kernel_id == "k2");
  CHECK(absl::IsInvalidArgument(PlanOptions(v1::PlanRoundRequest()).status()));
}

TEST_CASE("the orchestrator service plans the round through the plan agent", "[orchestrator][llm]") {
  Rig rig;
  v1::PlanRoundRequest request = Request();
  absl::StatusOr<v1::RoundPlan> heuristic = PlanRound(request);
  REQUIRE(heuristic.ok());
  REQUIRE(Pairs(*heuristic) == std::vector<std::string>{"k1+b", "k2+a", "k2+b"});
  grpc::ServerContext context;
  v1::PlanRoundResponse response;
  SECTION("the model's plan, in its order") {
    rig.llm.server->Enqueue(OpenAiReply(nlohmann::json{
        {"plan", {{{"parent", "k2"}, {"pattern", "b"}, {"reason", "b suits the wider tile of k2"}},
                  {{"parent", "k1"}, {"pattern", "c"}, {"reason", "c is avoided"}},
                  {{"parent", "k1"}, {"pattern", "b"}, {"reason", "b on the best kernel"}}}}}.dump()));
    REQUIRE(rig.service.PlanRound(&context, &request, &response).ok());
    CHECK(Pairs(response.plan()) == std::vector<std::string>{"k2+b", "k1+b"});
    CHECK(response.plan().assignments(1).worker_index() == 1);
    CHECK_THAT(response.plan().rationale(), Catch::Contains("k2 + b: b suits the wider tile of k2"));
    CHECK_THAT(response.plan().rationale(), Catch::Contains("entry 2: k1 + c is excluded: on the avoid-list"));
    REQUIRE(rig.llm.server->request_count() == 1);
    const std::string body = rig.llm.server->requests()[0].body;
    CHECK_THAT(body, Catch::Contains("kernel k1 (beam rank 1)"));
    CHECK_THAT(body, Catch::Contains("a broke the tail mask on k1"));
    CHECK_THAT(body, Catch::Contains("current kernel: 1.5 ms median"));
    CHECK_THAT(body, Catch::Contains("2.00x faster than eager PyTorch"));
    CHECK(response.exchange().agent() == "plan");
    CHECK(response.exchange().brain() == "llm:openai");
    CHECK_THAT(response.exchange().prompt(), Catch::Contains("kernel k2 (beam rank 2)"));
    CHECK_THAT(response.exchange().reply(), Catch::Contains("b suits the wider tile of k2"));
    CHECK(response.exchange().fallback().empty());
    CHECK_THAT(body, Catch::Contains("at most 3 pairs in all"));
  }
  SECTION("a failing endpoint keeps the heuristic plan") {
    rig.llm.server->Enqueue(OpenAiError(503, "overloaded", "server_error"));
    REQUIRE(rig.service.PlanRound(&context, &request, &response).ok());
    CHECK(Pairs(response.plan()) == Pairs(*heuristic));
    CHECK_THAT(response.plan().rationale(),
               Catch::StartsWith("heuristic plan (the plan agent llm:openai failed: "));
    CHECK_THAT(response.plan().rationale(), Catch::Contains("overloaded"));
    CHECK_THAT(response.plan().rationale(), Catch::EndsWith(heuristic->rationale()));
    CHECK_THAT(response.exchange().fallback(), Catch::Contains("overloaded"));
    CHECK_THAT(response.exchange().prompt(), Catch::Contains("kernel k1 (beam rank 1)"));
  }
  SECTION("a plan with nothing valid keeps the heuristic plan") {
    rig.llm.server->Enqueue(OpenAiReply(R"({"plan": [{"parent": "k1", "pattern": "a"}]})"));
    REQUIRE(rig.service.PlanRound(&context, &request, &response).ok());
    CHECK(Pairs(response.plan()) == Pairs(*heuristic));
    CHECK_THAT(response.plan().rationale(), Catch::Contains("k1 + a is excluded: already tried on this kernel"));
    CHECK_THAT(response.exchange().fallback(), Catch::Contains("no entry of the plan is usable"));
    CHECK_THAT(response.exchange().reply(), Catch::Contains("\"pattern\": \"a\""));
  }
}

TEST_CASE("the orchestrator service bounds the plan agent by what is left of the job's LLM budget, "
          "and asks it only for a job that chose it", "[orchestrator][llm]") {
  Rig rig;
  v1::PlanRoundRequest request = Request();
  rig.llm.server->SetDefault(OpenAiReply(
      R"({"plan": [{"parent": "k2", "pattern": "b", "reason": "b suits k2"}]})"));
  grpc::ServerContext context;
  v1::PlanRoundResponse response;
  SECTION("tokens left: the call is made and reported") {
    request.set_llm_tokens_left(1000);
    REQUIRE(rig.service.PlanRound(&context, &request, &response).ok());
    CHECK(Pairs(response.plan()) == std::vector<std::string>{"k2+b"});
    CHECK(response.llm_usage().calls() == 1);
    CHECK(response.llm_usage().input_tokens() + response.llm_usage().output_tokens() ==
          llm_testing::kCallTokens);
    CHECK(rig.llm.server->request_count() == 1);
  }
  SECTION("nothing left: no call, the heuristic plan") {
    request.set_llm_tokens_left(0);
    REQUIRE(rig.service.PlanRound(&context, &request, &response).ok());
    CHECK(Pairs(response.plan()) == Pairs(*PlanRound(request)));
    CHECK_THAT(response.exchange().fallback(),
               Catch::Contains("what its budget had left for this round plan"));
    CHECK(response.llm_usage().calls() == 0);
    CHECK(rig.llm.server->request_count() == 0);
  }
  SECTION("a job that chose the plan agent: the model's plan") {
    request.add_llm_agents("plan");
    REQUIRE(rig.service.PlanRound(&context, &request, &response).ok());
    CHECK(Pairs(response.plan()) == std::vector<std::string>{"k2+b"});
    CHECK(rig.llm.server->request_count() == 1);
  }
  SECTION("a job that chose other agents: the heuristic plan, no call") {
    request.add_llm_agents("reflect");
    REQUIRE(rig.service.PlanRound(&context, &request, &response).ok());
    CHECK(Pairs(response.plan()) == Pairs(*PlanRound(request)));
    CHECK_FALSE(response.has_exchange());
    CHECK(response.llm_usage().calls() == 0);
    CHECK(rig.llm.server->request_count() == 0);
  }
}

TEST_CASE("the orchestrator service without a plan writer makes no call", "[orchestrator][llm]") {
  Rig rig;
  OrchestratorServiceImpl service(&rig.reflector, nullptr);
  v1::PlanRoundRequest request = Request();
  grpc::ServerContext context;
  v1::PlanRoundResponse response;
  REQUIRE(service.PlanRound(&context, &request, &response).ok());
  CHECK(Pairs(response.plan()) == Pairs(*PlanRound(request)));
  CHECK_FALSE(response.has_exchange());
  CHECK(rig.llm.server->request_count() == 0);
}

}  // namespace
}  // namespace kagent
