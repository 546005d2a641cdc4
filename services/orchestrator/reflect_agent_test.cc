// The orchestrator's reflect agent (reflect_agent.h) with an LlmReflexionWriter
// (engines/llm/llm_reflector.h) over the loopback FakeLlmServer: the prompt carries the
// measured facts, the gate's reason, the attempt's source, the next candidates and the
// job's history; the model's judgement is merged into the facts (blaming the rewrite
// keeps the pattern off the avoid-list, blaming the pattern does not); a reply that
// contradicts the measurement or names an unknown pattern, or a failing endpoint, keeps
// the heuristic reflexion for that attempt.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/llm/testing/fake_llm_server.h"
#include "common/testing/fixtures.h"
#include "engines/llm/llm_reflector.h"
#include "engines/llm/testing/llm_test_rig.h"
#include "kernel_model/prescriber.h"
#include "services/judge/judge.h"
#include "services/orchestrator/reflect_agent.h"

namespace kagent {
namespace {

using kagent::v1::Candidate;
using kagent::v1::ReflectRequest;
using kagent::v1::ReflectResponse;
using llm::testing::FakeLlmServer;
using llm::testing::OpenAiError;
using llm::testing::OpenAiReply;
using llm::testing::WireFormat;

constexpr char kPattern[] = "matvec-split-k";

std::shared_ptr<const Prescriber> TheDatabase() {
  static std::shared_ptr<const Prescriber> prescriber = [] {
    auto p = Prescriber::FromFile(testing::SourceDir() + "/data/optimization_db.json");
    REQUIRE(p.ok());
    return std::shared_ptr<const Prescriber>(std::move(*p));
  }();
  return prescriber;
}

// The parent: a memory-bound gemv at 1 ms; the attempt applied kPattern and failed the gate.
ReflectRequest FailedAttempt() {
  ReflectRequest r;
  r.set_job_id("job-reflect");
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gpu_h200.json", r.mutable_gpu()).ok());
  Candidate& parent = *r.mutable_parent();
  parent.set_id("c0");
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gemv_memory_bound.json",
                                   parent.mutable_metrics()).ok());
  kagent::v1::DiagnoseRequest d;
  *d.mutable_metrics() = parent.metrics();
  *d.mutable_gpu() = r.gpu();
  d.mutable_op_signature()->set_op_class("matvec");
  auto report = Judge().Diagnose(d);
  REQUIRE(report.ok());
  *parent.mutable_report() = *report;
  auto* pm = parent.mutable_measurement();
  pm->set_verdict(kagent::v1::VERDICT_CORRECT);
  pm->mutable_candidate()->set_median_ms(1.0);
  pm->mutable_candidate()->set_p10_ms(0.995);
  pm->mutable_candidate()->set_p90_ms(1.005);
  pm->mutable_op_signature()->set_op_class("matvec");
  Candidate& attempt = *r.mutable_attempt();
  attempt.set_id("c1");
  attempt.set_round(2);
  attempt.set_parent_id("c0");
  attempt.mutable_kernel()->set_source("class ModelNew:\n  # split K over 8 programs, no tail mask\n");
  const Pattern* p = TheDatabase()->db().Find(kPattern);
  REQUIRE(p != nullptr);
  attempt.mutable_prescription()->set_pattern_id(p->id);
  attempt.mutable_prescription()->set_title(p->title);
  attempt.mutable_prescription()->set_expected_speedup(p->expected_speedup);
  auto* am = attempt.mutable_measurement();
  am->set_verdict(kagent::v1::VERDICT_INCORRECT);
  am->mutable_correctness()->set_reason("max abs error 3.2 at [4095] (atol 1e-4)");
  am->mutable_op_signature()->set_op_class("matvec");
  kagent::v1::Reflexion earlier;
  earlier.set_pattern_id("matvec-row-per-program");
  earlier.set_lesson("one row per program reached 80% of DRAM bandwidth");
  *r.add_memory() = earlier;
  return r;
}

bool Has(const google::protobuf::RepeatedPtrField<std::string>& list, const std::string& id) {
  return std::find(list.begin(), list.end(), id) != list.end();
}

