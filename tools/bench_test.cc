// `kagent bench` tests that need no server: discovery, rows from jobs, the geometric means,
// the Markdown/JSON/SVG renderers, reading results.json back and --merge, usage errors and
// the command dispatch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "kagent/v1/common.pb.h"
#include "kernel_model/gpu_spec.h"
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

// A KernelBench problem file as its level1/ holds them (Model, get_inputs, get_init_inputs).
void WriteProblem(const fs::path& p) {
  std::ofstream(p) << "import torch\nimport torch.nn as nn\n\n"
                      "class Model(nn.Module):\n"
                      "    def __init__(self):\n        super(Model, self).__init__()\n\n"
                      "    def forward(self, A, B):\n        return torch.matmul(A, B)\n\n"
                      "N = 64\n\ndef get_inputs():\n"
                      "    return [torch.randn(N, N), torch.randn(N, N)]\n\n"
                      "def get_init_inputs():\n    return []\n";
}

// The names of the files in `d`, sorted.
std::vector<std::string> FileNames(const fs::path& d) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

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
  WriteProblem(d / "02_b.py");
  Touch(d / "02_b_start.py");
  WriteProblem(d / "01_a.py");
  Touch(d / "01_a_start.py");
  WriteProblem(d / "04_plain.py");  // a problem without a starting kernel
  Touch(d / "03_orphan_start.py");     // no reference: skipped
  Touch(d / "test_problems.py");       // defines no Model: not a problem
  Touch(d / "README.md");
  auto all = FindBenchProblems(d.string(), "");
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].name == "01_a");
  CHECK((*all)[1].name == "02_b");
  CHECK((*all)[2].name == "04_plain");
  CHECK((*all)[0].start_path == (d / "01_a_start.py").string());
  CHECK((*all)[0].problem_path == (d / "01_a.py").string());
  CHECK((*all)[2].start_path.empty());
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
  job.set_gpu_busy_seconds_used(34);
  job.set_candidates_measured(17);
  job.set_variants_screened(40);
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
  CHECK(row.gpu_busy_seconds == 34);
  CHECK(row.candidates_measured == 17);
  CHECK(row.variants_screened == 40);
  CHECK_FALSE(row.cpu_worker);
  REQUIRE(row.trajectory.size() == 2);
  CHECK(row.trajectory[0].first == 1);  // sorted by round

  res->set_speedup_vs_start(3.9);  // the server's figure wins when set
  CHECK(RowFromJob("p", job).speedup_vs_start == Approx(3.9));
  m->set_gpu_name(kCpuWorkerGpuName);  // the CPU worker measured it
  CHECK(RowFromJob("p", job).cpu_worker);
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
  // An unfinished job (its best is still the start) counts in the problems and the GPU
  // time, not in the means or counts.
  BenchRow running = Row("e", 1.0, 0.01);
  running.state = "ROUNDS";
  rows.push_back(running);
  BenchSummary part = Summarize(rows);
  CHECK(part.problems == 5);
  CHECK(part.done == 3);
  CHECK(part.compared_with_compile == 3);
  CHECK(part.geomean_vs_compile == Approx(tie.geomean_vs_compile));
  CHECK(part.gpu_seconds == Approx(s.gpu_seconds + 2 * 10));
  std::string md = RenderBenchMarkdown(rows, part, "");
  CHECK(md.find("over the 3 finished (DONE) problems") != std::string::npos);
}

TEST_CASE("bench: a row names the job's op class and what it recommends deploying") {
  v1::Job job;
  job.set_id("job-3");
  job.set_state(v1::JOB_STATE_DONE);
  v1::JobResult* res = job.mutable_result();
  res->set_best_candidate_id("c1");
  res->set_op_class("matmul");
  v1::Measurement* m = res->mutable_best_measurement();
  m->mutable_candidate()->set_median_ms(2.0);
  m->mutable_eager()->set_median_ms(1.0);
  m->mutable_compiled()->set_median_ms(1.5);
  BenchRow row = RowFromJob("p", job);
  CHECK(row.op_class == "matmul");
  CHECK(row.deploy == "eager");  // derived from the final run: stored before recommendations
  CHECK(SpeedupVsBestBaseline(row) == Approx(0.5));  // eager's 1.0 ms over 2.0 ms
  res->mutable_recommendation()->set_deploy(v1::DEPLOY_KERNEL);
  CHECK(RowFromJob("p", job).deploy == "kernel");  // the stored one wins
  // Without JobResult.op_class: the class of the stored op signature.
  res->clear_op_class();
  v1::OpRecord* op = job.mutable_baseline()->mutable_op_signature()->add_ops();
  op->set_op("aten::relu");
  v1::TensorInfo* t = op->add_inputs();
  t->add_shape(1024);
  t->set_dtype("float32");
  *op->add_outputs() = *t;
  CHECK(RowFromJob("p", job).op_class == "elementwise");
  // Not finished: no recommendation.
  job.set_state(v1::JOB_STATE_ROUNDS);
  CHECK(RowFromJob("p", job).deploy.empty());
}

// A DONE row of op class `op_class`: the best kernel at 1 ms, eager and torch.compile at the
// given times, recommending `deploy`.
BenchRow KbRow(const std::string& name, const std::string& op_class, double eager_ms,
               double compile_ms, const std::string& deploy) {
  BenchRow r;
  r.name = name;
  r.state = "DONE";
  r.op_class = op_class;
  r.best_ms = 1.0;
  r.eager_ms = eager_ms;
  r.compile_ms = compile_ms;
  r.speedup_vs_eager = eager_ms;
  r.speedup_vs_compile = compile_ms;
  r.deploy = deploy;
  return r;
}

