// The analyzer's prescribe agent (prescribe_agent.h) with the real prescriber and an
// LlmPrescriber (engines/llm/llm_prescriber.h) over the loopback FakeLlmServer: the
// prompt carries the database's candidates, the model's ranking is used, and a reply
// naming a pattern or knob the database does not offer, or a failing endpoint, gives the
// database's own ranking for that call.
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/llm/testing/fake_llm_server.h"
#include "common/testing/fixtures.h"
#include "engines/llm/llm_prescriber.h"
#include "engines/llm/testing/llm_test_rig.h"
#include "kernel_model/prescriber.h"
#include "services/analyzer/analyzer_service.h"
#include "services/analyzer/prescribe_agent.h"
#include "services/judge/judge.h"

namespace kagent {
namespace {

using kagent::v1::PrescribeRequest;
using kagent::v1::PrescribeResponse;
using llm::testing::FakeLlmServer;
using llm::testing::OpenAiError;
using llm::testing::OpenAiReply;
using llm::testing::WireFormat;

std::shared_ptr<const Prescriber> Database() {
  static std::shared_ptr<const Prescriber> prescriber = [] {
    auto p = Prescriber::FromFile(testing::SourceDir() + "/data/optimization_db.json");
    REQUIRE(p.ok());
    return std::shared_ptr<const Prescriber>(std::move(*p));
  }();
  return prescriber;
}

const Prescriber& TheDatabase() { return *Database(); }

PrescribeRequest MatvecRequest() {
  kagent::v1::DiagnoseRequest diagnose;
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gemv_memory_bound.json",
                                   diagnose.mutable_metrics()).ok());
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gpu_h200.json", diagnose.mutable_gpu()).ok());
  diagnose.mutable_op_signature()->set_op_class("matvec");
  auto report = Judge().Diagnose(diagnose);
  REQUIRE(report.ok());
  PrescribeRequest request;
  *request.mutable_report() = *report;
  *request.mutable_gpu() = diagnose.gpu();
  request.set_op_class("matvec");
  request.set_job_id("job-rx");
  request.set_kernel_source("@triton.jit\ndef gemv_kernel(x, BLOCK_K: tl.constexpr):\n  pass\n");
  return request;
}

std::vector<std::string> Ids(const PrescribeResponse& r) {
  std::vector<std::string> ids;
  for (const auto& p : r.prescriptions()) ids.push_back(p.pattern_id());
  return ids;
}

// The loopback server and stack of the brain's rig, with a prescriber over them.
struct Agent {
  llm_testing::Rig rig = llm_testing::MakeRig(WireFormat::kOpenAi);
  FakeLlmServer* server = rig.server.get();
  std::unique_ptr<LlmPrescriber> ranker = std::make_unique<LlmPrescriber>(
      rig.stack.client, rig.stack.prompts, llm_engine::AgentOptions{.name = "llm:openai"});
};

