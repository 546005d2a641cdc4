// Tests of the optimization database: the committed file loads and covers the required
// topics; malformed files fail with precise messages; knob and arch semantics.
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_replace.h"
#include "common/testing/fixtures.h"
#include "kernel_model/metric_names.h"
#include "kernel_model/optimization_db.h"
#include "kernel_model/prescriber.h"

namespace kagent {
namespace {

OptimizationDb LoadRealDb() {
  auto db = OptimizationDb::LoadFromFile(testing::SourceDir() + "/data/optimization_db.json");
  INFO(db.status().ToString());
  REQUIRE(db.ok());
  return *std::move(db);
}

// Every metric name the judge's view can hold (ncu names read, plus derived values).
std::set<std::string> KnownMetrics() {
  namespace m = metric;
  return {m::kDuration, m::kSmClock, m::kComputeSol, m::kMemorySol, m::kDramThroughput,
          m::kDramBytesRead, m::kDramBytesWrite, m::kL2HitRate, m::kL1HitRate, m::kL2Throughput,
          m::kL1Throughput, m::kAchievedOccupancy, m::kTheoreticalOccupancy, m::kLimitRegisters,
          m::kLimitSharedMem, m::kLimitBlocks, m::kLimitWarps, m::kRegistersPerThread,
          m::kSharedMemStatic, m::kSharedMemDynamic, m::kGridSize, m::kBlockSize, m::kWaves,
          m::kStallLongScoreboard, m::kStallShortScoreboard, m::kStallBarrier,
          m::kStallMemoryThrottle, m::kStallMioThrottle, m::kStallLgThrottle,
          m::kStallMathPipeThrottle, m::kStallWait, m::kStallNotSelected, m::kStallNoInstruction,
          m::kTensorPipe, m::kFaddInst, m::kFmulInst, m::kFfmaInst, m::kLaunches,
          m::kDistinctKernels, m::kTotalKernelTime, m::kMeanLaunchDuration, m::kDominantShare,
          m::kGridFill, m::kGpuBusy, m::kBytesOverMin, m::kAchievedBandwidthPct,
          m::kAchievedFlopsPct, m::kDerivedTheoreticalOccupancy};
}

TEST_CASE("the committed database loads and is complete", "[db]") {
  OptimizationDb db = LoadRealDb();
  CHECK(db.version() >= 1);
  CHECK(db.patterns().size() >= 40);
  const std::set<std::string> known = KnownMetrics();
  for (const Pattern& p : db.patterns()) {
    INFO(p.id);
    CHECK(!p.fix.empty());
    CHECK(!p.rationale.empty());
    CHECK(!p.expected_effect.empty());
    CHECK(!p.risks.empty());
    // Every prescription is actionable by the heuristic brain: knobs or a template.
    CHECK((!p.knob_changes.empty() || !p.template_switch.empty()));
    // Metric names are real (a typo would silently never match).
    for (const MetricCondition& c : p.preconditions.metrics) CHECK(known.count(c.metric) == 1);
    REQUIRE(p.target.has_value());
    CHECK(known.count(p.target->metric) == 1);
  }
}

TEST_CASE("the database covers the required optimization topics", "[db]") {
  OptimizationDb db = LoadRealDb();
  for (const char* id :
       {"vectorize-global-access", "coalesce-contiguous-dimension", "spread-row-over-more-warps",
        "cap-registers-maxnreg", "deeper-software-pipeline", "gemm-larger-tiles", "gemm-split-k",
        "gemm-stream-k", "gemm-persistent", "gemm-persistent-tma-warp-specialized",
        "warp-specialized-main-loop", "gemm-grouped-program-order", "fuse-kernel-chain",
        "gemm-epilogue-fusion", "reduction-two-pass", "reduction-atomic-split", "reduction-single-pass",
        "matvec-row-per-program", "tile-multiple-of-16-for-mma", "tf32-tensor-cores-for-fp32",
        "bf16-operands-fp32-accumulate", "cuda-graph-capture", "split-work-smaller-blocks",
        "pad-shared-memory-banks"}) {
    INFO(id);
    CHECK(db.Find(id) != nullptr);
  }
  // The known compounding risk of big tiles with deep pipelines is recorded.
  bool compounding = false;
  for (const Pattern& p : db.patterns()) {
    for (const std::string& r : p.risks) {
      compounding = compounding || r.find("BLOCK_N and BLOCK_K together with num_stages") != std::string::npos;
    }
  }
  CHECK(compounding);
}

// A minimal valid document; tests break one field at a time.
const char* kMinimal = R"({
  "version": 1,
  "knobs": {"num_warps": "warps", "num_stages": "stages"},
  "templates": {"gemm_split_k": "split"},
  "patterns": [
    {"id": "a-pattern", "title": "A", "fix": "f", "rationale": "r", "expected_effect": "e",
     "expected_speedup": 1.2, "risks": [], "conflicts_with": ["b-pattern"],
     "preconditions": {"categories": ["memory-bound"], "op_classes": ["*"], "archs": ["sm_80+"],
                       "metrics": [{"metric": "m", "op": ">", "value": 1}]},
     "knob_changes": {"num_warps": "x2"}},
    {"id": "b-pattern", "title": "B", "fix": "f", "rationale": "r", "expected_effect": "e",
     "expected_speedup": 1.1, "risks": ["x"], "conflicts_with": [],
     "preconditions": {"categories": ["*"], "op_classes": ["gemm"], "archs": ["*"]},
     "template_switch": "gemm_split_k"}
  ]
})";