TEST_CASE("bench: KernelBench figures: coverage, geometric means, fast_p, fallbacks, per class") {
  // Speedups over the best PyTorch baseline (the faster of eager and torch.compile):
  //   a (matmul)   eager 4, compile 2   -> 2.0   (compile's 2 ms over 1 ms)
  //   b (matmul)   eager 0.8, compile 3 -> 0.8   keeps eager
  //   c (conv)     eager 3, compile 1.6 -> 1.6
  //   d (conv)     eager 0.4, compile 0.5 -> 0.4 keeps eager
  //   e (conv)     FAILED: no verified kernel
  //   f (-)        eager 9, compile 0 (not timed) -> 9.0
  std::vector<BenchRow> rows = {KbRow("a", "matmul", 4, 2, "kernel"),
                                KbRow("b", "matmul", 0.8, 3, "eager"),
                                KbRow("c", "conv", 3, 1.6, "kernel"),
                                KbRow("d", "conv", 0.4, 0.5, "eager"),
                                KbRow("e", "conv", 1, 1, ""),
                                KbRow("f", "", 9, 0, "kernel")};
  rows[4].state = "FAILED";
  rows[4].best_ms = 0;
  CHECK(SpeedupVsBestBaseline(rows[0]) == Approx(2.0));
  CHECK(SpeedupVsBestBaseline(rows[5]) == Approx(9.0));
  CHECK(SpeedupVsBestBaseline(rows[4]) == 0);
  CHECK_FALSE(HasVerifiedKernel(rows[4]));

  BenchCoverage all = Coverage(rows);
  CHECK(all.problems == 6);
  CHECK(all.verified == 5);
  // (2 * 0.8 * 1.6 * 0.4 * 9) ^ (1/5) = 9.216 ^ 0.2
  CHECK(all.geomean_vs_baseline == Approx(std::pow(9.216, 0.2)));
  // torch.compile: a 2, b 3, c 1.6, d 0.5; f not timed (0) leaves the mean
  CHECK(all.geomean_vs_compile == Approx(std::pow(2 * 3 * 1.6 * 0.5, 0.25)));
  // fast_0: all 5 verified; fast_0.5: a, b, c, f; fast_1: a, c, f.
  CHECK(all.fast_p[0] == 5);
  CHECK(all.fast_p[1] == 4);
  CHECK(all.fast_p[2] == 3);
  CHECK(all.fell_back == 2);

  std::vector<BenchCoverage> by = CoverageByOpClass(rows);
  REQUIRE(by.size() == 3);
  CHECK(by[0].op_class == "conv");
  CHECK(by[0].problems == 3);
  CHECK(by[0].verified == 2);
  CHECK(by[0].geomean_vs_baseline == Approx(std::sqrt(1.6 * 0.4)));
  CHECK(by[0].fast_p[2] == 1);
  CHECK(by[0].fell_back == 1);
  CHECK(by[1].op_class == "matmul");
  CHECK(by[1].geomean_vs_baseline == Approx(std::sqrt(2 * 0.8)));
  CHECK(by[1].fast_p[1] == 2);
  CHECK(by[2].op_class == "(not recognized)");
  CHECK(by[2].verified == 1);

  // The summary carries them, results.md and results.json say them.
  BenchSummary s = Summarize(rows);
  CHECK(s.coverage.verified == 5);
  CHECK(s.by_op_class.size() == 3);
  const std::string md = RenderBenchMarkdown(rows, s, "");
  CHECK(absl::StrContains(md, "- coverage: a verified kernel for 5 of 6 problems (83%)\n"));
  CHECK(absl::StrContains(md, "fast_0 5 (83%), fast_0.5 4 (67%), fast_1 3 (50%)\n"));
  CHECK(absl::StrContains(md, "job recommends keeping PyTorch): 2 of the 5 verified\n"));
  CHECK(absl::StrContains(md, "| conv | 3 | 2 | 0.89x | 0.80x | 2 | 1 | 1 | 1 |\n"));
  CHECK(absl::StrContains(md, "| a | DONE | matmul | "));
  CHECK(absl::StrContains(md, " | 2.00x | kernel | "));
  nlohmann::json j = nlohmann::json::parse(RenderBenchJson(rows, s, "{}"));
  CHECK(j["summary"]["kernelbench"]["verified"] == 5);
  CHECK(j["summary"]["kernelbench"]["fast_p"]["0.5"] == 4);
  CHECK(j["summary"]["kernelbench"]["fell_back_to_pytorch"] == 2);
  CHECK(j["summary"]["by_op_class"][0]["op_class"] == "conv");
  CHECK(j["problems"][1]["deploy"] == "eager");
  CHECK(j["problems"][1]["speedup_vs_best_baseline"] == Approx(0.8));
  // Read back, the class and the recommendation are kept.
  auto back = ParseBenchJson(RenderBenchJson(rows, s, "{}"), "x", nullptr);
  REQUIRE(back.ok());
  CHECK((*back)[2].op_class == "conv");
  CHECK((*back)[1].deploy == "eager");
  CHECK(Coverage(*back).fast_p[2] == 3);
  CHECK(CoverageLine(all) ==
        "coverage 5 of 6 (83%); geometric mean 1.48x vs torch.compile, 1.56x vs the best "
        "PyTorch baseline; fast_0 5, fast_0.5 4, fast_1 3 of 6; 2 fell back to PyTorch");
}

