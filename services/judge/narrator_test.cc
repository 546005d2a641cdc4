// Tests of the narrative seam: citation validation and the heuristic narrator.
#include <map>
#include <string>

#include <catch2/catch.hpp>

#include "absl/status/status.h"
#include "common/testing/fixtures.h"
#include "kernel_model/metric_names.h"
#include "services/judge/judge.h"
#include "services/judge/narrator.h"

namespace kagent {
namespace {

using kagent::v1::BottleneckReport;
using kagent::v1::DiagnoseRequest;
using kagent::v1::HardwareMetrics;
using kagent::v1::RootCause;

DiagnoseRequest GemvRequest() {
  DiagnoseRequest request;
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gemv_memory_bound.json",
                                   request.mutable_metrics()).ok());
  REQUIRE(testing::LoadJsonFixture("tests/fixtures/metrics/gpu_h200.json", request.mutable_gpu()).ok());
  request.mutable_op_signature()->set_op_class("matvec");
  return request;
}

// A stand-in for an LLM narrator returning a fixed answer (or a fixed error).
class FakeNarrator : public JudgeNarrator {
 public:
  explicit FakeNarrator(absl::StatusOr<NarrativeResult> answer) : answer_(std::move(answer)) {}
  absl::StatusOr<NarrativeResult> Narrate(const BottleneckReport&, const HardwareMetrics&,
                                          const kagent::v1::GpuSpec*) override {
    return answer_;
  }
  absl::StatusOr<NarrativeResult> NarrateWithoutProfile(const BottleneckReport&,
                                                        const UnprofiledKernel&) override {
    return answer_;
  }
  std::string Name() const override { return "fake-llm"; }

 private:
  absl::StatusOr<NarrativeResult> answer_;
};

RootCause Cause(const std::string& text, const std::string& metric, double value) {
  RootCause c;
  c.set_cause(text);
  auto* e = c.add_evidence();
  e->set_metric(metric);
  e->set_value(value);
  e->set_unit("%");
  e->set_meaning("cited by the fake LLM");
  return c;
}

TEST_CASE("WithinOnePercent", "[narrator]") {
  CHECK(WithinOnePercent(90.6, 90.6));
  CHECK(WithinOnePercent(91.0, 90.6));    // 0.44% off: kept
  CHECK(!WithinOnePercent(92.0, 90.6));   // 1.5% off: dropped
  CHECK(WithinOnePercent(0, 0));
  CHECK(!WithinOnePercent(0.001, 0));
  CHECK(!WithinOnePercent(NAN, 1));
}