TEST_CASE("the prescribe agent sends the database's candidates and uses the model's ranking",
          "[analyzer][llm]") {
  Agent agent;
  PrescribeRequest request = MatvecRequest();
  absl::StatusOr<PrescribeResponse> heuristic = TheDatabase().Prescribe(request);
  REQUIRE(heuristic.ok());
  REQUIRE(heuristic->prescriptions_size() >= 2);
  // A candidate with a knob change, whose value the model may choose.
  const kagent::v1::Prescription* knobbed = nullptr;
  for (const auto& p : heuristic->prescriptions()) {
    if (p.knob_changes_size() > 0 && knobbed == nullptr) knobbed = &p;
  }
  REQUIRE(knobbed != nullptr);
  const std::string knob = knobbed->knob_changes().begin()->first;
  const std::string first = heuristic->prescriptions(0).pattern_id();
  const std::string second = heuristic->prescriptions(1).pattern_id();
  const std::string picked = knobbed->pattern_id() == second ? first : second;
  nlohmann::json reply = {
      {"prescriptions",
       {{{"pattern_id", knobbed->pattern_id()},
         {"rationale", "dram__throughput is 91% of peak: the bytes must shrink"},
         {"expected_effect", "DRAM bytes down by a third"},
         {"knob_changes", {{knob, 4}}}},
        {{"pattern_id", picked}, {"rationale", "second best for this gemv"}}}}};
  agent.server->Enqueue(OpenAiReply(reply.dump()));

  absl::StatusOr<PrescribeResponse> r = PrescribeWithAgent(TheDatabase(), agent.ranker.get(), request);
  REQUIRE(r.ok());
  CHECK(Ids(*r) == std::vector<std::string>{knobbed->pattern_id(), picked});
  const auto& top = r->prescriptions(0);
  CHECK_THAT(top.rationale(), Catch::StartsWith("dram__throughput is 91% of peak"));
  CHECK(top.expected_effect() == "DRAM bytes down by a third");
  CHECK(top.knob_changes().at(knob) == "4");
  CHECK(top.title() == knobbed->title());  // the database's fix, title and speedup are kept
  CHECK(top.expected_speedup() == knobbed->expected_speedup());
  CHECK(r->database_version() == heuristic->database_version());
  CHECK(r->exchange().agent() == "prescribe");
  CHECK(r->exchange().brain() == "llm:openai");
  CHECK(r->exchange().fallback().empty());
  CHECK_THAT(r->exchange().reply(), Catch::Contains("second best for this gemv"));

  // The prompt: the diagnosis, the kernel, every candidate with its knob changes.
  REQUIRE(agent.server->request_count() == 1);
  std::string sent = agent.server->requests()[0].Json()["messages"][1]["content"].get<std::string>();
  CHECK(r->exchange().prompt().find(sent) != std::string::npos);
  CHECK_THAT(sent, Catch::Contains("op class: matvec"));
  CHECK_THAT(sent, Catch::Contains("memory-bound"));
  CHECK_THAT(sent, Catch::Contains("def gemv_kernel(x, BLOCK_K: tl.constexpr)"));
  for (const auto& p : heuristic->prescriptions()) CHECK_THAT(sent, Catch::Contains("- " + p.pattern_id() + ": "));
  CHECK_THAT(sent, Catch::Contains("knob changes " + knob + "="));
}

TEST_CASE("the prescribe agent falls back to the database's ranking per call", "[analyzer][llm]") {
  Agent agent;
  PrescribeRequest request = MatvecRequest();
  absl::StatusOr<PrescribeResponse> heuristic = TheDatabase().Prescribe(request);
  REQUIRE(heuristic.ok());
  const std::string first = heuristic->prescriptions(0).pattern_id();
  std::string expected_fallback;
  SECTION("a pattern the database did not offer is refused") {
    agent.server->Enqueue(OpenAiReply(
        R"({"prescriptions": [{"pattern_id": "rewrite-it-in-assembly", "rationale": "faster"}]})"));
    expected_fallback = "pattern 'rewrite-it-in-assembly' is not among the database's candidates";
  }
  SECTION("a knob the pattern does not change is refused") {
    agent.server->Enqueue(OpenAiReply(nlohmann::json{
        {"prescriptions", {{{"pattern_id", first}, {"knob_changes", {{"NOT_A_KNOB", 7}}}}}}}.dump()));
    expected_fallback = "changes no knob 'NOT_A_KNOB'";
  }
  SECTION("the endpoint fails") {
    agent.server->Enqueue(OpenAiError(500, "the server fell over", "server_error"));
    expected_fallback = "the server fell over";
  }
  absl::StatusOr<PrescribeResponse> r = PrescribeWithAgent(TheDatabase(), agent.ranker.get(), request);
  REQUIRE(r.ok());
  CHECK(Ids(*r) == Ids(*heuristic));
  CHECK_THAT(r->exchange().fallback(), Catch::Contains(expected_fallback));
  CHECK_THAT(r->exchange().prompt(), Catch::Contains("Candidate patterns"));

  // The next call asks again, and a good reply is used.
  agent.server->Enqueue(OpenAiReply(nlohmann::json{
      {"prescriptions", {{{"pattern_id", heuristic->prescriptions(1).pattern_id()}}}}}.dump()));
  absl::StatusOr<PrescribeResponse> next = PrescribeWithAgent(TheDatabase(), agent.ranker.get(), request);
  REQUIRE(next.ok());
  CHECK(Ids(*next) == std::vector<std::string>{heuristic->prescriptions(1).pattern_id()});
  CHECK(next->exchange().fallback().empty());
}