TEST_CASE("bench: convolutions are also reported per convolution class") {
  // The row's class comes from the stored op signature (kernel_model ConvClass).
  v1::Job job;
  job.set_state(v1::JOB_STATE_DONE);
  v1::OpRecord* op = job.mutable_baseline()->mutable_op_signature()->add_ops();
  op->set_op("aten::convolution");
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{8, 64, 32, 32},
                                            std::vector<int64_t>{64, 1, 3, 3}}) {
    v1::TensorInfo* t = op->add_inputs();
    for (int64_t d : shape) t->add_shape(d);
    t->set_dtype("float32");
  }
  v1::TensorInfo* y = op->add_outputs();
  for (int64_t d : {8, 64, 30, 30}) y->add_shape(d);
  y->set_dtype("float32");
  (*op->mutable_scalars())["groups"] = 64;
  (*op->mutable_scalars())["transposed"] = 0;
  BenchRow from_job = RowFromJob("dw", job);
  CHECK(from_job.op_class == "conv");
  CHECK(from_job.conv_class == "conv2d depthwise");

  std::vector<BenchRow> rows = {KbRow("a", "conv", 3, 2, "kernel"),
                                KbRow("b", "conv", 4, 8, "kernel"),
                                KbRow("c", "conv", 0.5, 0.6, "eager"),
                                KbRow("d", "conv", 2, 2, "kernel"),
                                KbRow("e", "matmul", 2, 2, "kernel")};
  rows[0].conv_class = rows[1].conv_class = "conv2d";
  rows[2].conv_class = "conv2d stem";  // d: merged from an older file, no class
  std::vector<BenchCoverage> by = CoverageByConvClass(rows);
  REQUIRE(by.size() == 3);
  CHECK(by[0].op_class == "conv (class not recorded)");
  CHECK(by[1].op_class == "conv2d");
  CHECK(by[1].problems == 2);
  CHECK(by[1].geomean_vs_compile == Approx(4.0));  // sqrt(2 * 8)
  CHECK(by[2].op_class == "conv2d stem");
  CHECK(by[2].fell_back == 1);
  CHECK(CoverageByConvClass({rows[4]}).empty());

  BenchSummary s = Summarize(rows);
  const std::string md = RenderBenchMarkdown(rows, s, "");
  CHECK(absl::StrContains(md, "The convolutions by class:\n\n| conv class | problems |"));
  CHECK(absl::StrContains(md, "| conv2d | 2 | 2 | 4.00x | 2.83x | 2 | 2 | 2 | 0 |\n"));
  CHECK_FALSE(absl::StrContains(RenderBenchMarkdown({rows[4]}, Summarize({rows[4]}), ""),
                                "conv class"));
  nlohmann::json j = nlohmann::json::parse(RenderBenchJson(rows, s, "{}"));
  CHECK(j["summary"]["by_conv_class"][1]["conv_class"] == "conv2d");
  CHECK(j["problems"][2]["conv_class"] == "conv2d stem");
  auto back = ParseBenchJson(RenderBenchJson(rows, s, "{}"), "x", nullptr);
  REQUIRE(back.ok());
  CHECK((*back)[2].conv_class == "conv2d stem");
  CHECK((*back)[3].conv_class.empty());
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
  CHECK(md.find("| state | op class | start ms |") != std::string::npos);
  CHECK(md.find("| vs compile | deploy | roofline | AI roofline | rounds |") != std::string::npos);
  CHECK(md.find("| 01_matmul | DONE | - | 2.000 | 1.000 | 1.250 | 1.000 | 2.00x | 1.00x | 1.25x | - | 50% | 46% | 0 | 10.0 |") !=
        std::string::npos);
  CHECK(md.find("| 02_bad | FAILED | - | - | - | - | - | - | - | - | - | - | - | 0 | 0.0 | - | n/a | 0 | a   pipe and a newline |") !=
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

TEST_CASE("bench: candidates per GPU-minute and the GPU-busy fraction") {
  CHECK(CandidatesPerGpuMinute(30, 120) == Approx(15.0));
  CHECK(CandidatesPerGpuMinute(0, 120) == 0);
  CHECK(CandidatesPerGpuMinute(5, 0) == 0);
  CHECK(GpuBusyFraction(90, 120) == Approx(0.75));
  CHECK(GpuBusyFraction(0, 120) == 0);  // no NVML figure
  CHECK(GpuBusyFraction(5, 0) == 0);
  CHECK(FormatPerGpuMinute(15) == "15.00");
  CHECK(FormatPerGpuMinute(0) == "-");
  CHECK(FormatBusyFraction(0.754) == "75%");
  CHECK(FormatBusyFraction(0) == "n/a");
}

// Rows with throughput counters: a (GPU, NVML), b (a CPU worker: no busy time), a failed c.
std::vector<BenchRow> ThroughputRows() {
  std::vector<BenchRow> rows = {Row("a", 2.0, 1.5), Row("b", 1.0, 1.0)};
  rows[0].gpu_seconds = 120;
  rows[0].candidates_measured = 30;
  rows[0].gpu_busy_seconds = 90;
  rows[0].variants_screened = 40;
  rows[1].gpu_seconds = 60;
  rows[1].candidates_measured = 6;
  rows[1].cpu_worker = true;
  BenchRow c;
  c.name = "c";
  c.state = "FAILED";
  c.gpu_seconds = 60;
  c.candidates_measured = 1;
  c.gpu_busy_seconds = 30;
  rows.push_back(c);
  return rows;
}

TEST_CASE("bench: the summary's throughput is over every row, busy over the rows that report it") {
  std::vector<BenchRow> rows = ThroughputRows();
  BenchSummary s = Summarize(rows);
  CHECK(s.candidates_measured == 37);
  CHECK(s.variants_screened == 40);
  CHECK(s.gpu_seconds == Approx(240));
  CHECK(s.candidates_per_gpu_minute == Approx(37.0 / 4));
  CHECK(s.gpu_busy_seconds == Approx(120));
  CHECK(s.busy_rows == 2);
  CHECK(s.gpu_busy_fraction == Approx(120.0 / 180));  // b's 60 CPU seconds left out
  CHECK(ThroughputLine(s) ==
        "37 candidates measured in 240.0 GPU-s: 9.25 per GPU-minute; GPU busy 67% (2 problems "
        "with NVML figures); 40 variants screened (1 problem on the CPU worker: its slot's "
        "seconds, not a GPU's)");
  CHECK(HeldTimeUnit(s) == "GPU");
  // Only the CPU worker: its seconds, no busy figure, the report's and `kagent get`'s words.
  BenchSummary cpu = Summarize({rows[1]});
  CHECK(cpu.gpu_busy_fraction == 0);
  CHECK(HeldTimeUnit(cpu) == "worker");
  CHECK(ThroughputLine(cpu) ==
        "6 candidates measured in 60.0 worker-s on the CPU worker (Triton's interpreter, no GPU): "
        "6.00 per worker-minute; 0 variants screened");
  CHECK(RenderBenchMarkdown({rows[1]}, cpu, "").find(
            "- worker time: 60.0 worker-s (the CPU worker's slot, Triton's interpreter; no GPU)\n"
            "- candidates measured: 6, 6.00 per worker-minute\n") != std::string::npos);
  CHECK(RenderBenchMarkdown({rows[1]}, cpu, "").find("| rounds | worker-s | cand/worker-min |") !=
        std::string::npos);
  // A row without a GPU behind it is not a GPU row, whatever its counters say.
  BenchRow gpu_row = rows[1];
  gpu_row.cpu_worker = false;
  CHECK(HeldTimeUnit(Summarize({gpu_row})) == "GPU");
}

TEST_CASE("bench: Markdown and JSON carry the throughput per problem and for the run") {
  std::vector<BenchRow> rows = ThroughputRows();
  BenchSummary s = Summarize(rows);
  std::string md = RenderBenchMarkdown(rows, s, "");
  CHECK(md.find("| rounds | GPU-s | cand/GPU-min | GPU busy | variants | notes |") != std::string::npos);
  CHECK(md.find("| 0 | 120.0 | 15.00 | 75% | 40 |") != std::string::npos);
  CHECK(md.find("| 0 | 60.0 | 6.00 | n/a | 0 |") != std::string::npos);
  CHECK(md.find("- candidates measured: 37, 9.25 per GPU-minute\n") != std::string::npos);
  CHECK(md.find("- GPU busy (kernels running, NVML) of the GPU time held: 67% (over the 2 "
                "problems that report it)\n") != std::string::npos);
  CHECK(md.find("- kernel variants screened before measuring: 40\n") != std::string::npos);
  CHECK(RenderBenchMarkdown({rows[1]}, Summarize({rows[1]}), "")
            .find("GPU time held: n/a (no problem reported busy time") != std::string::npos);

  nlohmann::json j = nlohmann::json::parse(RenderBenchJson(rows, s, "{}"));
  const nlohmann::json& a = j["problems"][0];
  CHECK(a["candidates_measured"] == 30);
  CHECK(a["gpu_busy_seconds"].get<double>() == Approx(90));
  CHECK(a["variants_screened"] == 40);
  CHECK(a["candidates_per_gpu_minute"].get<double>() == Approx(15));
  CHECK(a["gpu_busy_fraction"].get<double>() == Approx(0.75));
  CHECK(j["problems"][1]["gpu_busy_fraction"].is_null());  // n/a
  CHECK(j["summary"]["candidates_measured"] == 37);
  CHECK(j["summary"]["candidates_per_gpu_minute"].get<double>() == Approx(9.25));
  CHECK(j["summary"]["gpu_busy_fraction"].get<double>() == Approx(120.0 / 180));
  CHECK(j["summary"]["variants_screened"] == 40);
  CHECK(nlohmann::json::parse(RenderBenchJson({rows[1]}, Summarize({rows[1]}), "{}"))["summary"]
            ["gpu_busy_fraction"]
                .is_null());
}

TEST_CASE("bench: the throughput fields read back, default to 0 in older files, and are checked") {
  std::vector<BenchRow> rows = ThroughputRows();
  auto back = ParseBenchJson(RenderBenchJson(rows, Summarize(rows), "{}"), "t.json", nullptr);
  REQUIRE(back.ok());
  REQUIRE(back->size() == 3);
  CHECK((*back)[0].candidates_measured == 30);
  CHECK((*back)[0].gpu_busy_seconds == 90);
  CHECK((*back)[0].variants_screened == 40);
  CHECK((*back)[2].gpu_busy_seconds == 30);
  CHECK_FALSE((*back)[0].cpu_worker);
  CHECK((*back)[1].cpu_worker);
  const std::string old_row =
      R"("name": "a", "state": "DONE", "start_ms": 2, "eager_ms": 1, "compile_ms": 1,
         "best_ms": 1, "speedup_vs_start": 2, "speedup_vs_eager": 1, "speedup_vs_compile": 1)";
  auto old = ParseBenchJson("{\"problems\": [{" + old_row + "}]}", "old.json", nullptr);
  REQUIRE(old.ok());
  CHECK((*old)[0].candidates_measured == 0);
  CHECK((*old)[0].gpu_busy_seconds == 0);
  CHECK_FALSE((*old)[0].cpu_worker);
  CHECK_FALSE(ParseBenchJson("{\"problems\": [{" + old_row + ", \"cpu_worker\": 1}]}", "c.json",
                             nullptr)
                  .ok());
  CHECK(FormatBusyFraction(Summarize(*old).gpu_busy_fraction) == "n/a");
  auto bad = ParseBenchJson("{\"problems\": [{" + old_row + ", \"candidates_measured\": 2.5}]}",
                            "bad.json", nullptr);
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()) ==
        "bad.json: problems[0].candidates_measured: expected a non-negative integer");
  auto neg = ParseBenchJson("{\"problems\": [{" + old_row + ", \"variants_screened\": -1}]}",
                            "neg.json", nullptr);
  CHECK_FALSE(neg.ok());
  auto busy = ParseBenchJson("{\"problems\": [{" + old_row + ", \"gpu_busy_seconds\": \"x\"}]}",
                             "busy.json", nullptr);
  REQUIRE_FALSE(busy.ok());
  CHECK(absl::StrContains(busy.status().message(), "gpu_busy_seconds: expected a number"));
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
  CHECK(err.find("no problem (a NAME.py defining class Model)") != std::string::npos);
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
  // --rounds given is a budget of 1..1000 rounds: 0 is refused, not taken as the default.
  for (const char* v : {"0", "-1", "1001"}) {
    absl::StatusOr<BenchFlags> bad = ParseBenchFlags({"p", "--out", "o", "--rounds", v});
    CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(bad.status().message() == std::string("--rounds must be 1..1000 (got ") + v +
                                        "); leave it out for the server's default");
  }
  CHECK(ParseBenchFlags({"p", "--out", "o", "--rounds", "1000"}).ok());
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
  WriteProblem(d / "01_a.py");
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
  WriteProblem(d / "01_a.py");
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

