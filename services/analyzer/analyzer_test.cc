// Tests of the analyzer on the judge's reports for the H200 fixtures: at least three
// relevant, non-contradictory prescriptions each, the expected ones among them, and the
// request validation.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_join.h"
#include "common/testing/fixtures.h"
#include "kernel_model/categories.h"
#include "kernel_model/prescriber.h"
#include "services/analyzer/analyzer_service.h"
#include "services/judge/judge.h"
#include "services/judge/judge_service.h"

namespace kagent {
namespace {

using kagent::v1::PrescribeRequest;
using kagent::v1::PrescribeResponse;

std::shared_ptr<const Prescriber> RealAnalyzer() {
  static std::shared_ptr<const Prescriber> analyzer = [] {
    auto a = Prescriber::FromFile(testing::SourceDir() + "/data/optimization_db.json");
    REQUIRE(a.ok());
    return std::shared_ptr<const Prescriber>(std::move(*a));
  }();
  return analyzer;
}

// Runs the judge on a fixture and builds the analyzer's request from its report.
PrescribeRequest RequestFor(const std::string& fixture, const std::string& op_class) {
  kagent::v1::DiagnoseRequest diagnose;
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/" + fixture, diagnose.mutable_metrics()).ok());
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gpu_h200.json", diagnose.mutable_gpu()).ok());
  diagnose.mutable_op_signature()->set_op_class(op_class);
  auto report = Judge().Diagnose(diagnose);
  REQUIRE(report.ok());
  PrescribeRequest request;
  *request.mutable_report() = *report;
  *request.mutable_gpu() = diagnose.gpu();
  request.set_op_class(op_class);
  return request;
}

std::vector<std::string> Ids(const PrescribeResponse& response) {
  std::vector<std::string> ids;
  for (const auto& p : response.prescriptions()) ids.push_back(p.pattern_id());
  return ids;
}

bool Has(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// At least 3 prescriptions, each relevant (its categories include the report's primary
// or secondary), complete, and no two contradicting each other.
PrescribeResponse CheckPrescriptions(const PrescribeRequest& request) {
  auto analyzer = RealAnalyzer();
  auto response = analyzer->Prescribe(request);
  INFO(response.status().ToString());
  REQUIRE(response.ok());
  INFO("prescriptions: " << absl::StrJoin(Ids(*response), ", "));
  REQUIRE(response->prescriptions_size() >= 3);
  CHECK(response->database_version() == "1");
  for (int i = 0; i < response->prescriptions_size(); ++i) {
    const auto& p = response->prescriptions(i);
    INFO(p.pattern_id());
    const Pattern* pattern = analyzer->db().Find(p.pattern_id());
    REQUIRE(pattern != nullptr);
    const auto& cats = pattern->preconditions.categories;
    bool relevant = std::find(cats.begin(), cats.end(), request.report().primary()) != cats.end() ||
                    std::find(cats.begin(), cats.end(), request.report().secondary()) != cats.end();
    CHECK(relevant);
    CHECK(!p.title().empty());
    CHECK(!p.fix().empty());
    CHECK_THAT(p.rationale(), Catch::Contains("Matched on: "));
    CHECK(!p.expected_effect().empty());
    CHECK(p.expected_speedup() >= 1.0);
    CHECK((p.knob_changes_size() > 0 || !p.template_switch().empty()));
    if (i > 0) CHECK(p.score() <= response->prescriptions(i - 1).score());
    for (int j = 0; j < i; ++j) {
      const Pattern* other = analyzer->db().Find(response->prescriptions(j).pattern_id());
      CHECK(!analyzer->Contradict(*pattern, *other));
    }
  }
  return *response;
}

TEST_CASE("memory-bound gemv gets streaming fixes, not vectorization", "[analyzer]") {
  // DRAM already at 89.7%: vectorize-global-access requires DRAM < 85% and is rejected;
  // the matvec template, more loads in flight and streaming hints remain.
  PrescribeRequest request = RequestFor("gemv_memory_bound.json", "matvec");
  auto ids = Ids(CheckPrescriptions(request));
  CHECK(Has(ids, "matvec-row-per-program"));
  CHECK(Has(ids, "streaming-eviction-hints"));
  CHECK(!Has(ids, "vectorize-global-access"));
  CHECK(!Has(ids, "gemm-persistent-tma-warp-specialized"));  // not a GEMM
}

TEST_CASE("register-limited norm: cut registers per thread first", "[analyzer]") {
  // Occupancy-limited by registers (128/thread): the top fixes spread the row over more
  // warps, loop over chunks, or cap registers. fewer-warps-per-row-reduction also matches
  // (barrier stalls 3.1) but halves num_warps, which contradicts the better-ranked x2.
  PrescribeRequest request = RequestFor("register_limited.json", "norm");
  auto response = CheckPrescriptions(request);
  auto ids = Ids(response);
  CHECK(ids.front() == "spread-row-over-more-warps");
  CHECK(Has(ids, "loop-over-row-chunks"));
  CHECK(Has(ids, "cap-registers-maxnreg"));
  CHECK(!Has(ids, "fewer-warps-per-row-reduction"));
  auto all = RealAnalyzer()->Match(request);
  REQUIRE(all.ok());
  bool matched = false;
  for (const auto& m : *all) matched = matched || m.pattern->id == "fewer-warps-per-row-reduction";
  CHECK(matched);
  CHECK_THAT(response.prescriptions(0).rationale(), Catch::Contains("limiter registers"));
  CHECK_THAT(response.prescriptions(0).rationale(), Catch::Contains("launch__registers_per_thread 128 > 64"));
}

TEST_CASE("compute-bound GEMM on Hopper: TMA, persistent, big tiles", "[analyzer]") {
  PrescribeRequest request = RequestFor("gemm_compute_bound.json", "gemm");
  auto ids = Ids(CheckPrescriptions(request));
  CHECK(Has(ids, "gemm-persistent-tma-warp-specialized"));
  CHECK(Has(ids, "gemm-hopper-tile-128x256"));
  CHECK(Has(ids, "gemm-persistent"));
  // Tensor cores already busy (83.6%): no tensor-core adoption fixes.
  CHECK(!Has(ids, "tile-multiple-of-16-for-mma"));
  CHECK(!Has(ids, "tf32-tensor-cores-for-fp32"));
  CHECK(!Has(ids, "hopper-wgmma-shapes"));

  SECTION("on an A100 the Hopper-only patterns are gone") {
    request.mutable_gpu()->set_arch("sm_80");
    auto a100 = Ids(CheckPrescriptions(request));
    CHECK(!Has(a100, "gemm-persistent-tma-warp-specialized"));
    CHECK(!Has(a100, "gemm-hopper-tile-128x256"));
    CHECK(Has(a100, "gemm-persistent"));
  }
}

TEST_CASE("TF32 is not prescribed under an fp32 tolerance tighter than it keeps", "[analyzer]") {
  // 01_matmul_square_fp32: an fp32 GEMM on the FP32 pipes (tensor pipe idle) whose job
  // has the fp32 default tolerance (atol = rtol = 1e-4). TF32 keeps 10 mantissa bits
  // (~1e-3 relative error on a K=4096 product): it cannot pass, so it is not offered.
  PrescribeRequest request = RequestFor("gemm_compute_bound.json", "gemm");
  (*request.mutable_report()->mutable_values())
      ["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] = 1.0;
  auto matched = [&](const PrescribeRequest& r) {
    auto all = RealAnalyzer()->Match(r);
    REQUIRE(all.ok());
    for (const auto& m : *all) {
      if (m.pattern->id == "tf32-tensor-cores-for-fp32") return true;
    }
    return false;
  };
  SECTION("no tolerance in the request: the fp32 defaults apply") { CHECK(!matched(request)); }
  SECTION("the fp32 default tolerance, stated") {
    request.set_atol(1e-4);
    request.set_rtol(1e-4);
    CHECK(!matched(request));
  }
  SECTION("a loose rtol with a tight atol is still too tight") {
    request.set_atol(1e-4);
    request.set_rtol(1e-2);
    CHECK(!matched(request));
  }
  SECTION("a job that allows 1e-2 gets TF32, with the tolerance among the reasons") {
    request.set_atol(1e-2);
    request.set_rtol(1e-2);
    REQUIRE(matched(request));
    auto all = RealAnalyzer()->Match(request);
    for (const auto& m : *all) {
      if (m.pattern->id != "tf32-tensor-cores-for-fp32") continue;
      CHECK_THAT(absl::StrJoin(m.reasons, "; "), Catch::Contains("tolerance atol 0.01 rtol 0.01 >= 0.001"));
    }
  }
}

TEST_CASE("tiny launch-bound kernel: CUDA graphs and fewer launches", "[analyzer]") {
  PrescribeRequest request = RequestFor("tiny_launch_bound.json", "elementwise");
  auto ids = Ids(CheckPrescriptions(request));
  CHECK(ids.front() == "cuda-graph-capture");
  CHECK(Has(ids, "autotune-off-hot-path"));
  CHECK(Has(ids, "split-work-smaller-blocks"));      // secondary: grid-underfilled
  CHECK(!Has(ids, "fuse-kernel-chain"));             // needs >= 2 launches
}

TEST_CASE("values the judge derived count for preconditions", "[analyzer]") {
  // With the wall-clock median the judge derives kagent__gpu_busy_pct = 40% and carries
  // it in the report; the analyzer has no timing but matches avoid-host-overhead
  // (busy < 50%) from it.
  kagent::v1::DiagnoseRequest diagnose;
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/tiny_launch_bound.json", diagnose.mutable_metrics()).ok());
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gpu_h200.json", diagnose.mutable_gpu()).ok());
  diagnose.mutable_timing()->set_median_ms(0.0072);
  auto report = Judge().Diagnose(diagnose);
  REQUIRE(report.ok());
  PrescribeRequest request;
  *request.mutable_report() = *report;
  *request.mutable_gpu() = diagnose.gpu();
  request.set_op_class("elementwise");
  auto ids = Ids(CheckPrescriptions(request));
  CHECK(Has(ids, "avoid-host-overhead"));
  request.clear_report();
  *request.mutable_report() = RequestFor("tiny_launch_bound.json", "elementwise").report();
  CHECK(!Has(Ids(CheckPrescriptions(request)), "avoid-host-overhead"));
}

TEST_CASE("grid-underfilled row sum: split the rows", "[analyzer]") {
  PrescribeRequest request = RequestFor("grid_underfilled.json", "reduction");
  auto ids = Ids(CheckPrescriptions(request));
  CHECK(Has(ids, "reduction-two-pass"));
  CHECK(Has(ids, "reduction-atomic-split"));
  CHECK(Has(ids, "grid-over-all-independent-dims"));
  CHECK(!Has(ids, "split-work-smaller-blocks"));  // one CTA per row: smaller blocks add none
}

TEST_CASE("at-roofline copy: only small, honest gains", "[analyzer]") {
  PrescribeRequest request = RequestFor("at_roofline.json", "elementwise");
  auto response = CheckPrescriptions(request);
  auto ids = Ids(response);
  CHECK(Has(ids, "persistent-grid-stride"));
  CHECK(Has(ids, "streaming-eviction-hints"));
  for (const auto& p : response.prescriptions()) CHECK(p.expected_speedup() <= 1.1);
}

TEST_CASE("multi-kernel softmax: fuse into one online pass", "[analyzer]") {
  PrescribeRequest request = RequestFor("multi_kernel_softmax.json", "softmax");
  auto ids = Ids(CheckPrescriptions(request));
  CHECK(ids.front() == "online-softmax-single-pass");
  CHECK(Has(ids, "fuse-kernel-chain"));
  CHECK(Has(ids, "streaming-eviction-hints"));
}

TEST_CASE("the avoid-list filters exact ids and prefixes", "[analyzer]") {
  PrescribeRequest request = RequestFor("gemm_compute_bound.json", "gemm");
  request.add_avoid_patterns("gemm-persistent*");
  request.add_avoid_patterns("gemm-hopper-tile-128x256");
  auto ids = Ids(CheckPrescriptions(request));
  for (const auto& id : ids) {
    CHECK(id.rfind("gemm-persistent", 0) != 0);
    CHECK(id != "gemm-hopper-tile-128x256");
  }
  CHECK(IsAvoided("gemm-split-k", {"gemm-*"}));
  CHECK(!IsAvoided("gemm-split-k", {"gemm-split"}));
}

TEST_CASE("max_results limits the list", "[analyzer]") {
  PrescribeRequest request = RequestFor("register_limited.json", "norm");
  request.set_max_results(2);
  auto response = RealAnalyzer()->Prescribe(request);
  REQUIRE(response.ok());
  CHECK(response->prescriptions_size() == 2);
  request.set_max_results(0);  // default 8
  response = RealAnalyzer()->Prescribe(request);
  REQUIRE(response.ok());
  CHECK(response->prescriptions_size() <= 8);
}

TEST_CASE("an unknown op class gets only op-neutral patterns", "[analyzer]") {
  PrescribeRequest request = RequestFor("gemm_compute_bound.json", "");
  auto response = RealAnalyzer()->Prescribe(request);
  REQUIRE(response.ok());
  for (const auto& p : response->prescriptions()) {
    const auto& ops = RealAnalyzer()->db().Find(p.pattern_id())->preconditions.op_classes;
    CHECK(std::find(ops.begin(), ops.end(), "*") != ops.end());
  }
}

TEST_CASE("without metrics, patterns with required thresholds drop out", "[analyzer]") {
  PrescribeRequest request = RequestFor("register_limited.json", "norm");
  // The judge's report carries launch__registers_per_thread = 128: that satisfies
  // spread-row-over-more-warps (registers > 64, required).
  CHECK(Has(Ids(*RealAnalyzer()->Prescribe(request)), "spread-row-over-more-warps"));
  // Without the report's values the metric is unknown.
  request.mutable_report()->clear_values();
  CHECK(!Has(Ids(*RealAnalyzer()->Prescribe(request)), "spread-row-over-more-warps"));
}

TEST_CASE("without a profile, op-class patterns match on the op class alone", "[analyzer]") {
  PrescribeRequest request;
  request.set_op_class("matvec");
  request.mutable_gpu()->set_arch("sm_90");
  auto response = RealAnalyzer()->Prescribe(request);
  REQUIRE(response.ok());
  auto ids = Ids(*response);
  CHECK(Has(ids, "matvec-row-per-program"));
  for (const auto& p : response->prescriptions()) {
    const Pattern* pattern = RealAnalyzer()->db().Find(p.pattern_id());
    const auto& ops = pattern->preconditions.op_classes;
    CHECK(std::find(ops.begin(), ops.end(), "*") == ops.end());
    for (const auto& c : pattern->preconditions.metrics) CHECK(!c.required);
    CHECK_THAT(p.rationale(), Catch::Contains("no profile"));
  }
}

TEST_CASE("bad analyzer requests are INVALID_ARGUMENT", "[analyzer]") {
  auto analyzer = RealAnalyzer();
  PrescribeRequest request = RequestFor("gemv_memory_bound.json", "matvec");
  SECTION("a report with values but no category") {
    request.mutable_report()->clear_primary();
    CHECK(analyzer->Prescribe(request).status().code() == absl::StatusCode::kInvalidArgument);
  }
  SECTION("a value that is not finite") {
    (*request.mutable_report()->mutable_values())["dram__bytes_read.sum"] = std::nan("");
    CHECK(analyzer->Prescribe(request).status().code() == absl::StatusCode::kInvalidArgument);
  }
  SECTION("max_results out of range") {
    request.set_max_results(65);
    CHECK(analyzer->Prescribe(request).status().code() == absl::StatusCode::kInvalidArgument);
    request.set_max_results(-1);
    CHECK(analyzer->Prescribe(request).status().code() == absl::StatusCode::kInvalidArgument);
  }
  SECTION("through the gRPC service") {
    AnalyzerServiceImpl service(analyzer);
    grpc::ServerContext context;
    PrescribeResponse response;
    request.mutable_report()->clear_primary();
    grpc::Status status = service.Prescribe(&context, &request, &response);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK_THAT(status.error_message(), Catch::Contains("report"));
  }
}

TEST_CASE("judge service: bad requests are INVALID_ARGUMENT over gRPC", "[analyzer]") {
  JudgeServiceImpl service;
  grpc::ServerContext context;
  kagent::v1::DiagnoseResponse response;
  kagent::v1::DiagnoseRequest request;
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gemv_memory_bound.json", request.mutable_metrics()).ok());
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gpu_h200.json", request.mutable_gpu()).ok());
  CHECK(service.Diagnose(&context, &request, &response).ok());
  CHECK(response.report().primary() == kagent::v1::BOTTLENECK_MEMORY_BOUND);

  kagent::v1::DiagnoseRequest no_kernels = request;
  no_kernels.mutable_metrics()->clear_kernels();
  grpc::Status status = service.Diagnose(&context, &no_kernels, &response);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);

  kagent::v1::DiagnoseRequest no_gpu = request;
  no_gpu.clear_gpu();
  status = service.Diagnose(&context, &no_gpu, &response);
  CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK_THAT(status.error_message(), Catch::Contains("gpu"));
}

}  // namespace
}  // namespace kagent

#include <prometheus/registry.h>

#include "services/analyzer/analyzer_setup.h"

namespace kagent {
namespace {

TEST_CASE("services authenticate calls and count outcomes", "[analyzer]") {
  Authenticator auth({{"secret-token", "acme"}}, "");
  prometheus::Registry registry;
  AnalyzerServiceImpl analyzer_service(RealAnalyzer(), &auth, &registry);
  JudgeServiceImpl judge_service(JudgeOptions{}, nullptr, &auth, &registry);
  PrescribeRequest request = RequestFor("gemv_memory_bound.json", "matvec");
  PrescribeResponse response;
  {
    grpc::ServerContext context;  // no token
    CHECK(analyzer_service.Prescribe(&context, &request, &response).error_code() ==
          grpc::StatusCode::UNAUTHENTICATED);
    kagent::v1::DiagnoseRequest diagnose;
    kagent::v1::DiagnoseResponse diagnosed;
    CHECK(judge_service.Diagnose(&context, &diagnose, &diagnosed).error_code() ==
          grpc::StatusCode::UNAUTHENTICATED);
  }
  // Counters exist for every label from the start (dashboards query only what exists).
  bool judge_family = false, analyzer_family = false;
  for (const auto& family : registry.Collect()) {
    judge_family = judge_family || family.name == "kagent_judge_diagnoses_total";
    analyzer_family = analyzer_family || family.name == "kagent_analyzer_requests_total";
  }
  CHECK(judge_family);
  CHECK(analyzer_family);
}

TEST_CASE("server options are validated", "[analyzer]") {
  AnalyzerServerOptions analyzer;
  CHECK(analyzer.Validate().ok());
  analyzer.default_max_results = 0;
  CHECK(analyzer.Validate().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kagent
