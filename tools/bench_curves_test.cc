// The search-efficiency figures of `kagent bench` (tools/bench_curves.h) from fixture rows
// and jobs, the --ablation, --sweep-seed and --max-gpu-seconds flags, and --compare.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "kagent/v1/common.pb.h"
#include "tools/bench.h"
#include "tools/bench_curves.h"

namespace kagent::cli {
namespace {

namespace fs = std::filesystem;

// A finished row whose rounds closed at `gpu` GPU-seconds with best-so-far `speedup`.
BenchRow Curve(const std::string& name, std::vector<double> gpu, std::vector<double> speedup,
               const std::string& stop_reason = "round budget spent (5 rounds)",
               int max_rounds = 5) {
  BenchRow r;
  r.name = name;
  r.state = "DONE";
  r.stop_reason = stop_reason;
  r.max_rounds = max_rounds;
  for (size_t i = 0; i < gpu.size(); ++i) {
    r.trajectory.emplace_back(static_cast<int>(i + 1), speedup[i]);
    r.gpu_trajectory.emplace_back(gpu[i], speedup[i]);
  }
  r.gpu_seconds = gpu.empty() ? 0 : gpu.back() + 5;  // the final run's
  r.speedup_vs_start = speedup.empty() ? 1 : speedup.back();
  return r;
}

TEST_CASE("bench curves: rows from jobs carry each round's GPU-seconds and the round budget") {
  v1::Job job;
  job.set_state(v1::JOB_STATE_DONE);
  job.mutable_config()->mutable_budget()->set_max_rounds(4);
  for (int round : {2, 1}) {  // stored out of order: sorted by round
    v1::RoundSummary* t = job.mutable_result()->add_trajectory();
    t->set_round(round);
    t->set_best_speedup_vs_start(round == 1 ? 1.5 : 2.0);
    t->set_gpu_seconds_used(round * 10.0);
  }
  v1::RoundSummary* old = job.mutable_result()->add_trajectory();  // stored before the field
  old->set_round(3);
  old->set_best_speedup_vs_start(2.0);
  const BenchRow row = RowFromJob("p", job);
  CHECK(row.max_rounds == 4);
  REQUIRE(row.gpu_trajectory.size() == 2);
  CHECK(row.gpu_trajectory[0] == std::make_pair(10.0, 1.5));
  CHECK(row.gpu_trajectory[1] == std::make_pair(20.0, 2.0));

  // results.json keeps them, and reads them back.
  const std::string json = RenderBenchJson({row}, Summarize({row}), "{}");
  auto back = ParseBenchJson(json, "r.json", nullptr);
  REQUIRE(back.ok());
  CHECK((*back)[0].gpu_trajectory == row.gpu_trajectory);
  CHECK((*back)[0].max_rounds == 4);
  auto bad = ParseBenchJson(
      R"({"problems": [{"name": "a", "state": "DONE", "start_ms": 1, "eager_ms": 1,
          "compile_ms": 1, "best_ms": 1, "speedup_vs_start": 1, "speedup_vs_eager": 1,
          "speedup_vs_compile": 1, "gpu_trajectory": [{"gpu_seconds": "3"}]}]})",
      "f.json", nullptr);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "f.json: problems[0].gpu_trajectory[0].gpu_seconds: expected a number");
}

TEST_CASE("bench curves: best-so-far at GPU-seconds and the suite's curve") {
  const BenchRow a = Curve("a", {10, 20, 30}, {1.2, 1.1, 2.0});
  CHECK(BestSoFarAt(a, 0) == 1.0);
  CHECK(BestSoFarAt(a, 9.9) == 1.0);
  CHECK(BestSoFarAt(a, 10) == 1.2);
  CHECK(BestSoFarAt(a, 25) == 1.2);  // best so far, not the last round's
  CHECK(BestSoFarAt(a, 30) == 2.0);
  CHECK(CurveEnd(a) == 30);
  const BenchRow b = Curve("b", {15}, {4.0});
  BenchRow none;  // no GPU trajectory: left out of the curve
  none.name = "none";
  auto curve = SuiteGpuCurve({a, b, none}, 6);
  REQUIRE(curve.size() == 7);
  CHECK(curve[0] == std::make_pair(0.0, 1.0));
  CHECK(curve[3].first == 15);
  CHECK(curve[3].second == Approx(std::sqrt(1.2 * 4.0)));
  CHECK(curve[6].second == Approx(std::sqrt(2.0 * 4.0)));
  CHECK(SuiteGpuCurve({none}).empty());
}