TEST_CASE("bench: a plain KernelBench folder (no _start.py) runs as is, nothing written into it") {
  // KernelBench's level1/ layout: numbered problem files, no starting kernels.
  fs::path d = TempDir("kernelbench");
  fs::path level1 = d / "level1";
  fs::create_directories(level1);
  WriteProblem(level1 / "1_Square_matrix_multiplication_.py");
  WriteProblem(level1 / "2_Standard_matrix_multiplication_.py");
  const std::vector<std::string> before = FileNames(level1);
  auto found = FindBenchProblems(level1.string(), "");
  REQUIRE(found.ok());
  REQUIRE(found->size() == 2);
  CHECK((*found)[0].name == "1_Square_matrix_multiplication_");
  CHECK((*found)[1].name == "2_Standard_matrix_multiplication_");
  for (const BenchProblem& p : *found) CHECK(p.start_path.empty());
  // The run reads the folder, says that the brain writes every first kernel, and writes
  // only under --out (here no server answers: exit 1, the partial results still written).
  std::string out, err;
  int rc = Bench({level1.string(), "--out", (d / "o").string(), "--server", "127.0.0.1:1",
                  "--timeout-seconds", "2"},
                 &out, &err);
  CHECK(rc == 1);
  CHECK(absl::StrContains(out, "2 problems from " + level1.string() +
                                   " (0 with a starting kernel; the brain writes the others' "
                                   "first kernels)"));
  CHECK(FileNames(level1) == before);
  std::ifstream in(d / "o" / "results.json");
  nlohmann::json j = nlohmann::json::parse(in);
  REQUIRE(j["problems"].size() == 2);
  CHECK(j["summary"]["kernelbench"]["problems"] == 2);
  CHECK(j["summary"]["kernelbench"]["verified"] == 0);
  fs::remove_all(d);
}

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("bench: ParseBenchJson reads back what RenderBenchJson wrote") {
  std::vector<BenchRow> rows = {Row("a", 2.0, 1.5, {{1, 1.5}, {2, 2.0}}), Row("b", 1.0, 0.8)};
  rows[0].candidates_measured = 9;
  rows[0].gpu_busy_seconds = 7.25;
  rows[0].variants_screened = 24;
  rows[0].job_id = "job-a";
  rows[0].ai_roofline_pct = 46;
  rows[0].stop_reason = "plateau";
  rows[1].run = "h200";
  BenchRow failed;
  failed.name = "c";
  failed.state = "FAILED";
  failed.error = "starting kernel INCORRECT";
  rows.push_back(failed);
  std::string settings;
  auto back = ParseBenchJson(RenderBenchJson(rows, Summarize(rows), R"({"run_id": "x", "rounds": 2})"),
                             "r.json", &settings);
  REQUIRE(back.ok());
  REQUIRE(back->size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& a = rows[i];
    const BenchRow& b = (*back)[i];
    INFO(a.name);
    CHECK(b.name == a.name);
    CHECK(b.run == a.run);
    CHECK(b.job_id == a.job_id);
    CHECK(b.state == a.state);
    CHECK(b.error == a.error);
    CHECK(b.stop_reason == a.stop_reason);
    CHECK(b.start_ms == a.start_ms);
    CHECK(b.eager_ms == a.eager_ms);
    CHECK(b.compile_ms == a.compile_ms);
    CHECK(b.best_ms == a.best_ms);
    CHECK(b.speedup_vs_start == a.speedup_vs_start);
    CHECK(b.speedup_vs_eager == a.speedup_vs_eager);
    CHECK(b.speedup_vs_compile == a.speedup_vs_compile);
    CHECK(b.roofline_pct == a.roofline_pct);
    CHECK(b.ai_roofline_pct == a.ai_roofline_pct);
    CHECK(b.rounds == a.rounds);
    CHECK(b.gpu_seconds == a.gpu_seconds);
    CHECK(b.gpu_busy_seconds == a.gpu_busy_seconds);
    CHECK(b.candidates_measured == a.candidates_measured);
    CHECK(b.variants_screened == a.variants_screened);
    CHECK(b.trajectory == a.trajectory);
  }
  nlohmann::json s = nlohmann::json::parse(settings);
  CHECK(s["run_id"] == "x");
  CHECK(s["rounds"] == 2);
  // Rendering again gives the same file.
  CHECK(RenderBenchJson(*back, Summarize(*back), settings) ==
        RenderBenchJson(rows, Summarize(rows), R"({"rounds": 2, "run_id": "x"})"));
  // "run" is always written, empty when unknown.
  nlohmann::json j = nlohmann::json::parse(RenderBenchJson(rows, Summarize(rows), "{}"));
  CHECK(j["problems"][0]["run"] == "");
  CHECK(j["problems"][1]["run"] == "h200");
}

