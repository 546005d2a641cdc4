// SetUpJudge end to end: the JudgeService on a real gRPC server, configured with
// --llm-config pointing at a loopback FakeLlmServer, narrates through the LLM; the
// category and rule evidence are the rules' own; a spent per-request LLM budget gives
// the heuristic narrative without contacting the provider; without an LLM configuration
// the provider is never called.
#include "services/judge/judge_setup.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "common/llm/testing/fake_llm_server.h"
#include "common/server.h"
#include "common/testing/fixtures.h"
#include "kagent/v1/judge_service.grpc.pb.h"
#include "kernel_model/metric_names.h"
#include "nlohmann/json.hpp"
#include "services/judge/judge.h"

namespace kagent {
namespace {

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
  request.set_job_id("job-judge");
  return request;
}

// A temporary file removed at the end of the scope.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/kagent_judge_llm_XXXXXX";
    int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

// The judge service on a loopback gRPC server, set up as kagent-judge does.
struct JudgeRig {
  ServerOptions server_options;
  ServiceContext ctx;
  std::unique_ptr<ServiceHost> host;
  std::unique_ptr<v1::JudgeService::Stub> stub;

  absl::Status Start(const JudgeServerOptions& options) {
    server_options.listen = "127.0.0.1:0";
    server_options.metrics_listen = "";
    server_options.drain_seconds = 0;
    auto created = ServiceHost::Create(server_options, nullptr);
    if (!created.ok()) return created.status();
    host = *std::move(created);
    ctx.server_options = &server_options;
    ctx.host = host.get();
    if (absl::Status s = SetUpJudge(options, ctx); !s.ok()) return s;
    if (absl::Status s = host->Start(); !s.ok()) return s;
    stub = v1::JudgeService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", host->port()), grpc::InsecureChannelCredentials()));
    return absl::OkStatus();
  }
  ~JudgeRig() {
    if (host != nullptr) host->Drain();
  }