// The loopback server and stack of the brain's rig, with a reflect agent over them.
struct Rig {
  llm_testing::Rig llm = llm_testing::MakeRig(WireFormat::kOpenAi);
  FakeLlmServer* server = llm.server.get();
  std::unique_ptr<LlmReflexionWriter> writer = std::make_unique<LlmReflexionWriter>(
      llm.stack.client, llm.stack.prompts, llm_engine::AgentOptions{.name = "llm:openai"});
  std::unique_ptr<ReflectAgent> agent = std::make_unique<ReflectAgent>(TheDatabase(), writer.get());
};

std::string Reply(bool fix_worked, const std::string& blame, const std::vector<std::string>& try_next) {
  return nlohmann::json{{"fix_worked", fix_worked},
                        {"diagnosis_correct", true},
                        {"expected_vs_actual", "expected 1.3x; the result was wrong at the last row"},
                        {"blame", blame},
                        {"lessons", {"mask the K tail when splitting K"}},
                        {"avoid", nlohmann::json::array()},
                        {"try_next", try_next}}
      .dump();
}

TEST_CASE("the reflect agent sends the facts and merges the model's judgement", "[orchestrator][llm]") {
  Rig rig;
  ReflectRequest request = FailedAttempt();
  absl::StatusOr<ReflectResponse> facts = HeuristicReflector(TheDatabase()).Reflect(request);
  REQUIRE(facts.ok());
  REQUIRE(Has(facts->reflexion().avoid_patterns(), kPattern));  // the rules blame the pattern
  std::vector<v1::Prescription> next = NextCandidates(TheDatabase().get(), request, kNextCandidates);
  REQUIRE_FALSE(next.empty());
  const std::string try_id = next.front().pattern_id();

  SECTION("the model blames its own rewrite: the pattern stays off the avoid-list") {
    rig.server->Enqueue(OpenAiReply(Reply(false, "rewrite", {try_id})));
    absl::StatusOr<ReflectResponse> r = rig.agent->Reflect(request);
    REQUIRE(r.ok());
    const auto& x = r->reflexion();
    CHECK_FALSE(Has(x.avoid_patterns(), kPattern));
    CHECK_FALSE(x.fix_effective());
    CHECK(x.diagnosis_correct() == facts->reflexion().diagnosis_correct());  // the rules' check
    CHECK_THAT(x.lesson(), Catch::Contains("mask the K tail when splitting K"));
    CHECK_THAT(x.lesson(), Catch::Contains("Blamed on the rewrite, not the pattern"));
    CHECK_THAT(x.lesson(), Catch::Contains("Measured: " + facts->reflexion().lesson()));
    CHECK(std::vector<std::string>(x.try_patterns().begin(), x.try_patterns().end()) ==
          std::vector<std::string>{try_id});
    CHECK(r->exchange().agent() == "reflect");
    CHECK(r->exchange().brain() == "llm:openai");
    CHECK(r->exchange().fallback().empty());
    CHECK_THAT(r->exchange().reply(), Catch::Contains("\"blame\":\"rewrite\""));
    // The prompt: the verdict and the gate's reason, the source, the candidates, the history.
    REQUIRE(rig.server->request_count() == 1);
    std::string sent = rig.server->requests()[0].Json()["messages"][1]["content"].get<std::string>();
    CHECK(r->exchange().prompt().find(sent) != std::string::npos);
    CHECK_THAT(sent, Catch::Contains("round 2"));
    CHECK_THAT(sent, Catch::Contains("verdict: VERDICT_INCORRECT"));
    CHECK_THAT(sent, Catch::Contains("max abs error 3.2 at [4095]"));
    CHECK_THAT(sent, Catch::Contains("no tail mask"));
    CHECK_THAT(sent, Catch::Contains("- " + try_id + ": "));
    CHECK_THAT(sent, Catch::Contains("one row per program reached 80% of DRAM bandwidth"));
    CHECK_THAT(sent, Catch::Contains("memory-bound"));
  }
  SECTION("the model blames the pattern: the rules' avoid-list stands") {
    rig.server->Enqueue(OpenAiReply(Reply(false, "pattern", {})));
    absl::StatusOr<ReflectResponse> r = rig.agent->Reflect(request);
    REQUIRE(r.ok());
    CHECK(Has(r->reflexion().avoid_patterns(), kPattern));
    CHECK_THAT(r->reflexion().lesson(), Catch::Contains("Blamed on the pattern."));
    // No try_next: the rules' suggestions stay.
    CHECK(r->reflexion().try_patterns_size() == facts->reflexion().try_patterns_size());
  }
}