TEST_CASE("bench: ParseBenchJson accepts older files and names the file and field on bad input") {
  // A file from before "run" and "roofline_bound_pct", without settings: still parses.
  auto old = ParseBenchJson(
      R"({"problems": [{"name": "a", "state": "DONE", "start_ms": 2, "eager_ms": 1,
          "compile_ms": 1, "best_ms": 1, "speedup_vs_start": 2, "speedup_vs_eager": 1,
          "speedup_vs_compile": null}]})",
      "old.json", nullptr);
  REQUIRE(old.ok());
  REQUIRE(old->size() == 1);
  CHECK((*old)[0].run.empty());
  CHECK((*old)[0].speedup_vs_compile == 0);  // null (NaN) reads as unknown
  std::string settings = "unchanged";
  REQUIRE(ParseBenchJson(R"({"problems": []})", "e.json", &settings).ok());
  CHECK(settings == "{}");

  const std::string good_row =
      R"("state": "DONE", "start_ms": 2, "eager_ms": 1, "compile_ms": 1, "best_ms": 1,
         "speedup_vs_start": 2, "speedup_vs_eager": 1, "speedup_vs_compile": 1)";
  struct Case {
    std::string text, expect;
  };
  std::vector<Case> cases = {
      {"{not json", "f.json: not valid JSON"},
      {"[1, 2]", "f.json: not a results.json"},
      {R"({"settings": {}})", "f.json: problems: missing"},
      {R"({"problems": {}})", "f.json: problems: expected an array"},
      {R"({"settings": [], "problems": []})", "f.json: settings: expected an object"},
      {R"({"problems": [7]})", "f.json: problems[0]: expected an object"},
      {"{\"problems\": [{" + good_row + "}]}", "f.json: problems[0].name: missing"},
      {"{\"problems\": [{\"name\": \"\", " + good_row + "}]}", "f.json: problems[0].name: empty"},
      {"{\"problems\": [{\"name\": 3, " + good_row + "}]}", "f.json: problems[0].name: expected a string"},
      {R"({"problems": [{"name": "a", "state": "DONE", "start_ms": 2}]})",
       "f.json: problems[0].eager_ms: missing"},
      {R"({"problems": [{"name": "a", "state": "DONE", "start_ms": "2", "eager_ms": 1}]})",
       "f.json: problems[0].start_ms: expected a number"},
      {"{\"problems\": [{\"name\": \"a\", \"rounds\": 1.5, " + good_row + "}]}",
       "f.json: problems[0].rounds: expected an integer"},
      {"{\"problems\": [{\"name\": \"a\", \"run\": 1, " + good_row + "}]}",
       "f.json: problems[0].run: expected a string"},
      {"{\"problems\": [{\"name\": \"a\", \"trajectory\": [{\"round\": \"1\"}], " + good_row + "}]}",
       "f.json: problems[0].trajectory[0].round: expected an integer"},
      {"{\"problems\": [{\"name\": \"a\", " + good_row + "}, {\"name\": \"a\", " + good_row + "}]}",
       "f.json: problems[1].name: 'a' already in problems[0]"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = ParseBenchJson(c.text, "f.json", nullptr);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(r.status().message()).find(c.expect) != std::string::npos);
  }
}