TEST_CASE("LLM citations are checked against the profile, the rules stay in charge", "[narrator]") {
  DiagnoseRequest request = GemvRequest();
  NarrativeResult answer;
  answer.narrative =
      "The gemv reads 128 MiB per call. "
      "DRAM is near peak: dram__throughput.avg.pct_of_peak_sustained_elapsed is 89.8%. "
      "The L2 is thrashing at lts__throughput.avg.pct_of_peak_sustained_elapsed 97%. "
      "Bank conflicts show in l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum. "
      "Long scoreboard stalls dominate.";
  // Valid: DRAM 89.7 cited as 89.9 (0.2% off).
  answer.extra_root_causes.push_back(
      Cause("HBM saturated", metric::kDramThroughput, 89.9));
  // Invalid value: L2 hit rate is 2.9%, cited as 40%.
  answer.extra_root_causes.push_back(Cause("L2 reuse is fine", metric::kL2HitRate, 40));
  // Invalid metric: not in the profile.
  answer.extra_root_causes.push_back(
      Cause("bank conflicts", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum", 1e6));

  FakeNarrator narrator(answer);
  Judge with_llm(JudgeOptions{}, &narrator);
  Judge rules_only;
  auto report = with_llm.Diagnose(request);
  auto baseline = rules_only.Diagnose(request);
  REQUIRE(report.ok());
  REQUIRE(baseline.ok());

  // Category, limiter, efficiency and the rules' causes are identical.
  CHECK(report->primary() == baseline->primary());
  CHECK(report->secondary() == baseline->secondary());
  CHECK(report->limiter() == baseline->limiter());
  CHECK(report->efficiency_pct() == baseline->efficiency_pct());
  REQUIRE(report->root_causes_size() == baseline->root_causes_size() + 1);
  for (int i = 0; i < baseline->root_causes_size(); ++i) {
    CHECK(report->root_causes(i).SerializeAsString() == baseline->root_causes(i).SerializeAsString());
  }
  // One extra cause survives, marked as the LLM's.
  const RootCause& extra = report->root_causes(baseline->root_causes_size());
  CHECK(extra.cause() == "HBM saturated");
  CHECK(extra.source() == "llm");

  // The narrative keeps the sentences without metric names and the correct citation,
  // and drops the wrong value (97% vs 41.3%) and the unknown metric.
  CHECK_THAT(report->narrative(), Catch::Contains("The gemv reads 128 MiB per call."));
  CHECK_THAT(report->narrative(), Catch::Contains("89.8%"));
  CHECK_THAT(report->narrative(), !Catch::Contains("thrashing"));
  CHECK_THAT(report->narrative(), !Catch::Contains("bank_conflicts"));
  CHECK_THAT(report->narrative(), Catch::Contains("Long scoreboard stalls dominate."));
}

TEST_CASE("ValidateNarrative reports each drop", "[narrator]") {
  DiagnoseRequest request = GemvRequest();
  auto view = ProfileView::Build(request.metrics(), request.gpu(), nullptr, nullptr);
  REQUIRE(view.ok());
  NarrativeResult answer;
  answer.narrative = "Kernel triton__0d1d2d is fine. Grid launch__grid_size is 512 CTAs.";
  answer.extra_root_causes.push_back(Cause("grid", metric::kGridSize, 600));
  request.mutable_metrics()->mutable_kernels(0)->set_kernel_name("triton__0d1d2d");
  NarrativeValidation checked = ValidateNarrative(answer, request.metrics(), *view, "llm");
  // The kernel name with "__" is not mistaken for a metric; 512 matches the grid.
  CHECK(checked.kept.narrative == answer.narrative);
  CHECK(checked.kept.extra_root_causes.empty());
  REQUIRE(checked.drops.size() == 2);  // the evidence, then the cause left without any
  CHECK_THAT(checked.drops[0], Catch::Contains("does not match"));
}

TEST_CASE("a failing narrator falls back to the heuristic narrative", "[narrator]") {
  DiagnoseRequest request = GemvRequest();
  FakeNarrator narrator(absl::UnavailableError("provider down"));
  auto report = Judge(JudgeOptions{}, &narrator).Diagnose(request);
  REQUIRE(report.ok());
  auto baseline = Judge().Diagnose(request);
  REQUIRE(baseline.ok());
  CHECK(report->narrative() == baseline->narrative());
  CHECK(report->primary() == kagent::v1::BOTTLENECK_MEMORY_BOUND);
}

// A matvec kernel measured at 2 ms on a CPU worker, eager at 3 ms, torch.compile at 1 ms.
DiagnoseRequest UnprofiledRequest() {
  DiagnoseRequest request;
  request.set_no_profile_reason("it ran on a CPU worker (Triton's interpreter has no hardware counters)");
  request.mutable_op_signature()->set_op_class("matvec");
  v1::Measurement* m = request.mutable_measurement();
  m->set_gpu_name("cpu");
  m->mutable_candidate()->set_median_ms(2);
  m->mutable_eager()->set_median_ms(3);
  m->mutable_compiled()->set_median_ms(1);
  return request;
}

TEST_CASE("a diagnosis without counters: no category, and only what was measured may be cited",
          "[narrator]") {
  DiagnoseRequest request = UnprofiledRequest();
  CHECK(UnprofiledFacts(request.measurement()) ==
        std::map<std::string, double>{{kFactMedianMs, 2},
                                      {kFactEagerMedianMs, 3},
                                      {kFactCompileMedianMs, 1},
                                      {kFactSpeedupVsEager, 1.5},
                                      {kFactSpeedupVsCompile, 0.5}});
  NarrativeResult answer;
  answer.narrative =
      "Without counters only the times speak. kernel__speedup_vs_eager is 1.5, so it beats "
      "eager. DRAM runs at dram__throughput.avg.pct_of_peak_sustained_elapsed 90. "
      "kernel__median_ms is 7 ms.";
  answer.extra_root_causes.push_back(Cause("slower than torch.compile", kFactSpeedupVsCompile, 0.5));
  answer.extra_root_causes.push_back(Cause("HBM saturated", metric::kDramThroughput, 90));
  answer.extra_root_causes.push_back(Cause("a made-up time", kFactMedianMs, 7));
  FakeNarrator narrator(answer);
  absl::StatusOr<BottleneckReport> report = Judge(JudgeOptions{}, &narrator).Diagnose(request);
  REQUIRE(report.ok());
  CHECK(report->primary() == kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED);
  CHECK(report->values().empty());  // the analyzer reads it as "no profile"
  CHECK(report->summary() ==
        "no hardware counters (it ran on a CPU worker (Triton's interpreter has no hardware "
        "counters)): the bottleneck is not classified");
  CHECK(report->narrative() ==
        "Without counters only the times speak. kernel__speedup_vs_eager is 1.5, so it beats eager.");
  REQUIRE(report->root_causes_size() == 1);
  CHECK(report->root_causes(0).cause() == "slower than torch.compile");
  CHECK(report->root_causes(0).source() == "llm");

  NarrativeValidation checked =
      ValidateNarrativeWithoutProfile(answer, UnprofiledFacts(request.measurement()), "llm");
  CHECK_THAT(checked.drops[0], Catch::Contains("metric " + std::string(metric::kDramThroughput) +
                                               " is not in what was measured (no hardware counters)"));

  // The heuristic narrative says why and what was measured.
  absl::StatusOr<BottleneckReport> plain = Judge().Diagnose(request);
  REQUIRE(plain.ok());
  CHECK(plain->narrative() ==
        "No hardware counters: it ran on a CPU worker (Triton's interpreter has no hardware "
        "counters); without a profile the bottleneck is not classified. The matvec kernel takes "
        "2 ms (median), 1.50x faster than eager PyTorch, 2.00x slower than torch.compile. "
        "Profile it on a GPU to learn what limits it.");
  // A failing narrator falls back to it.
  FakeNarrator failing(absl::UnavailableError("provider down"));
  absl::StatusOr<BottleneckReport> fallback = Judge(JudgeOptions{}, &failing).Diagnose(request);
  REQUIRE(fallback.ok());
  CHECK(fallback->narrative() == plain->narrative());
}

TEST_CASE("a request without kernels needs the reason and the measured median", "[narrator]") {
  DiagnoseRequest request = UnprofiledRequest();
  request.clear_no_profile_reason();
  absl::Status s = ValidateDiagnoseRequest(request);
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()), Catch::StartsWith("metrics.kernels is empty"));
  request = UnprofiledRequest();
  request.mutable_measurement()->mutable_candidate()->set_median_ms(0);
  s = ValidateDiagnoseRequest(request);
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("candidate.median_ms > 0"));
  CHECK(ValidateDiagnoseRequest(UnprofiledRequest()).ok());  // no GPU spec needed
}

TEST_CASE("the heuristic narrative is deterministic text from the rules", "[narrator]") {
  DiagnoseRequest request = GemvRequest();
  auto a = Judge().Diagnose(request);
  auto b = Judge().Diagnose(request);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->narrative() == b->narrative());
  CHECK_THAT(a->narrative(), Catch::StartsWith("Diagnosis: matvec_kernel: memory-bound"));
  CHECK_THAT(a->narrative(), Catch::Contains("streams from HBM at near peak"));
  CHECK_THAT(a->narrative(), Catch::Contains("moving fewer bytes"));
}

}  // namespace
}  // namespace kagent
