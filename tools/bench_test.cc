// `kagent bench` tests that need no server: discovery, rows from jobs, the geometric means,
// the Markdown/JSON/SVG renderers, usage errors and the command dispatch.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tools/bench.h"

namespace kagent::cli {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kagent_bench_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void Touch(const fs::path& p) { std::ofstream(p) << "# x\n"; }

BenchRow Row(const std::string& name, double vs_start, double vs_compile,
             std::vector<std::pair<int, double>> traj = {}) {
  BenchRow r;
  r.name = name;
  r.state = "DONE";
  r.start_ms = 2.0;
  r.best_ms = 2.0 / vs_start;
  r.eager_ms = 1.0;
  r.compile_ms = r.best_ms * vs_compile;
  r.speedup_vs_start = vs_start;
  r.speedup_vs_eager = r.eager_ms / r.best_ms;
  r.speedup_vs_compile = vs_compile;
  r.roofline_pct = 50;
  r.rounds = static_cast<int>(traj.size());
  r.gpu_seconds = 10;
  r.trajectory = std::move(traj);
  return r;
}

TEST_CASE("bench: discovery pairs NAME_start.py with NAME.py, sorted, filtered") {
  fs::path d = TempDir("find");
  Touch(d / "02_b.py");
  Touch(d / "02_b_start.py");
  Touch(d / "01_a.py");
  Touch(d / "01_a_start.py");
  Touch(d / "03_orphan_start.py");  // no reference: skipped
  Touch(d / "README.md");
  auto all = FindBenchProblems(d.string(), "");
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].name == "01_a");
  CHECK((*all)[1].name == "02_b");
  CHECK((*all)[0].start_path == (d / "01_a_start.py").string());
  auto some = FindBenchProblems(d.string(), "_b");
  REQUIRE(some.ok());
  REQUIRE(some->size() == 1);
  CHECK((*some)[0].name == "02_b");
  auto either = FindBenchProblems(d.string(), "_b,01,,zz");
  REQUIRE(either.ok());
  REQUIRE(either->size() == 2);
  CHECK((*either)[0].name == "01_a");
  CHECK(FindBenchProblems((d / "nope").string(), "").status().code() == absl::StatusCode::kNotFound);
  fs::remove_all(d);
}

TEST_CASE("bench: the repository's suite has at least 40 problems") {
  const char* src = std::getenv("KAGENT_SOURCE_DIR");
  if (src == nullptr) return;  // run outside ctest
  auto all = FindBenchProblems((fs::path(src) / "problems").string(), "");
  REQUIRE(all.ok());
  CHECK(all->size() >= 40);
}

TEST_CASE("bench: geometric mean ignores unknown ratios") {
  CHECK(GeometricMean({}) == 0);
  CHECK(GeometricMean({0, -1}) == 0);
  CHECK(GeometricMean({2, 8}) == Approx(4));
  CHECK(GeometricMean({2, 0, 8}) == Approx(4));
  CHECK(GeometricMean({1.5}) == Approx(1.5));
}

TEST_CASE("bench: a row from a finished job uses the final side-by-side measurement") {
  v1::Job job;
  job.set_id("job-1");
  job.set_state(v1::JOB_STATE_DONE);
  job.set_current_round(3);
  job.set_gpu_seconds_used(42.5);
  job.mutable_baseline()->mutable_candidate()->set_median_ms(9.0);  // superseded below
  v1::JobResult* res = job.mutable_result();
  res->set_best_candidate_id("c7");
  res->set_stop_reason("plateau");
  v1::Measurement* m = res->mutable_best_measurement();
  m->mutable_candidate()->set_median_ms(1.0);
  m->mutable_reference_kernel()->set_median_ms(4.0);
  m->mutable_eager()->set_median_ms(2.0);
  m->mutable_compiled()->set_median_ms(1.5);
  res->set_roofline_efficiency_pct(71);
  res->set_roofline_bound_pct(46);
  for (int r : {2, 1}) {
    auto* t = res->add_trajectory();
    t->set_round(r);
    t->set_best_speedup_vs_start(r == 1 ? 2.0 : 4.0);
  }
  BenchRow row = RowFromJob("p", job);
  CHECK(row.state == "DONE");
  CHECK(row.best_ms == 1.0);
  CHECK(row.start_ms == 4.0);
  CHECK(row.speedup_vs_start == Approx(4.0));   // computed: the result's field is unset
  CHECK(row.speedup_vs_eager == Approx(2.0));
  CHECK(row.speedup_vs_compile == Approx(1.5));
  CHECK(row.roofline_pct == 71);
  CHECK(row.ai_roofline_pct == 46);
  CHECK(row.rounds == 3);
  CHECK(row.gpu_seconds == 42.5);
  REQUIRE(row.trajectory.size() == 2);
  CHECK(row.trajectory[0].first == 1);  // sorted by round

  res->set_speedup_vs_start(3.9);  // the server's figure wins when set
  CHECK(RowFromJob("p", job).speedup_vs_start == Approx(3.9));
}