TEST_CASE("bench: merge keeps each problem's row from the latest run, ordered by name") {
  BenchRunFile first{"runs/h200/results.json", R"({"run_id": "h200", "rounds": 1})",
                     {Row("b", 1.0, 0.5), Row("a", 1.0, 0.5), Row("c", 1.0, 0.5)}};
  BenchRunFile second{"runs/s5b/results.json", R"({"run_id": "h200-s5b", "rounds": 2})",
                      {Row("c", 3.0, 1.5), Row("a", 2.0, 1.2)}};
  BenchRunFile third{"runs/noid/results.json", R"({"run_id": ""})", {Row("d", 1.5, 1.1)}};
  std::vector<BenchRow> m = MergeBenchRows({first, second, third});
  REQUIRE(m.size() == 4);
  CHECK(m[0].name == "a");
  CHECK(m[0].run == "h200-s5b");
  CHECK(m[0].speedup_vs_start == 2.0);
  CHECK(m[1].name == "b");
  CHECK(m[1].run == "h200");
  CHECK(m[2].name == "c");
  CHECK(m[2].run == "h200-s5b");
  CHECK(m[2].speedup_vs_compile == 1.5);
  CHECK(m[3].run == "runs/noid/results.json");  // no run id: the file's path
  // The other order: the earlier file wins now.
  std::vector<BenchRow> r = MergeBenchRows({second, first});
  CHECK(r[0].run == "h200");
  CHECK(r[0].speedup_vs_start == 1.0);
  // A row that already names its run (from a merged file) keeps it.
  BenchRunFile merged{"m.json", "{}", {Row("e", 1, 1)}};
  merged.rows[0].run = "old";
  CHECK(MergeBenchRows({merged})[0].run == "old");
  // Two files under one run id: each row still leads to its file.
  BenchRunFile again{"runs/h200-b/results.json", R"({"run_id": "h200"})", {Row("b", 2.0, 1.0)}};
  std::vector<BenchRow> twice = MergeBenchRows({first, again});
  CHECK(twice[0].run == "h200 (runs/h200/results.json)");
  // A later unfinished job does not hide an earlier finished row; it still replaces an
  // earlier unfinished one.
  BenchRunFile partial{"runs/s7/results.json", R"({"run_id": "s7"})",
                       {Row("a", 1.0, 0.01), Row("f", 1.0, 1.0)}};
  partial.rows[0].state = "ROUNDS";
  partial.rows[1].state = "ROUNDS";
  BenchRunFile earlier_partial{"runs/s6/results.json", R"({"run_id": "s6"})", {Row("f", 1.0, 0.5)}};
  earlier_partial.rows[0].state = "QUEUED";
  std::vector<BenchRow> p = MergeBenchRows({first, earlier_partial, partial});
  REQUIRE(p.size() == 4);
  CHECK(p[0].name == "a");
  CHECK(p[0].run == "h200");
  CHECK(p[3].name == "f");
  CHECK(p[3].run == "s7");
  CHECK(twice[1].run == "h200 (runs/h200-b/results.json)");
  CHECK(BenchRunLabels({first, second, third}) ==
        std::vector<std::string>{"h200", "h200-s5b", "runs/noid/results.json"});

  // The summary is over the merged rows.
  BenchSummary s = Summarize(m);
  CHECK(s.problems == 4);
  CHECK(s.geomean_vs_start == Approx(std::pow(2.0 * 1.0 * 3.0 * 1.5, 0.25)));

  nlohmann::json settings = nlohmann::json::parse(MergedSettingsJson({first, second, third}, m));
  REQUIRE(settings["merged_from"].size() == 3);
  CHECK(settings["merged_from"][0]["file"] == "runs/h200/results.json");
  CHECK(settings["merged_from"][0]["run_id"] == "h200");
  CHECK(settings["merged_from"][0]["rounds"] == 1);
  CHECK(settings["merged_from"][0]["problems"] == 3);
  CHECK(settings["merged_from"][0]["kept"] == 1);  // b; a and c were re-run
  CHECK(settings["merged_from"][1]["kept"] == 2);
  CHECK(settings["merged_from"][1]["rounds"] == 2);

  std::string header = MergedMarkdownHeader({first, second, third}, m);
  CHECK(header.find("A merge of 3 runs") != std::string::npos);
  CHECK(header.find("1. `h200`: runs/h200/results.json, 3 problems, 1 kept, --rounds 1") != std::string::npos);
  CHECK(header.find("2. `h200-s5b`: runs/s5b/results.json, 2 problems, 2 kept, --rounds 2") !=
        std::string::npos);
  CHECK(header.find("each self-consistent") != std::string::npos);
  CHECK(header.find("side by side in that job") != std::string::npos);
}