TEST_CASE("bench curves: the stop-rule account counts each rule and bounds what the early "
          "ones saved") {
  std::vector<BenchRow> rows = {
      Curve("a", {10, 20, 30}, {1, 1, 1}, "plateau: no gain above 1% for 2 rounds", 5),
      Curve("b", {12}, {2}, "at the roofline target: 91.2% of the arithmetic-intensity roofline >= 90.0%", 5),
      Curve("c", {10, 20, 30, 40, 50}, {1, 2, 3, 3, 3}, "round budget spent (5 rounds)", 5),
      Curve("d", {}, {}, "at the roofline target: 95.0% of the speed of light (no FLOPs/bytes known) >= 90.0%", 5),
      Curve("e", {5, 9}, {1.1, 1.2}, "GPU-time budget spent (8.0 GPU-s)", 5),
  };
  BenchRow failed;
  failed.name = "f";
  failed.state = "FAILED";
  rows.push_back(failed);
  const StopRuleAccount acc = AccountStopRules(rows);
  CHECK(acc.finished == 5);
  CHECK(acc.count.at("plateau") == 1);
  CHECK(acc.count.at("roofline") == 2);
  CHECK(acc.count.at("round budget") == 1);
  CHECK(acc.count.at("GPU-time budget") == 1);
  // a: 2 rounds left at (30 - 10) / 2 = 10 GPU-s a round.
  CHECK(acc.saved_rounds.at("plateau") == 2);
  CHECK(acc.saved_gpu_seconds.at("plateau") == Approx(20));
  // b: 4 rounds left at round 1's 12 GPU-s; d stopped before any round: not estimated.
  CHECK(acc.saved_rounds.at("roofline") == 4);
  CHECK(acc.saved_gpu_seconds.at("roofline") == Approx(48));
  CHECK(acc.not_estimated.at("roofline") == 1);
  CHECK(StopRuleOf("budget spent: job x spent its LLM token budget") == "LLM budget");
  CHECK(StopRuleOf("wall-time budget spent (14400 s)") == "wall-time budget");
  CHECK(StopRuleOf("something new") == "other");
  CHECK(StopRuleOf("") == "");

  const std::string md = RenderStopRulesMarkdown(acc);
  CHECK(absl::StrContains(md, "| roofline | 2 | 40% |"));
  CHECK(absl::StrContains(md, "- roofline: 48.0 GPU-s over 4 rounds not run (1 job(s) not estimated"));
  CHECK(absl::StrContains(md, "- plateau: 20.0 GPU-s over 2 rounds not run\n"));
  // In results.md and results.json too.
  const BenchSummary s = Summarize(rows);
  CHECK(absl::StrContains(RenderBenchMarkdown(rows, s, ""), "## Stop rules"));
  CHECK(absl::StrContains(RenderBenchMarkdown(rows, s, ""), "(gpu_curve.svg)"));
  nlohmann::json j = nlohmann::json::parse(RenderBenchJson(rows, s, "{}"));
  CHECK(j["stop_rules"]["count"]["roofline"] == 2);
  CHECK(j["stop_rules"]["saved_gpu_seconds_at_most"]["plateau"] == 20.0);
  CHECK(j["suite_gpu_curve"].size() == 51);
}

TEST_CASE("bench curves: the GPU-seconds chart draws a step line per problem and the suite") {
  const std::string svg = RenderGpuCurveSvg({Curve("a<1>", {10, 20}, {1.5, 3.0}), Curve("b", {5}, {1.2})});
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(absl::StrContains(svg, "<title>a&lt;1&gt;</title>"));
  CHECK(absl::StrContains(svg, "geometric mean"));
  CHECK(absl::StrContains(svg, "GPU-seconds"));
  CHECK_FALSE(absl::StrContains(svg, "nan"));
  int lines = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
  CHECK(lines == 3);
  CHECK(absl::StrContains(RenderGpuCurveSvg({}), "</svg>"));
}