  grpc::Status Diagnose(const v1::DiagnoseRequest& request, v1::DiagnoseResponse* response) {
    grpc::ClientContext context;
    return stub->Diagnose(&context, request, response);
  }
};

std::string OpenAiConfig(const FakeLlmServer& server) {
  return nlohmann::json{{"provider", "openai"},
                        {"base_url", server.base_url()},
                        {"model", "test-model"},
                        {"retry", {{"max_attempts", 1}}},
                        {"prices", {{"input_usd_per_mtok", 1000}, {"output_usd_per_mtok", 2000}}}}
      .dump();
}

TEST_CASE("judge service with --llm-config narrates through the LLM", "[judge_setup]") {
  auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
  TempFile config(OpenAiConfig(*server));
  JudgeRig rig;
  JudgeServerOptions options;
  options.llm_config = config.path;
  REQUIRE(rig.Start(options).ok());

  nlohmann::json answer = {
      {"narrative",
       "The matrix is streamed once from HBM. "
       "dram__throughput.avg.pct_of_peak_sustained_elapsed is 89.7, at the memory roof. "
       "The L2 hit rate lts__t_sector_hit_rate.pct is 60."},
      {"additional_causes",
       {{{"metric", metric::kDramThroughput}, {"value", 89.7}, {"explanation", "HBM saturated"}},
        {{"metric", "made__up.metric"}, {"value", 1}, {"explanation", "not in the profile"}}}}};
  server->Enqueue(OpenAiReply(answer.dump(), /*prompt_tokens=*/300, /*completion_tokens=*/50));

  const v1::DiagnoseRequest request = GemvRequest();
  v1::DiagnoseResponse response;
  grpc::Status status = rig.Diagnose(request, &response);
  REQUIRE(status.ok());
  auto baseline = Judge().Diagnose(request);
  REQUIRE(baseline.ok());
  const v1::BottleneckReport& report = response.report();

  // The narrative is the LLM's, less the sentence whose number is not in the profile.
  CHECK_THAT(report.narrative(), Catch::Contains("streamed once from HBM"));
  CHECK_THAT(report.narrative(), Catch::Contains("at the memory roof"));
  CHECK_THAT(report.narrative(), !Catch::Contains("is 60"));
  CHECK(report.narrative() != baseline->narrative());
  // Category, limiter and the rules' causes do not depend on it; one checked extra cause.
  CHECK(report.primary() == v1::BOTTLENECK_MEMORY_BOUND);
  CHECK(report.primary() == baseline->primary());
  CHECK(report.limiter() == baseline->limiter());
  REQUIRE(report.root_causes_size() == baseline->root_causes_size() + 1);
  for (int i = 0; i < baseline->root_causes_size(); ++i) {
    CHECK(report.root_causes(i).SerializeAsString() ==
          baseline->root_causes(i).SerializeAsString());
  }
  const v1::RootCause& extra = report.root_causes(baseline->root_causes_size());
  CHECK(extra.cause() == "HBM saturated");
  CHECK(extra.source() == "llm");

  // One provider call, with the judge's category in the prompt, reported as usage.
  REQUIRE(server->request_count() == 1);
  const std::string body = server->requests().at(0).body;
  CHECK_THAT(body, Catch::Contains("memory-bound"));
  CHECK(response.llm_usage().calls() == 1);
  CHECK(response.llm_usage().input_tokens() == 300);
  CHECK(response.llm_usage().output_tokens() == 50);
  CHECK(response.llm_usage().cost_usd() == Approx((300 * 1000.0 + 50 * 2000.0) / 1e6));
  // The narrate agent's record travels with the report.
  REQUIRE(response.has_exchange());
  CHECK(response.exchange().agent() == "narrate");
  CHECK_THAT(response.exchange().prompt(), Catch::Contains("memory-bound"));
  CHECK_THAT(response.exchange().reply(), Catch::Contains("HBM saturated"));

  // A spent per-request budget: no provider call, the heuristic narrative, OK status.
  v1::DiagnoseRequest spent = request;
  spent.set_llm_tokens_left(0);
  v1::DiagnoseResponse heuristic;
  REQUIRE(rig.Diagnose(spent, &heuristic).ok());
  CHECK(server->request_count() == 1);
  CHECK(heuristic.report().narrative() == baseline->narrative());
  CHECK(heuristic.report().primary() == baseline->primary());
  CHECK(heuristic.llm_usage().calls() == 0);

  // A provider error: the heuristic narrative too.
  server->Enqueue(llm::testing::OpenAiError(400, "bad request"));
  v1::DiagnoseResponse fallback;
  REQUIRE(rig.Diagnose(request, &fallback).ok());
  CHECK(server->request_count() == 2);
  CHECK(fallback.report().narrative() == baseline->narrative());
  CHECK(fallback.llm_usage().calls() == 0);
  CHECK_FALSE(fallback.exchange().fallback().empty());
}

TEST_CASE("judge service without --llm-config never calls an LLM", "[judge_setup]") {
  auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
  JudgeRig rig;
  REQUIRE(rig.Start(JudgeServerOptions{}).ok());
  v1::DiagnoseResponse response;
  REQUIRE(rig.Diagnose(GemvRequest(), &response).ok());
  auto baseline = Judge().Diagnose(GemvRequest());
  REQUIRE(baseline.ok());
  CHECK(response.report().narrative() == baseline->narrative());
  CHECK(response.llm_usage().calls() == 0);
  CHECK(server->request_count() == 0);
  CHECK_FALSE(response.has_exchange());
}

TEST_CASE("judge server options are validated", "[judge_setup]") {
  JudgeServerOptions judge;
  CHECK(judge.Validate().ok());
  judge.rules.bound_sol_pct = 97;
  CHECK(judge.Validate().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("judge setup reports a bad LLM configuration", "[judge_setup]") {
  JudgeServerOptions options;
  {
    JudgeRig rig;
    options.llm_config = "/nonexistent/kagent-llm.json";
    absl::Status s = rig.Start(options);
    CHECK(absl::IsNotFound(s));
    CHECK_THAT(std::string(s.message()), Catch::Contains("/nonexistent/kagent-llm.json"));
  }
  {
    JudgeRig rig;
    TempFile config(R"({"provider": "openai", "model": "m", "base_url": "http://x", "colour": 1})");
    options.llm_config = config.path;
    absl::Status s = rig.Start(options);
    CHECK(absl::IsInvalidArgument(s));
    CHECK_THAT(std::string(s.message()), Catch::Contains("colour"));
  }
}

}  // namespace
}  // namespace kagent