TEST_CASE("bench: the Markdown run column appears only when some row names its run") {
  std::vector<BenchRow> rows = {Row("01_matmul", 2.0, 1.25), Row("02_relu", 1.0, 1.0)};
  std::string plain = RenderBenchMarkdown(rows, Summarize(rows), "");
  CHECK(plain.find("| problem | state |") != std::string::npos);
  CHECK(plain.find("| run |") == std::string::npos);
  rows[1].run = "h200-s5b";
  std::string md = RenderBenchMarkdown(rows, Summarize(rows), "");
  CHECK(md.find("| problem | run | state | op class | start ms |") != std::string::npos);
  CHECK(md.find("|---|---|---|---|---:|") != std::string::npos);
  CHECK(md.find("| 01_matmul |  | DONE | - | 2.000 |") != std::string::npos);
  CHECK(md.find("| 02_relu | h200-s5b | DONE | - | 2.000 |") != std::string::npos);
}

TEST_CASE("bench: --merge writes one table from several results.json, no server") {
  fs::path d = TempDir("merge");
  std::vector<BenchRow> a = {Row("01_a", 1.0, 0.5, {{1, 1.0}}), Row("02_b", 1.0, 0.5)};
  std::vector<BenchRow> b = {Row("02_b", 4.0, 2.0, {{1, 2.0}, {2, 4.0}})};
  a[0].candidates_measured = 4;
  a[0].gpu_busy_seconds = 5;
  b[0].candidates_measured = 20;
  b[0].gpu_busy_seconds = 8;
  b[0].variants_screened = 12;
  std::ofstream(d / "a.json") << RenderBenchJson(a, Summarize(a), R"({"run_id": "h200", "rounds": 1})");
  std::ofstream(d / "b.json") << RenderBenchJson(b, Summarize(b), R"({"run_id": "h200-s5b", "rounds": 2})");
  std::string out, err;
  int rc = Bench({"--merge", "--out", (d / "o").string(), (d / "a.json").string(), (d / "b.json").string()},
                 &out, &err);
  INFO(err);
  REQUIRE(rc == 0);
  CHECK(out.find("merged 2 runs: 2 problems, 2 DONE") != std::string::npos);
  // Throughput of the merged rows (01_a from a, 02_b from b; 10 GPU-s each).
  CHECK(out.find("throughput: 24 candidates measured in 20.0 GPU-s: 72.00 per GPU-minute; GPU "
                 "busy 65% (2 problems with NVML figures); 12 variants screened") != std::string::npos);
  CHECK(absl::StrContains(out, "kernelbench: coverage 2 of 2 (100%); "));
  nlohmann::json j = nlohmann::json::parse(Slurp(d / "o" / "results.json"));
  REQUIRE(j["problems"].size() == 2);
  CHECK(j["problems"][0]["name"] == "01_a");
  CHECK(j["problems"][0]["run"] == "h200");
  CHECK(j["problems"][1]["name"] == "02_b");
  CHECK(j["problems"][1]["run"] == "h200-s5b");
  CHECK(j["problems"][1]["speedup_vs_start"].get<double>() == Approx(4.0));
  CHECK(j["summary"]["problems"] == 2);
  CHECK(j["summary"]["geomean_speedup_vs_start"].get<double>() == Approx(2.0));
  CHECK(j["problems"][1]["candidates_measured"] == 20);
  CHECK(j["problems"][1]["variants_screened"] == 12);
  CHECK(j["summary"]["candidates_measured"] == 24);
  CHECK(j["summary"]["gpu_busy_fraction"].get<double>() == Approx(13.0 / 20));
  REQUIRE(j["settings"]["merged_from"].size() == 2);
  CHECK(j["settings"]["merged_from"][0]["file"] == (d / "a.json").string());
  CHECK(j["settings"]["merged_from"][1]["run_id"] == "h200-s5b");
  CHECK(j["suite_trajectory"].size() == 3);
  std::string md = Slurp(d / "o" / "results.md");
  CHECK(md.find("A merge of 2 runs") != std::string::npos);
  CHECK(md.find("| 02_b | h200-s5b | DONE |") != std::string::npos);
  CHECK(Slurp(d / "o" / "trajectory.svg").find("</svg>") != std::string::npos);

  // The merged file merges again: rows keep the runs they name.
  rc = Bench({"--merge", "--out", (d / "o2").string(), (d / "o" / "results.json").string()}, &out, &err);
  REQUIRE(rc == 0);
  nlohmann::json j2 = nlohmann::json::parse(Slurp(d / "o2" / "results.json"));
  CHECK(j2["problems"][0]["run"] == "h200");
  CHECK(j2["problems"][1]["run"] == "h200-s5b");
  fs::remove_all(d);
}