TEST_CASE("bench flags: --ablation picks the arm's JobConfig, its seed and budget are checked") {
  auto parse = [](std::vector<std::string> extra) {
    std::vector<std::string> args = {"problems", "--out", "o"};
    args.insert(args.end(), extra.begin(), extra.end());
    return ParseBenchFlags(args);
  };
  auto full = parse({});
  REQUIRE(full.ok());
  CHECK(BenchJobConfig(*full).SerializeAsString() == v1::JobConfig().SerializeAsString());
  CHECK(nlohmann::json::parse(BenchSettingsJson(*full))["ablation"] == "full");
  CHECK(nlohmann::json::parse(BenchSettingsJson(*full))["sweep_seed"].is_null());

  auto nc = parse({"--ablation", "no-counters", "--max-gpu-seconds", "300", "--plateau-rounds", "20"});
  REQUIRE(nc.ok());
  CHECK(BenchJobConfig(*nc).plateau_rounds() == 20);
  CHECK(nlohmann::json::parse(BenchSettingsJson(*nc))["plateau_rounds"] == 20);
  CHECK_FALSE(BenchJobConfig(*full).has_plateau_rounds());
  CHECK(BenchJobConfig(*nc).ablation() == v1::ABLATION_NO_COUNTERS);
  CHECK(BenchJobConfig(*nc).budget().max_gpu_seconds() == 300);
  CHECK(nlohmann::json::parse(BenchSettingsJson(*nc))["ablation"] == "no-counters");
  CHECK(nlohmann::json::parse(BenchSettingsJson(*nc))["max_gpu_seconds"] == 300.0);
  CHECK(BenchJobConfig(*parse({"--ablation", "no-reflexion"})).ablation() == v1::ABLATION_NO_REFLEXION);

  auto greedy = parse({"--ablation", "greedy"});
  REQUIRE(greedy.ok());
  v1::JobConfig g = BenchJobConfig(*greedy);
  CHECK(g.ablation() == v1::ABLATION_NONE);
  CHECK(g.strategy() == v1::SEARCH_STRATEGY_GREEDY);
  CHECK(g.fixes_per_kernel() == 1);
  CHECK_FALSE(g.has_beam_width());

  auto blind = parse({"--ablation", "blind-sweep", "--sweep-seed", "17"});
  REQUIRE(blind.ok());
  CHECK(BenchJobConfig(*blind).ablation() == v1::ABLATION_BLIND_SWEEP);
  CHECK(BenchJobConfig(*blind).sweep_seed() == 17);
  CHECK(nlohmann::json::parse(BenchSettingsJson(*blind))["sweep_seed"] == 17);
  CHECK_FALSE(BenchJobConfig(*parse({"--ablation", "blind-sweep"})).has_sweep_seed());

  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--ablation", "no-guidance"},
            "--ablation must be one of full, no-counters, no-reflexion, greedy, blind-sweep (got "
            "'no-guidance')"},
           {{"--ablation", "greedy", "--beam-width", "2"},
            "--ablation greedy is one worker (beam width 1, one fix a round): leave --beam-width "
            "and --fixes-per-kernel out"},
           {{"--sweep-seed", "3"},
            "--sweep-seed seeds the blind sweep: give it with --ablation blind-sweep"},
           {{"--ablation", "blind-sweep", "--sweep-seed", "-2"}, "--sweep-seed must be >= 0 (got -2)"},
           {{"--max-gpu-seconds", "0.5"}, "--max-gpu-seconds must be 1..1e7 (got 0.5)"},
           {{"--plateau-rounds", "0"}, "--plateau-rounds must be 1..100 (got 0)"}}) {
    auto r = parse(args);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == message);
  }
  auto compare_with_job_flag = ParseBenchFlags({"--compare", "--out", "o", "a.json", "--ablation", "greedy"});
  REQUIRE_FALSE(compare_with_job_flag.ok());
  CHECK(compare_with_job_flag.status().message() ==
        "--ablation runs jobs; it cannot be used with --compare");
  CHECK_FALSE(ParseBenchFlags({"--compare", "--merge", "--out", "o", "a.json"}).ok());
}

fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kagent_bench_curves_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("bench --compare: the arms at equal GPU-seconds per problem, their curves and stop "
          "rules") {
  // The full loop reaches 2x on p1 by 20 GPU-s; the blind sweep spends only 15 and reaches
  // 1.2x by then. q is in one arm only: left out of the comparison.
  std::vector<BenchRow> full = {Curve("p1", {10, 20, 40}, {1.5, 2.0, 2.5}),
                                Curve("p2", {8, 16}, {1.1, 1.3}, "plateau: no gain above 1% for 2 rounds")};
  std::vector<BenchRow> blind = {Curve("p1", {5, 15}, {1.0, 1.2}), Curve("p2", {10, 30}, {1.2, 1.4}),
                                 Curve("q", {3}, {9})};
  std::vector<BenchArm> arms = {{"full (r1)", "full", full}, {"blind-sweep (r2)", "blind-sweep", blind}};
  std::vector<EqualBudgetRow> eq = EqualBudgetRows(arms);
  REQUIRE(eq.size() == 2);
  CHECK(eq[0].problem == "p1");
  CHECK(eq[0].gpu_seconds == 15);
  CHECK(eq[0].best_so_far == std::vector<double>{1.5, 1.2});
  CHECK(eq[1].gpu_seconds == 16);
  CHECK(eq[1].best_so_far == std::vector<double>{1.3, 1.2});
  const std::string md = RenderCompareMarkdown(arms);
  CHECK(absl::StrContains(md, "| p1 | 15.0 | 1.50x | 1.20x |"));
  CHECK(absl::StrContains(md, "### blind-sweep (r2)"));
  CHECK(absl::StrContains(md, "| plateau | 1 | 50% |"));
  nlohmann::json j = nlohmann::json::parse(RenderCompareJson(arms));
  CHECK(j["arms"][0]["equal_budget_geomean"] == Approx(std::sqrt(1.5 * 1.3)));
  CHECK(j["arms"][1]["equal_budget_geomean"] == Approx(1.2));
  CHECK(j["equal_budget"].size() == 2);
  for (const std::string& svg : {RenderCompareRoundsSvg(arms), RenderCompareGpuSvg(arms)}) {
    CHECK(absl::StrContains(svg, "2 problems every arm ran"));
    CHECK(absl::StrContains(svg, "<title>blind-sweep "));
    CHECK_FALSE(absl::StrContains(svg, "nan"));
  }

  // The command: each results.json an arm, named by its settings' ablation.
  fs::path d = TempDir("compare");
  BenchFlags f;
  f.run_id = "r1";
  std::ofstream(d / "full.json") << RenderBenchJson(full, Summarize(full), BenchSettingsJson(f));
  f.run_id = "r2";
  f.ablation = "blind-sweep";
  std::ofstream(d / "blind.json") << RenderBenchJson(blind, Summarize(blind), BenchSettingsJson(f));
  std::ostringstream out, err;
  int rc = RunBench({"--compare", "--out", (d / "o").string(), (d / "full.json").string(),
                     (d / "blind.json").string()},
                    out, err);
  INFO(err.str());
  CHECK(rc == 0);
  CHECK(absl::StrContains(out.str(), "2. blind-sweep (r2): 3 problems; at equal GPU-seconds (2 problems)"));
  CHECK(absl::StrContains(Slurp(d / "o" / "compare.md"), "| full (r1) | 2 | 2 |"));
  for (const char* name : {"compare.json", "compare_rounds.svg", "compare_gpu.svg"}) {
    CHECK(fs::exists(d / "o" / name));
  }
  fs::remove_all(d);
}

}  // namespace
}  // namespace kagent::cli