TEST_CASE("bench: a failed job without a best kernel keeps its baseline and error") {
  v1::Job job;
  job.set_id("job-2");
  job.set_state(v1::JOB_STATE_FAILED);
  job.set_error("starting kernel INCORRECT");
  job.mutable_baseline()->mutable_candidate()->set_median_ms(3.0);
  job.mutable_baseline()->mutable_eager()->set_median_ms(1.5);
  job.mutable_baseline()->mutable_compiled()->set_median_ms(1.0);
  BenchRow row = RowFromJob("q", job);
  CHECK(row.state == "FAILED");
  CHECK(row.error == "starting kernel INCORRECT");
  CHECK(row.best_ms == 3.0);
  CHECK(row.speedup_vs_start == 1.0);
  CHECK(row.speedup_vs_compile == Approx(1.0 / 3.0));

  v1::Job none;
  none.set_state(v1::JOB_STATE_QUEUED);
  BenchRow empty = RowFromJob("r", none);
  CHECK(empty.state == "QUEUED");
  CHECK(empty.speedup_vs_start == 0);
}

TEST_CASE("bench: summary counts and geometric means") {
  std::vector<BenchRow> rows = {Row("a", 2.0, 1.5), Row("b", 8.0, 0.5)};
  rows[0].ai_roofline_pct = 46;  // b's op gave no FLOPs/bytes: not in the mean
  BenchRow failed;
  failed.name = "c";
  failed.state = "SUBMIT_ERROR";
  failed.error = "INVALID_ARGUMENT: bad";
  rows.push_back(failed);
  BenchSummary s = Summarize(rows);
  CHECK(s.problems == 3);
  CHECK(s.done == 2);
  CHECK(s.failed == 1);
  CHECK(s.geomean_vs_start == Approx(4.0));
  CHECK(s.geomean_vs_compile == Approx(std::sqrt(0.75)));
  CHECK(s.faster_than_compile == 1);
  CHECK(s.clearly_faster_than_compile == 1);
  CHECK(s.compared_with_compile == 2);
  // A 1.01x is faster but within the noise: counted above, not as clearly faster.
  rows.push_back(Row("d", 1.0, 1.01));
  BenchSummary tie = Summarize(rows);
  CHECK(tie.faster_than_compile == 2);
  CHECK(tie.clearly_faster_than_compile == 1);
  CHECK(s.mean_roofline_pct == Approx(50));
  CHECK(s.mean_ai_roofline_pct == Approx(46));
  CHECK(s.gpu_seconds == Approx(20));
}

TEST_CASE("bench: suite trajectory carries each problem's best forward") {
  std::vector<BenchRow> rows = {Row("a", 4, 1, {{1, 2.0}, {3, 4.0}}), Row("b", 1, 1, {}),
                                Row("c", 2, 1, {{2, 2.0}})};
  std::vector<double> t = SuiteTrajectory(rows);
  REQUIRE(t.size() == 4);  // rounds 0..3
  CHECK(t[0] == Approx(1.0));
  CHECK(t[1] == Approx(std::cbrt(2.0)));
  CHECK(t[2] == Approx(std::cbrt(4.0)));
  CHECK(t[3] == Approx(std::cbrt(8.0)));
  CHECK(SuiteTrajectory({}).empty());
}

TEST_CASE("bench: Markdown table has a row per problem and the summary") {
  std::vector<BenchRow> rows = {Row("01_matmul", 2.0, 1.25)};
  rows[0].ai_roofline_pct = 46;
  BenchRow f;
  f.name = "02_bad";
  f.state = "FAILED";
  f.error = "a | pipe\nand a newline";
  rows.push_back(f);
  std::string md = RenderBenchMarkdown(rows, Summarize(rows), "header line");
  CHECK(md.find("header line") != std::string::npos);
  CHECK(md.find("| vs compile | roofline | AI roofline | rounds |") != std::string::npos);
  CHECK(md.find("| 01_matmul | DONE | 2.000 | 1.000 | 1.250 | 1.000 | 2.00x | 1.00x | 1.25x | 50% | 46% | 0 | 10.0 |") !=
        std::string::npos);
  CHECK(md.find("| 02_bad | FAILED | - | - | - | - | - | - | - | - | - | 0 | 0.0 | a   pipe and a newline |") !=
        std::string::npos);
  CHECK(md.find("mean arithmetic-intensity roofline of the final kernels (where known): 46%") !=
        std::string::npos);
  CHECK(md.find("geometric-mean speedup over the starting kernels: 2.00x") != std::string::npos);
  CHECK(md.find("faster than torch.compile: 1 of 1 (100%); by more than 2%: 1 (100%)") !=
        std::string::npos);
  CHECK(md.find("trajectory.svg") != std::string::npos);
}