std::string Broken(const std::string& from, const std::string& to) {
  std::string text = absl::StrReplaceAll(kMinimal, {{from, to}});
  REQUIRE(text != kMinimal);
  return text;
}

void ExpectError(const std::string& text, const std::string& fragment) {
  auto db = OptimizationDb::Parse(text, "test.json");
  REQUIRE(!db.ok());
  CHECK(db.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(db.status().message()), Catch::Contains(fragment));
  CHECK_THAT(std::string(db.status().message()), Catch::StartsWith("test.json: "));
}

TEST_CASE("malformed databases fail with the pattern and field named", "[db]") {
  REQUIRE(OptimizationDb::Parse(kMinimal, "test.json").ok());
  ExpectError("{", "JSON");
  ExpectError(Broken(R"("version": 1)", R"("version": 0)"), "version: must be an integer >= 1");
  ExpectError(Broken(R"("title": "A", )", ""),
              "patterns[0] (id 'a-pattern'): missing required field 'title'");
  ExpectError(Broken(R"("title": "A")", R"("title": "A", "titel": "x")"),
              "patterns[0] (id 'a-pattern'): unknown field 'titel'");
  ExpectError(Broken("a-pattern", "A_Pattern"), "patterns[0] (id 'A_Pattern').id: must be kebab-case");
  ExpectError(Broken(R"("id": "b-pattern")", R"("id": "a-pattern")"), "patterns[1] (id 'a-pattern').id: duplicate id");
  ExpectError(Broken(R"("op": ">")", R"("op": "=>")"),
              "patterns[0] (id 'a-pattern').preconditions.metrics[0].op: must be one of");
  ExpectError(Broken(R"("value": 1})", R"("value": "1"})"),
              "patterns[0] (id 'a-pattern').preconditions.metrics[0].value: must be a number");
  ExpectError(Broken(R"(["memory-bound"])", R"(["memory-boundish"])"),
              "patterns[0] (id 'a-pattern').preconditions.categories[0]: unknown category 'memory-boundish'");
  ExpectError(Broken(R"(["gemm"])", R"(["gemmm"])"),
              "patterns[1] (id 'b-pattern').preconditions.op_classes[0]: unknown op class 'gemmm'");
  ExpectError(Broken(R"(["sm_80+"])", R"(["hopper"])"),
              "patterns[0] (id 'a-pattern').preconditions.archs[0]: bad arch 'hopper'");
  ExpectError(Broken(R"(["sm_80+"])", R"(["sm_80+"], "min_tolerance": 0)"),
              "patterns[0] (id 'a-pattern').preconditions.min_tolerance: must be > 0");
  ExpectError(Broken(R"(["sm_80+"])", R"(["sm_80+"], "min_tolerance": "1e-3")"),
              "patterns[0] (id 'a-pattern').preconditions.min_tolerance: must be a number");
  ExpectError(Broken(R"({"num_warps": "x2"})", R"({"num_warp": "x2"})"),
              "patterns[0] (id 'a-pattern').knob_changes.num_warp: unknown knob");
  ExpectError(Broken(R"({"num_warps": "x2"})", R"({"num_warps": "x0"})"),
              "patterns[0] (id 'a-pattern').knob_changes.num_warps: knob change 'x0'");
  ExpectError(Broken(R"("gemm_split_k"})", R"("gemm_splitk"})"),
              "patterns[1] (id 'b-pattern').template_switch: unknown template 'gemm_splitk'");
  ExpectError(Broken(R"(["b-pattern"])", R"(["c-pattern"])"),
              "patterns[0] (id 'a-pattern').conflicts_with[0]: unknown pattern id 'c-pattern'");
  ExpectError(Broken(R"("expected_speedup": 1.2)", R"("expected_speedup": 0.8)"),
              "patterns[0] (id 'a-pattern').expected_speedup: must be in [1, 10]");
  ExpectError(Broken(R"("risks": [])", R"("risks": "none")"),
              "patterns[0] (id 'a-pattern').risks: must be a list of strings");
  ExpectError(Broken(R"("risks": [])", R"("risks": [], "code_markers": [])"),
              "patterns[0] (id 'a-pattern').code_markers: must not be empty");
  ExpectError(Broken(R"("risks": [])", R"("risks": [], "code_markers": ["tl.dot # mma"])"),
              "patterns[0] (id 'a-pattern').code_markers: 'tl.dot # mma' must be a code token");
}

TEST_CASE("a pattern's code markers load, and go with its prescriptions", "[db]") {
  auto parsed = OptimizationDb::Parse(
      Broken(R"("risks": [])", R"("risks": [], "code_markers": ["tl.dot", "tl.dot_scaled"])"), "t.json");
  REQUIRE(parsed.ok());
  CHECK(parsed->patterns()[0].code_markers == std::vector<std::string>{"tl.dot", "tl.dot_scaled"});
  CHECK(parsed->patterns()[1].code_markers.empty());  // optional
  auto db = OptimizationDb::LoadFromFile(testing::SourceDir() + "/data/optimization_db.json");
  REQUIRE(db.ok());
  const Pattern* vectorize = db->Find("vectorize-global-access");
  REQUIRE(vectorize != nullptr);
  CHECK(vectorize->code_markers == std::vector<std::string>{"tl.max_contiguous", "tl.multiple_of"});
  PatternMatch match;
  match.pattern = vectorize;
  v1::Prescription p = Prescriber::ToPrescription(match);
  CHECK(std::vector<std::string>(p.code_markers().begin(), p.code_markers().end()) ==
        vectorize->code_markers);
}

TEST_CASE("TF32 declares the tolerance it needs", "[db]") {
  auto db = OptimizationDb::LoadFromFile(testing::SourceDir() + "/data/optimization_db.json");
  REQUIRE(db.ok());
  const Pattern* tf32 = db->Find("tf32-tensor-cores-for-fp32");
  REQUIRE(tf32 != nullptr);
  CHECK(tf32->preconditions.min_tolerance == Approx(1e-3));
  auto parsed = OptimizationDb::Parse(Broken(R"(["sm_80+"])", R"(["sm_80+"], "min_tolerance": 0.001)"), "t.json");
  REQUIRE(parsed.ok());
  CHECK(parsed->patterns()[0].preconditions.min_tolerance == Approx(1e-3));
}

TEST_CASE("missing database file is NOT_FOUND", "[db]") {
  auto db = OptimizationDb::LoadFromFile("/nonexistent/optimization_db.json");
  CHECK(db.status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("knob change directions and contradictions", "[db]") {
  CHECK(*ParseKnobChange("x2") == KnobDirection::kUp);
  CHECK(*ParseKnobChange("x0.75") == KnobDirection::kDown);
  CHECK(*ParseKnobChange("/2") == KnobDirection::kDown);
  CHECK(*ParseKnobChange("+1") == KnobDirection::kUp);
  CHECK(*ParseKnobChange("-1") == KnobDirection::kDown);
  CHECK(*ParseKnobChange("8") == KnobDirection::kSet);
  CHECK(*ParseKnobChange("tf32") == KnobDirection::kSet);
  CHECK(!ParseKnobChange("x1").ok());
  CHECK(!ParseKnobChange("+").ok());
  CHECK(!ParseKnobChange("a b").ok());
  CHECK(KnobChangesContradict("x2", "/2"));
  CHECK(KnobChangesContradict("+1", "-1"));
  CHECK(KnobChangesContradict("8", "4"));
  CHECK(!KnobChangesContradict("x2", "+1"));
  CHECK(!KnobChangesContradict("8", "8"));
  CHECK(!KnobChangesContradict("8", "x2"));  // direction relative to an unknown value
}

TEST_CASE("arch matching", "[db]") {
  CHECK(ArchMatches("*", ""));
  CHECK(ArchMatches("sm_90", "sm_90"));
  CHECK(ArchMatches("sm_90", "sm_90a"));
  CHECK(!ArchMatches("sm_90", "sm_80"));
  CHECK(ArchMatches("sm_80+", "sm_90"));
  CHECK(!ArchMatches("sm_90+", "sm_86"));
  CHECK(!ArchMatches("sm_80+", ""));
}

}  // namespace
}  // namespace kagent