TEST_CASE("bench: --merge usage errors exit 2") {
  fs::path d = TempDir("merge_usage");
  std::vector<BenchRow> a = {Row("01_a", 1.0, 0.5)};
  std::ofstream(d / "a.json") << RenderBenchJson(a, Summarize(a), "{}");
  std::ofstream(d / "bad.json") << R"({"summary": {}})";
  const std::string o = (d / "o").string();
  std::string out, err;
  CHECK(Bench({"--merge", "--out", o}, &out, &err) == 2);
  CHECK(err.find("--merge needs at least one RESULTS.json") != std::string::npos);
  CHECK(err.find("usage: kagent bench --merge") != std::string::npos);
  CHECK(Bench({"--merge", (d / "a.json").string()}, &out, &err) == 2);
  CHECK(err.find("--merge needs --out OUTDIR") != std::string::npos);
  CHECK(Bench({"--merge", "--out", o, (d / "missing.json").string()}, &out, &err) == 2);
  CHECK(err.find("missing.json: no such file") != std::string::npos);
  CHECK(Bench({"--merge", "--out", o, (d / "a.json").string(), (d / "bad.json").string()}, &out, &err) == 2);
  CHECK(err.find("bad.json: problems: missing") != std::string::npos);
  CHECK(Bench({"--merge", "--out", o, d.string()}, &out, &err) == 2);  // a suite DIR
  CHECK(err.find("is a directory") != std::string::npos);
  CHECK(Bench({"--merge", "--out", o, "--only", "01", (d / "a.json").string()}, &out, &err) == 2);
  CHECK(err.find("--only runs jobs; it cannot be used with --merge") != std::string::npos);
  CHECK(Bench({"--merge", "--out", o, "--rounds", "2", (d / "a.json").string()}, &out, &err) == 2);
  CHECK_FALSE(fs::exists(d / "o"));  // nothing written on an error
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
