// Tests of the heuristic reflexion on parent/attempt pairs built from the fixtures.
#include <algorithm>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "common/testing/fixtures.h"
#include "kernel_model/metric_names.h"
#include "kernel_model/prescriber.h"
#include "services/judge/judge.h"
#include "services/orchestrator/reflexion.h"

namespace kagent {
namespace {

using kagent::v1::Candidate;

const Prescriber& TheAnalyzer() {
  static const Prescriber* analyzer = [] {
    auto a = Prescriber::FromFile(testing::SourceDir() + "/data/optimization_db.json");
    REQUIRE(a.ok());
    return a->release();
  }();
  return *analyzer;
}

kagent::v1::GpuSpec H200() {
  kagent::v1::GpuSpec gpu;
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gpu_h200.json", &gpu).ok());
  return gpu;
}

// A measured candidate with the fixture's metrics and the judge's report.
Candidate Measured(const std::string& id, const std::string& fixture, const std::string& op_class,
                   double median_ms) {
  Candidate c;
  c.set_id(id);
  c.set_round(1);
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/" + fixture, c.mutable_metrics()).ok());
  kagent::v1::DiagnoseRequest request;
  *request.mutable_metrics() = c.metrics();
  *request.mutable_gpu() = H200();
  request.mutable_op_signature()->set_op_class(op_class);
  auto report = Judge().Diagnose(request);
  REQUIRE(report.ok());
  *c.mutable_report() = *report;
  auto* m = c.mutable_measurement();
  m->set_verdict(kagent::v1::VERDICT_CORRECT);
  m->mutable_candidate()->set_median_ms(median_ms);
  m->mutable_candidate()->set_p10_ms(median_ms * 0.995);
  m->mutable_candidate()->set_p90_ms(median_ms * 1.005);
  m->mutable_op_signature()->set_op_class(op_class);
  return c;
}

void Apply(Candidate* attempt, const Candidate& parent, const std::string& pattern_id) {
  const Pattern* p = TheAnalyzer().db().Find(pattern_id);
  REQUIRE(p != nullptr);
  attempt->set_parent_id(parent.id());
  attempt->set_worker_index(2);
  attempt->mutable_prescription()->set_pattern_id(p->id);
  attempt->mutable_prescription()->set_title(p->title);
  attempt->mutable_prescription()->set_expected_speedup(p->expected_speedup);
}

bool Has(const google::protobuf::RepeatedPtrField<std::string>& list, const std::string& id) {
  return std::find(list.begin(), list.end(), id) != list.end();
}

TEST_CASE("an effective fix that moved its target confirms the diagnosis", "[reflexion]") {
  // spread-row-over-more-warps on the register-limited norm: registers fall 128 -> 64,
  // time 0.262 -> 0.2096 ms (1.25x, expected 1.30x).
  const auto gpu = H200();
  ReflectContext context;
  context.prescriber = &TheAnalyzer();
  context.gpu = &gpu;
  Candidate parent = Measured("k0", "register_limited.json", "norm", 0.262);
  Candidate attempt = Measured("k1", "register_limited.json", "norm", 0.2096);
  (*attempt.mutable_metrics()->mutable_kernels(0)->mutable_values())[metric::kRegistersPerThread] = 64;
  Apply(&attempt, parent, "spread-row-over-more-warps");
  auto r = HeuristicReflect(parent, attempt, context);
  REQUIRE(r.ok());
  CHECK(r->candidate_id() == "k1");
  CHECK(r->parent_id() == "k0");
  CHECK(r->worker_index() == 2);
  CHECK(r->pattern_id() == "spread-row-over-more-warps");
  CHECK(r->fix_effective());
  CHECK(r->diagnosis_correct());
  CHECK(r->actual_speedup() == Approx(1.25));
  CHECK(r->expected_speedup() == Approx(1.3));
  CHECK_THAT(r->lesson(), Catch::Contains("expected 1.30x, measured 1.25x"));
  CHECK_THAT(r->lesson(), Catch::Contains("0.262 ms -> 0.2096 ms"));
  CHECK_THAT(r->lesson(), Catch::Contains("launch__registers_per_thread moved 128 -> 64"));
  CHECK_THAT(r->lesson(), Catch::Contains("the diagnosis is confirmed"));
  CHECK(r->avoid_patterns().empty());
  // Conflict-free neighbours: not the applied pattern, nothing halving num_warps.
  REQUIRE(r->try_patterns_size() > 0);
  CHECK(r->try_patterns_size() <= 3);
  CHECK(!Has(r->try_patterns(), "spread-row-over-more-warps"));
  CHECK(!Has(r->try_patterns(), "fewer-warps-per-row-reduction"));
  const Pattern* applied = TheAnalyzer().db().Find("spread-row-over-more-warps");
  for (const auto& id : r->try_patterns()) {
    CHECK(!TheAnalyzer().Contradict(*applied, *TheAnalyzer().db().Find(id)));
  }
}

TEST_CASE("a target that moved without a speedup refutes the bottleneck, not the fix", "[reflexion]") {
  ReflectContext context;
  context.prescriber = &TheAnalyzer();
  Candidate parent = Measured("k0", "register_limited.json", "norm", 0.262);
  Candidate attempt = Measured("k1", "register_limited.json", "norm", 0.263);
  (*attempt.mutable_metrics()->mutable_kernels(0)->mutable_values())[metric::kRegistersPerThread] = 64;
  Apply(&attempt, parent, "spread-row-over-more-warps");
  auto r = HeuristicReflect(parent, attempt, context);
  REQUIRE(r.ok());
  CHECK(!r->fix_effective());
  CHECK(r->diagnosis_correct());  // the targeted metric moved as intended
  CHECK_THAT(r->lesson(), Catch::Contains("no measurable effect"));
  CHECK_THAT(r->lesson(), Catch::Contains("was not the limiter"));
  CHECK(r->avoid_patterns().empty());  // within noise: not a regression
}

TEST_CASE("a regression puts the pattern on the avoid-list", "[reflexion]") {
  ReflectContext context;
  context.prescriber = &TheAnalyzer();
  Candidate parent = Measured("k0", "gemv_memory_bound.json", "matvec", 0.0400);
  Candidate attempt = Measured("k1", "gemv_memory_bound.json", "matvec", 0.0500);
  Apply(&attempt, parent, "deeper-software-pipeline");
  auto r = HeuristicReflect(parent, attempt, context);
  REQUIRE(r.ok());
  CHECK(!r->fix_effective());
  CHECK(r->actual_speedup() == Approx(0.8));
  CHECK_THAT(r->lesson(), Catch::Contains("a regression"));
  CHECK(Has(r->avoid_patterns(), "deeper-software-pipeline"));
  CHECK(!Has(r->try_patterns(), "deeper-software-pipeline"));
  // Unchanged long-scoreboard stalls: the fix did not change what it targeted.
  CHECK_THAT(r->lesson(), Catch::Contains("did not change what it targeted"));
  CHECK(!r->diagnosis_correct());
}

TEST_CASE("a fallback move is judged as itself, not as the prescribed pattern", "[reflexion]") {
  // 01_matmul_square_fp32: tf32-tensor-cores-for-fp32 was prescribed, the kernel had no
  // input_precision knob, the brain made num_warps 4 -> 8 instead (expected x1.10) and
  // it measured 0.87x.
  ReflectContext context;
  context.prescriber = &TheAnalyzer();
  Candidate parent = Measured("k0", "gemm_compute_bound.json", "gemm", 0.170);
  Candidate attempt = Measured("k0-c0", "gemm_compute_bound.json", "gemm", 0.170 / 0.87);
  Apply(&attempt, parent, "tf32-tensor-cores-for-fp32");
  auto* rx = attempt.mutable_prescription();
  rx->set_fallback("the kernel has no input_precision knob");
  rx->set_fix("num_warps 4 -> 8 (launch keyword of matmul_kernel)");
  rx->set_expected_speedup(1.10);
  auto r = HeuristicReflect(parent, attempt, context);
  REQUIRE(r.ok());
  INFO(r->lesson());
  CHECK_THAT(r->lesson(), Catch::StartsWith(
      "Applied num_warps 4 -> 8 (launch keyword of matmul_kernel) (fallback: the kernel has no "
      "input_precision knob for tf32-tensor-cores-for-fp32) to k0: expected 1.10x, measured 0.87x"));
  CHECK_THAT(r->lesson(), Catch::Contains("a regression"));
  CHECK_THAT(r->lesson(), Catch::Contains("neither confirms nor refutes"));
  CHECK_THAT(r->lesson(), !Catch::Contains("refute the diagnosis"));
  CHECK_THAT(r->lesson(), !Catch::Contains("TF32 tensor cores"));
  CHECK(r->expected_speedup() == Approx(1.10));
  CHECK(!r->fix_effective());
  // The pattern was not tried: it stays off the avoid-list.
  CHECK(!Has(r->avoid_patterns(), "tf32-tensor-cores-for-fp32"));

  SECTION("a failed fallback does not put the pattern on the avoid-list either") {
    attempt.mutable_measurement()->set_verdict(kagent::v1::VERDICT_COMPILE_ERROR);
    auto f = HeuristicReflect(parent, attempt, context);
    REQUIRE(f.ok());
    CHECK_THAT(f->lesson(), Catch::StartsWith("Applied num_warps 4 -> 8"));
    CHECK(f->avoid_patterns_size() == 0);
  }
}

TEST_CASE("a failed verdict is ineffective with the verdict as the lesson", "[reflexion]") {
  ReflectContext context;
  context.prescriber = &TheAnalyzer();
  Candidate parent = Measured("k0", "gemm_compute_bound.json", "gemm", 0.170);
  Candidate attempt;
  attempt.set_id("k1");
  Apply(&attempt, parent, "tf32-tensor-cores-for-fp32");
  attempt.mutable_measurement()->set_verdict(kagent::v1::VERDICT_INCORRECT);
  attempt.mutable_measurement()->mutable_correctness()->set_reason("max abs error 3.1e-3 > atol 1e-4 at [12, 7]");
  auto r = HeuristicReflect(parent, attempt, context);
  REQUIRE(r.ok());
  CHECK(!r->fix_effective());
  CHECK(!r->diagnosis_correct());
  CHECK(r->actual_speedup() == 0);
  CHECK_THAT(r->lesson(), Catch::Contains("INCORRECT (max abs error 3.1e-3 > atol 1e-4 at [12, 7])"));
  CHECK_THAT(r->lesson(), Catch::Contains("expected 3.00x"));
  CHECK(Has(r->avoid_patterns(), "tf32-tensor-cores-for-fp32"));
  // Alternatives for the parent's diagnosis.
  CHECK(r->try_patterns_size() > 0);
  CHECK(!Has(r->try_patterns(), "tf32-tensor-cores-for-fp32"));

  SECTION("an infrastructure error is not held against the pattern") {
    attempt.mutable_measurement()->set_verdict(kagent::v1::VERDICT_INFRA_ERROR);
    attempt.mutable_measurement()->clear_correctness();
    attempt.mutable_measurement()->set_log("harness started\nworker lost GPU lease\n");
    auto infra = HeuristicReflect(parent, attempt, context);
    REQUIRE(infra.ok());
    CHECK(infra->avoid_patterns().empty());
    CHECK_THAT(infra->lesson(), Catch::Contains("INFRA_ERROR (worker lost GPU lease"));
    CHECK_THAT(infra->lesson(), Catch::Contains("retry"));
  }
  SECTION("a duplicate kernel is not held against the pattern") {
    attempt.mutable_measurement()->set_verdict(kagent::v1::VERDICT_DUPLICATE);
    attempt.mutable_measurement()->mutable_correctness()->set_reason(
        "duplicate: the fix left the parent kernel unchanged");
    auto dup = HeuristicReflect(parent, attempt, context);
    REQUIRE(dup.ok());
    CHECK(!dup->fix_effective());
    CHECK(dup->avoid_patterns().empty());
    CHECK_THAT(dup->lesson(), Catch::Contains("DUPLICATE (duplicate: the fix left"));
    CHECK_THAT(dup->lesson(), Catch::Contains("neither confirmed nor refuted"));
  }
  SECTION("a failed LLM endpoint is not held against the pattern") {
    attempt.mutable_measurement()->set_verdict(kagent::v1::VERDICT_GENERATION_FAILED);
    attempt.mutable_measurement()->mutable_correctness()->set_reason(
        "no candidate: the LLM endpoint failed: UNAVAILABLE: overloaded");
    auto gen = HeuristicReflect(parent, attempt, context);
    REQUIRE(gen.ok());
    CHECK(gen->avoid_patterns().empty());
    CHECK_THAT(gen->lesson(), Catch::Contains("GENERATION_FAILED (no candidate"));
    CHECK_THAT(gen->lesson(), Catch::Contains("The LLM endpoint failed"));
  }
}

TEST_CASE("without metrics or a database the speedup decides", "[reflexion]") {
  Candidate parent;
  parent.set_id("k0");
  parent.mutable_measurement()->set_verdict(kagent::v1::VERDICT_CORRECT);
  parent.mutable_measurement()->mutable_candidate()->set_median_ms(1.0);
  Candidate attempt = parent;
  attempt.set_id("k1");
  attempt.mutable_prescription()->set_pattern_id("gemm-split-k");
  attempt.mutable_prescription()->set_expected_speedup(1.6);
  attempt.mutable_measurement()->mutable_candidate()->set_median_ms(0.5);
  auto r = HeuristicReflect(parent, attempt);
  REQUIRE(r.ok());
  CHECK(r->fix_effective());
  CHECK(r->diagnosis_correct());
  CHECK(r->actual_speedup() == Approx(2.0));
  CHECK_THAT(r->lesson(), Catch::Contains("effective, at or above expectation"));
  CHECK(r->try_patterns().empty());
}

TEST_CASE("a parent diagnosed without counters says nothing of where the bottleneck moved",
          "[reflexion]") {
  Candidate parent;
  parent.set_id("k0");
  parent.mutable_measurement()->set_verdict(kagent::v1::VERDICT_CORRECT);
  parent.mutable_measurement()->mutable_candidate()->set_median_ms(1.0);
  parent.mutable_report()->set_summary("no hardware counters (its profile failed: ...)");
  Candidate attempt = parent;
  attempt.set_id("k1");
  attempt.mutable_prescription()->set_pattern_id("gemm-split-k");
  attempt.mutable_measurement()->mutable_candidate()->set_median_ms(0.5);
  attempt.mutable_report()->set_primary(kagent::v1::BOTTLENECK_MEMORY_BOUND);
  auto r = HeuristicReflect(parent, attempt);
  REQUIRE(r.ok());
  CHECK_THAT(r->lesson(), !Catch::Contains("The bottleneck moved"));
  parent.mutable_report()->set_primary(kagent::v1::BOTTLENECK_COMPUTE_BOUND);
  r = HeuristicReflect(parent, attempt);
  REQUIRE(r.ok());
  CHECK_THAT(r->lesson(), Catch::Contains("The bottleneck moved: compute-bound -> memory-bound."));
}

TEST_CASE("noise decides what counts as an effect", "[reflexion]") {
  Candidate parent;
  parent.set_id("k0");
  auto* pm = parent.mutable_measurement();
  pm->set_verdict(kagent::v1::VERDICT_CORRECT);
  pm->mutable_candidate()->set_median_ms(1.0);
  Candidate attempt = parent;
  attempt.set_id("k1");
  attempt.mutable_measurement()->mutable_candidate()->set_median_ms(1.0 / 1.02);  // 2% faster
  auto quiet = HeuristicReflect(parent, attempt);
  REQUIRE(quiet.ok());
  CHECK(quiet->fix_effective());  // noise floor 1%
  // p10..p90 spread of +/-4% makes a 2% gain indistinguishable from noise.
  pm->mutable_candidate()->set_p10_ms(0.96);
  pm->mutable_candidate()->set_p90_ms(1.04);
  auto noisy = HeuristicReflect(parent, attempt);
  REQUIRE(noisy.ok());
  CHECK(!noisy->fix_effective());
  CHECK_THAT(noisy->lesson(), Catch::Contains("noise +/-4.0%"));
}

TEST_CASE("reflexion rejects a parent without a valid measurement", "[reflexion]") {
  Candidate parent;
  parent.set_id("k0");
  Candidate attempt;
  CHECK(HeuristicReflect(parent, attempt).status().code() == absl::StatusCode::kInvalidArgument);
  parent.mutable_measurement()->set_verdict(kagent::v1::VERDICT_CORRECT);
  parent.mutable_measurement()->mutable_candidate()->set_median_ms(1.0);
  attempt.mutable_measurement()->set_verdict(kagent::v1::VERDICT_CORRECT);
  CHECK(HeuristicReflect(parent, attempt).status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kagent