TEST_CASE("bench: JSON holds settings, summary, rows and the suite trajectory") {
  std::vector<BenchRow> rows = {Row("a", 2.0, 1.5, {{1, 2.0}})};
  std::string js = RenderBenchJson(rows, Summarize(rows), R"({"rounds": 4})");
  nlohmann::json j = nlohmann::json::parse(js);
  CHECK(j["settings"]["rounds"] == 4);
  CHECK(j["summary"]["problems"] == 1);
  CHECK(j["summary"]["geomean_speedup_vs_start"].get<double>() == Approx(2.0));
  CHECK(j["problems"][0]["name"] == "a");
  CHECK(j["problems"][0]["roofline_efficiency_pct"].get<double>() == Approx(50));
  CHECK(j["problems"][0]["roofline_bound_pct"].get<double>() == 0);  // unknown
  CHECK(j["summary"]["mean_roofline_bound_pct"].get<double>() == 0);
  CHECK(j["problems"][0]["trajectory"][0]["round"] == 1);
  CHECK(j["suite_trajectory"].size() == 2);
  // A malformed settings string does not break the file.
  CHECK(nlohmann::json::parse(RenderBenchJson(rows, Summarize(rows), "not json"))["settings"].is_object());
}

TEST_CASE("bench: SVG is self-contained with a line per problem and the mean") {
  std::vector<BenchRow> rows = {Row("a<1>", 4, 1, {{1, 2.0}, {2, 4.0}}), Row("b", 1, 1, {{1, 0.5}})};
  std::string svg = RenderTrajectorySvg(rows);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("<title>a&lt;1&gt;</title>") != std::string::npos);  // escaped
  CHECK(svg.find("geometric mean") != std::string::npos);
  size_t lines = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++lines;
  CHECK(lines == 3);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
  // No data at all still renders.
  std::string empty = RenderTrajectorySvg({});
  CHECK(empty.find("</svg>") != std::string::npos);
  CHECK(empty.find("nan") == std::string::npos);
}

int Bench(std::vector<std::string> args, std::string* out, std::string* err) {
  std::ostringstream o, e;
  int rc = RunBench(args, o, e);
  *out = o.str();
  *err = e.str();
  return rc;
}

TEST_CASE("bench: usage errors exit 2") {
  std::string out, err;
  CHECK(Bench({}, &out, &err) == 2);
  CHECK(err.find("usage: kagent bench") != std::string::npos);
  CHECK(Bench({"problems"}, &out, &err) == 2);  // no --out
  fs::path d = TempDir("usage");
  CHECK(Bench({d.string(), "--out", (d / "o").string()}, &out, &err) == 2);  // no problems
  CHECK(err.find("no NAME_start.py") != std::string::npos);
  CHECK(Bench({d.string(), "--out", (d / "o").string(), "--concurrency", "0"}, &out, &err) == 2);
  CHECK(Bench({"--help"}, &out, &err) == 0);
  fs::remove_all(d);
}

TEST_CASE("bench: --beam-width and --fixes-per-kernel are parsed into every job's config") {
  auto f = ParseBenchFlags({"problems", "--out", "o", "--beam-width", "4", "--fixes-per-kernel=3",
                            "--rounds", "6", "--brain", "heuristic"});
  REQUIRE(f.ok());
  CHECK(f->dir == "problems");
  CHECK(f->beam_width == 4);
  CHECK(f->fixes_per_kernel == 3);
  v1::JobConfig cfg = BenchJobConfig(*f);
  CHECK(cfg.has_beam_width());
  CHECK(cfg.beam_width() == 4);
  CHECK(cfg.has_fixes_per_kernel());
  CHECK(cfg.fixes_per_kernel() == 3);
  CHECK(cfg.budget().max_rounds() == 6);
  CHECK(cfg.brain() == "heuristic");
  nlohmann::json settings = nlohmann::json::parse(BenchSettingsJson(*f));
  CHECK(settings["beam_width"] == 4);
  CHECK(settings["fixes_per_kernel"] == 3);
  CHECK(settings["rounds"] == 6);
  CHECK_FALSE(settings.contains("token"));

  // Not given: the server's defaults (the fields stay unset), 0 in the settings.
  auto d = ParseBenchFlags({"problems", "--out", "o"});
  REQUIRE(d.ok());
  v1::JobConfig dc = BenchJobConfig(*d);
  CHECK_FALSE(dc.has_beam_width());
  CHECK_FALSE(dc.has_fixes_per_kernel());
  CHECK(nlohmann::json::parse(BenchSettingsJson(*d))["beam_width"] == 0);

  // The bounds are valid.
  for (const char* v : {"1", "16"}) {
    CHECK(ParseBenchFlags({"p", "--out", "o", "--beam-width", v}).ok());
    CHECK(ParseBenchFlags({"p", "--out", "o", "--fixes-per-kernel", v}).ok());
  }
}