TEST_CASE("the analyzer service bounds the agent by what is left of the job's LLM budget",
          "[analyzer][llm]") {
  Agent agent;
  AnalyzerServiceImpl service(Database(), nullptr, nullptr, agent.ranker.get());
  PrescribeRequest request = MatvecRequest();
  const std::string first = TheDatabase().Prescribe(request)->prescriptions(0).pattern_id();
  agent.server->SetDefault(OpenAiReply(
      nlohmann::json{{"prescriptions", {{{"pattern_id", first}}}}}.dump()));
  grpc::ServerContext context;
  PrescribeResponse response;
  SECTION("tokens left: the call is made and reported") {
    request.set_llm_tokens_left(1000);
    REQUIRE(service.Prescribe(&context, &request, &response).ok());
    CHECK(response.exchange().fallback().empty());
    CHECK(response.llm_usage().calls() == 1);
    CHECK(response.llm_usage().input_tokens() + response.llm_usage().output_tokens() ==
          llm_testing::kCallTokens);
    CHECK(agent.server->request_count() == 1);
  }
  SECTION("nothing left: no call, the database's ranking") {
    request.set_llm_tokens_left(0);
    REQUIRE(service.Prescribe(&context, &request, &response).ok());
    CHECK_THAT(response.exchange().fallback(), Catch::Contains("what its budget had left for this prescription"));
    CHECK(Ids(response) == Ids(*TheDatabase().Prescribe(request)));
    CHECK(response.llm_usage().calls() == 0);
    CHECK(agent.server->request_count() == 0);
  }
}

TEST_CASE("the analyzer service asks the LLM only for a job that chose the prescribe agent",
          "[analyzer][llm]") {
  Agent agent;
  AnalyzerServiceImpl service(Database(), nullptr, nullptr, agent.ranker.get());
  PrescribeRequest request = MatvecRequest();
  absl::StatusOr<PrescribeResponse> database = TheDatabase().Prescribe(request);
  REQUIRE(database.ok());
  REQUIRE(database->prescriptions_size() >= 2);
  // The model picks the database's second candidate alone: a ranking the database's
  // own answer cannot be.
  const std::string second = database->prescriptions(1).pattern_id();
  agent.server->SetDefault(OpenAiReply(
      nlohmann::json{{"prescriptions", {{{"pattern_id", second}}}}}.dump()));
  grpc::ServerContext context;
  PrescribeResponse response;
  SECTION("chosen among others: the model's ranking") {
    request.add_llm_agents("reflect");
    request.add_llm_agents("prescribe");
    REQUIRE(service.Prescribe(&context, &request, &response).ok());
    CHECK(Ids(response) == std::vector<std::string>{second});
    CHECK(response.exchange().agent() == "prescribe");
    CHECK(response.llm_usage().calls() == 1);
    CHECK(agent.server->request_count() == 1);
  }
  SECTION("no choice: the server's configuration, the model's ranking") {
    REQUIRE(service.Prescribe(&context, &request, &response).ok());
    CHECK(Ids(response) == std::vector<std::string>{second});
    CHECK(agent.server->request_count() == 1);
  }
  SECTION("other agents chosen: the database's ranking, no call") {
    request.add_llm_agents("reflect");
    request.add_llm_agents("plan");
    REQUIRE(service.Prescribe(&context, &request, &response).ok());
    CHECK(Ids(response) == Ids(*database));
    CHECK_FALSE(response.has_exchange());
    CHECK(response.llm_usage().calls() == 0);
    CHECK(agent.server->request_count() == 0);
  }
}

TEST_CASE("without a ranker, or with nothing to rank, the LLM is not asked", "[analyzer][llm]") {
  Agent agent;
  PrescribeRequest request = MatvecRequest();
  absl::StatusOr<PrescribeResponse> plain = PrescribeWithAgent(TheDatabase(), nullptr, request);
  REQUIRE(plain.ok());
  CHECK_FALSE(plain->has_exchange());
  CHECK(Ids(*plain) == Ids(*TheDatabase().Prescribe(request)));
  // Every candidate avoided: nothing to rank.
  for (const auto& id : Ids(*TheDatabase().Prescribe([&] {
         PrescribeRequest all = request;
         all.set_max_results(64);
         return all;
       }()))) {
    request.add_avoid_patterns(id);
  }
  absl::StatusOr<PrescribeResponse> none = PrescribeWithAgent(TheDatabase(), agent.ranker.get(), request);
  REQUIRE(none.ok());
  CHECK(none->prescriptions().empty());
  CHECK(agent.server->request_count() == 0);
}

}  // namespace
}  // namespace kagent
