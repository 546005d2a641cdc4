// The coordinator's client for the loop services (GrpcLoopServices) against a real
// optimization manager server running the LLM brain over the loopback FakeLlmServer.
#include "services/coordinator/loop_services.h"

#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>

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
using llm_testing::Kernel;
using llm_testing::kCallCost;
using llm_testing::kCallTokens;
using llm_testing::MakeRig;
using llm_testing::Rig;
using llm_testing::RoundRequest;
using llm_testing::WireFormat;
using llm_testing::WithPrices;
using llm::testing::OpenAiReply;

TEST_CASE("LLM brain over gRPC: a refused Generate's usage reaches the coordinator's client",
          "[llm_brain][budget]") {
  Rig rig = MakeRig(WireFormat::kOpenAi, [](llm::LlmConfig& c) { WithPrices(c); });
  rig.server->SetDefault(OpenAiReply(Answer(Kernel("over-grpc"))));
  HeuristicBrain heuristic(TemplateLibrary::Embedded().value());
  OptimizationManagerOptions mo;
  mo.check_sources = false;
  mo.max_parallel_workers = 1;
  BrainRouter router("heuristic", nullptr);
  router.Add("heuristic",
             std::make_unique<OptimizationManagerServiceImpl>(mo, &heuristic, nullptr, nullptr));
  router.Add("llm",
             std::make_unique<OptimizationManagerServiceImpl>(mo, rig.brain.get(), nullptr, nullptr));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&router);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", port);
  // The coordinator's client for the loop services (all four pointed at the manager).
  auto loop = GrpcLoopServices::Create({address, address, address, address}, ChannelOptions{},
                                       "", absl::Seconds(30), absl::Seconds(30));
  REQUIRE(loop.ok());

  v1::GenerateRequest ok_request = RoundRequest("job-g", "llm", 2);
  ok_request.set_llm_tokens_left(1000);
  absl::StatusOr<v1::GenerateResponse> ok = (*loop)->Generate(ok_request, nullptr);
  REQUIRE(ok.ok());
  CHECK(ok->llm_usage().calls() == 2);
  CHECK(ok->llm_usage().cost_usd() == Approx(2 * kCallCost));

  v1::GenerateRequest spent_request = RoundRequest("job-g", "llm", 3);
  spent_request.set_llm_tokens_left(kCallTokens);  // one call, then refused
  absl::StatusOr<v1::GenerateResponse> spent = (*loop)->Generate(spent_request, nullptr);
  REQUIRE(absl::IsResourceExhausted(spent.status()));
  CHECK_THAT(std::string(spent.status().message()), Catch::Contains("optimization manager"));
  std::optional<v1::LlmUsage> usage = llm::LlmUsageOf(spent.status());
  REQUIRE(usage.has_value());
  CHECK(usage->calls() == 1);
  CHECK(usage->input_tokens() == 12);
  CHECK(usage->output_tokens() == 7);
  CHECK(usage->cost_usd() == Approx(kCallCost));
  CHECK(rig.server->request_count() == 3);

  // The heuristic brain makes no LLM call: a spent LLM budget does not stop it.
  v1::GenerateRequest heuristic_request = RoundRequest("job-g", "heuristic", 1);
  heuristic_request.set_llm_tokens_left(0);
  absl::StatusOr<v1::GenerateResponse> h = (*loop)->Generate(heuristic_request, nullptr);
  REQUIRE(h.ok());
  CHECK(h->llm_usage().calls() == 0);
  CHECK(rig.server->request_count() == 3);
  server->Shutdown();
}

}  // namespace
}  // namespace kagent