TEST_CASE("bench: --without-start is parsed and recorded in the settings") {
  auto f = ParseBenchFlags({"problems", "--out", "o", "--without-start"});
  REQUIRE(f.ok());
  CHECK(f->without_start);
  CHECK(nlohmann::json::parse(BenchSettingsJson(*f))["without_start"] == true);
  auto d = ParseBenchFlags({"problems", "--out", "o"});
  REQUIRE(d.ok());
  CHECK_FALSE(d->without_start);
  CHECK(nlohmann::json::parse(BenchSettingsJson(*d))["without_start"] == false);
}

TEST_CASE("bench: --beam-width or --fixes-per-kernel outside 1..16 is a usage error") {
  for (const char* flag : {"--beam-width", "--fixes-per-kernel"}) {
    for (const char* v : {"0", "-1", "17", "x"}) {
      INFO(flag << " " << v);
      auto f = ParseBenchFlags({"p", "--out", "o", flag, v});
      REQUIRE_FALSE(f.ok());
      CHECK(f.status().code() == absl::StatusCode::kInvalidArgument);
      // Names the flag ("--beam-width must be ...", or the parser's "option beam-width ...").
      CHECK(std::string(f.status().message()).find(flag + 2) != std::string::npos);
    }
  }
  // RunBench: exit 2 with the reason and the usage, before looking for problems.
  fs::path d = TempDir("range");
  Touch(d / "01_a.py");
  Touch(d / "01_a_start.py");
  std::ostringstream o, e;
  CHECK(RunBench({d.string(), "--out", (d / "o").string(), "--beam-width", "17"}, o, e) == 2);
  CHECK(e.str().find("--beam-width must be 1..16 (got 17)") != std::string::npos);
  CHECK(e.str().find("usage: kagent bench") != std::string::npos);
  CHECK_FALSE(fs::exists(d / "o"));
  fs::remove_all(d);
}

TEST_CASE("bench: an unreachable server exits 1 and still writes the results files") {
  fs::path d = TempDir("down");
  Touch(d / "01_a.py");
  Touch(d / "01_a_start.py");
  std::string out, err;
  int rc = Bench({d.string(), "--out", (d / "o").string(), "--server", "127.0.0.1:1",
                  "--timeout-seconds", "2", "--beam-width", "3", "--fixes-per-kernel", "5"},
                 &out, &err);
  CHECK(rc == 1);
  CHECK(err.find("UNAVAILABLE") != std::string::npos);
  REQUIRE(fs::exists(d / "o" / "results.json"));
  {
    std::ifstream in(d / "o" / "results.json");
    nlohmann::json j = nlohmann::json::parse(in);
    CHECK(j["settings"]["beam_width"] == 3);
    CHECK(j["settings"]["fixes_per_kernel"] == 5);
  }
  CHECK(fs::exists(d / "o" / "results.md"));
  CHECK(fs::exists(d / "o" / "trajectory.svg"));
  fs::remove_all(d);
}

TEST_CASE("bench: dispatch only on the command word bench") {
  std::ostringstream o, e;
  CHECK(RunBenchIfCommand({"submit", "bench.py"}, o, e) == -1);
  CHECK(RunBenchIfCommand({"--name", "bench", "submit", "x.py"}, o, e) == -1);
  CHECK(RunBenchIfCommand({"list"}, o, e) == -1);
  CHECK(RunBenchIfCommand({}, o, e) == -1);
  CHECK(RunBenchIfCommand({"--server", "h:1", "bench"}, o, e) == 2);  // bench without DIR: usage
  CHECK(e.str().find("usage: kagent bench") != std::string::npos);
  CHECK(RunBenchIfCommand({"--server=h:1", "bench", "--help"}, o, e) == 0);
}

}  // namespace
}  // namespace kagent::cli