TEST_CASE("the orchestrator service bounds the agent by what is left of the job's LLM budget",
          "[orchestrator][llm]") {
  Rig rig;
  OrchestratorServiceImpl service(rig.agent.get(), nullptr);
  ReflectRequest request = FailedAttempt();
  rig.server->SetDefault(OpenAiReply(Reply(false, "rewrite", {})));
  grpc::ServerContext context;
  ReflectResponse response;
  SECTION("tokens left: the call is made and reported") {
    request.set_llm_tokens_left(1000);
    REQUIRE(service.Reflect(&context, &request, &response).ok());
    CHECK(response.exchange().fallback().empty());
    CHECK_FALSE(Has(response.reflexion().avoid_patterns(), kPattern));
    CHECK(response.llm_usage().calls() == 1);
    CHECK(rig.server->request_count() == 1);
  }
  SECTION("nothing left: no call, the heuristic reflexion") {
    request.set_llm_tokens_left(0);
    REQUIRE(service.Reflect(&context, &request, &response).ok());
    CHECK_THAT(response.exchange().fallback(), Catch::Contains("what its budget had left for this reflexion"));
    CHECK(Has(response.reflexion().avoid_patterns(), kPattern));
    CHECK(response.llm_usage().calls() == 0);
    CHECK(rig.server->request_count() == 0);
  }
}

TEST_CASE("the reflect agent keeps the heuristic reflexion when the reply cannot be used",
          "[orchestrator][llm]") {
  Rig rig;
  ReflectRequest request = FailedAttempt();
  absl::StatusOr<ReflectResponse> facts = HeuristicReflector(TheDatabase()).Reflect(request);
  REQUIRE(facts.ok());
  std::string expected;
  SECTION("a verdict the measurement contradicts") {
    rig.server->Enqueue(OpenAiReply(Reply(true, "none", {})));
    expected = "but the measurement says it was not effective";
  }
  SECTION("a pattern that is not among the candidates") {
    rig.server->Enqueue(OpenAiReply(Reply(false, "rewrite", {"use-magic"})));
    expected = "try_next names 'use-magic'";
  }
  SECTION("a blame that is none of the three") {
    rig.server->Enqueue(OpenAiReply(Reply(false, "the compiler", {})));
    expected = "\"blame\" is not one of";
  }
  SECTION("the endpoint fails") {
    rig.server->Enqueue(OpenAiError(503, "overloaded", "server_error"));
    expected = "overloaded";
  }
  absl::StatusOr<ReflectResponse> r = rig.agent->Reflect(request);
  REQUIRE(r.ok());
  CHECK(r->reflexion().SerializeAsString() == facts->reflexion().SerializeAsString());
  CHECK_THAT(r->exchange().fallback(), Catch::Contains(expected));
  CHECK_THAT(r->exchange().prompt(), Catch::Contains("max abs error 3.2"));
}

TEST_CASE("the reflect agent does not ask without a correct parent, for a duplicate or an "
          "infrastructure error", "[orchestrator][llm]") {
  Rig rig;
  ReflectRequest request = FailedAttempt();
  SECTION("no parent") {
    request.clear_parent();
    absl::StatusOr<ReflectResponse> r = rig.agent->Reflect(request);
    REQUIRE(r.ok());
    CHECK_FALSE(r->has_exchange());
    CHECK_THAT(r->reflexion().lesson(), Catch::Contains("no correct parent"));
  }
  for (v1::Verdict v : {v1::VERDICT_DUPLICATE, v1::VERDICT_INFRA_ERROR}) {
    DYNAMIC_SECTION(v1::Verdict_Name(v)) {
      request.mutable_attempt()->mutable_measurement()->set_verdict(v);
      absl::StatusOr<ReflectResponse> r = rig.agent->Reflect(request);
      REQUIRE(r.ok());
      CHECK_FALSE(r->has_exchange());
    }
  }
  CHECK(rig.server->request_count() == 0);
}

}  // namespace
}  // namespace kagent
