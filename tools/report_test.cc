// The HTML report's figures and wording, on three GPU jobs recorded on an H200
// (tools/testdata/report/gpu_h200_*), a GPU job built from the H200 case study for what
// those do not cover (gpu_matvec_h200: several rounds, a profiled best kernel, a
// duplicate), a job recorded on a CPU worker (cpu_matvec_small) and small jobs made here
// for the edge cases. report_browser_test renders the fixtures in a headless browser.
#include "tools/report.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/report_testdata.h"

namespace kagent {
namespace {

using absl::StrContains;

TEST_CASE("report: a GPU job (the H200 case study): every figure from the final run") {
  auto job = report_testdata::Load("gpu_matvec_h200");
  REQUIRE(job.ok());
  const std::string html = RenderHtmlReport(job->job, job->candidates, job->reflexions);
  // The result table: the final run's times and ratios, faster as faster.
  CHECK(StrContains(html,
                    "<tr><th>starting kernel</th><td><span class=\"num\">1.9443 "
                    "ms</span></td><td><span class=\"faster\">2.01x "
                    "faster</span></td></tr>"));
  CHECK(StrContains(html,
                    "<tr><th>eager PyTorch</th><td><span class=\"num\">1.0641 "
                    "ms</span></td><td><span class=\"faster\">1.10x faster"));
  CHECK(StrContains(html,
                    "<tr><th>torch.compile</th><td><span class=\"num\">1.0636 "
                    "ms</span></td><td><span class=\"faster\">1.10x faster"));
  CHECK(StrContains(html, "92.5% <small>(useful FLOPs"));
  CHECK(StrContains(html, "93.4% <small>(the larger of compute and memory SOL"));
  // The chart's 2.01x (round measurement over the baseline run) agrees with the final run's
  // within 1%: no sentence about differing figures.
  CHECK_FALSE(StrContains(html, "class=\"differs\""));
  CHECK(StrContains(html, "round (0 = the starting kernel)"));
  // GPU wording, no CPU banner.
  CHECK_FALSE(StrContains(html, "cpu-banner"));
  CHECK(StrContains(html, "<tr><th>GPU-seconds</th><td>226.0"));
  CHECK(
      StrContains(html, "<tr><th>GPU busy</th><td>n/a (no NVML figure from the worker)</td></tr>"));
  CHECK(StrContains(html, "per GPU-minute"));
  CHECK_FALSE(StrContains(html, "worker-seconds</th>"));
  // The problem, configuration and date.
  CHECK(StrContains(html, "<tr><th>op class</th><td>matvec <small>("));
  CHECK(StrContains(html,
                    "<code>aten::mm(bfloat16[2048, 1048576], bfloat16[1048576, 1]) &rarr; "
                    "bfloat16[2048, 1]</code>"));
  CHECK(StrContains(html, "<tr><th>brain</th><td>heuristic</td></tr>"));
  CHECK(StrContains(html, "<tr><th>beam width (kernels kept a round)</th><td>2</td></tr>"));
  CHECK(StrContains(html, "<tr><th>rounds</th><td>4 at most; 3 run</td></tr>"));
  CHECK(StrContains(html, "the final run applied atol 0.01, rtol 0.01"));
  CHECK(StrContains(html, "<tr><th>created</th><td>2026-11-29 14:10:05 UTC</td></tr>"));
  // The roofline against the H200's ceilings, the start and the best kernel on it.
  CHECK(StrContains(html, "Ceilings of the NVIDIA H200 from kagent's spec table: 4.80 TB/s DRAM"));
  CHECK(StrContains(html, "class=\"ptlabel\">start</text>"));
  CHECK(StrContains(html, "class=\"ptlabel\">best</text>"));
  // A duplicate is its own verdict, grey; ids are one-line spans with their full title.
  CHECK(StrContains(html, "<td class=\"DUPLICATE\">DUPLICATE"));
  CHECK(StrContains(html, ".DUPLICATE,.GENERATION_FAILED{color:#7f7f7f}"));
  CHECK(StrContains(html, "<span class=\"id\" title=\"job-3c9d41e07a2b-r2-w0\">r2-w0</span>"));
  CHECK(StrContains(html, "<span class=\"id\" title=\"job-3c9d41e07a2b\">job-3c9d41e07a2b</span>"));
  // An attempt without a profile has no roofline figure, never 0.0%.
  CHECK_FALSE(StrContains(html, "0.0%"));
  CHECK_FALSE(StrContains(html, "0.00x"));
}

TEST_CASE("report: a CPU job: a banner, worker-seconds, n/a where there are no counters") {
  auto job = report_testdata::Load("cpu_matvec_small");
  REQUIRE(job.ok());
  const std::string html = RenderHtmlReport(job->job, job->candidates, job->reflexions);
  CHECK(StrContains(html, "<div class=\"banner\" id=\"cpu-banner\"><b>Not GPU times.</b>"));
  CHECK(StrContains(html, "<tr><th>worker-seconds</th>"));
  CHECK(StrContains(html, "per worker-minute"));
  CHECK_FALSE(StrContains(html, "GPU-seconds"));
  CHECK_FALSE(StrContains(html, "GPU-minute"));
  CHECK(StrContains(html, "<tr><th>GPU busy</th><td>n/a (no GPU)</td></tr>"));
  CHECK(StrContains(html, "n/a (no hardware counters on a CPU worker)"));
  CHECK(StrContains(html,
                    "No roofline chart: no kernel of this job was profiled (a CPU worker has no "
                    "hardware counters)"));
  // The interpreter's kernel is far slower than eager PyTorch: said so, never "0.00x faster".
  CHECK(StrContains(html,
                    "<tr><th>eager PyTorch</th><td><span class=\"num\">0.1701 "
                    "ms</span></td><td><span class=\"slower\">0.003x "
                    "(338x slower)</span></td></tr>"));
  // What to deploy: eager PyTorch, the fastest path of the final run, and said to be the
  // interpreter's times.
  CHECK(StrContains(html, "<p id=\"deploy\" class=\"deploy keep\"><b>What to deploy:</b> "
                          "keep PyTorch&#39;s eager: fastest by "));
  CHECK(StrContains(html, "timed on the CPU worker (Triton&#39;s interpreter), not on a GPU</p>"));
  // The best kernel is the starting kernel: no ratio to itself, no 0-ms start.
  CHECK(StrContains(html, "<tr><th>starting kernel</th><td>the best kernel</td>"));
  CHECK_FALSE(StrContains(html, "0.00x"));
  CHECK_FALSE(StrContains(html, "0.0%"));
}

// The result table's row for `label`, computed here from the final run's medians: the
// time, and the best kernel's ratio to it as "1.13x faster" or "0.84x (1.19x slower)".
std::string ResultRow(const std::string& label, double other_ms, double best_ms) {
  const double r = other_ms / best_ms;
  const std::string ratio =
      r > 1 ? absl::StrFormat("<span class=\"faster\">%.2fx faster</span>", r)
            : absl::StrFormat("<span class=\"slower\">%.2fx (%.2fx slower)</span>", r, 1 / r);
  return absl::StrFormat("<tr><th>%s</th><td><span class=\"num\">%.4f ms</span></td><td>%s</td></tr>",
                         label, other_ms, ratio);
}

// Every time and ratio of the result table comes from the final run (best_measurement),
// the same figures the job's speedup_vs_* fields hold; GPU-seconds and the busy share are
// the job's totals. Shared by the recorded H200 jobs.
void CheckFinalRunTable(const v1::Job& job, const std::string& html) {
  const v1::Measurement& m = job.result().best_measurement();
  const double best = m.candidate().median_ms();
  INFO(job.id());
  CHECK(StrContains(html, absl::StrFormat("<td><span class=\"num\">%.4f ms</span></td><td></td></tr>",
                                          best)));
  CHECK(StrContains(html, ResultRow("starting kernel", m.reference_kernel().median_ms(), best)));
  CHECK(StrContains(html, ResultRow("eager PyTorch", m.eager().median_ms(), best)));
  CHECK(StrContains(html, ResultRow("torch.compile", m.compiled().median_ms(), best)));
  // The stored ratios are the same run's: start/best, eager/best, compile/best.
  CHECK(job.result().speedup_vs_start() == Approx(m.reference_kernel().median_ms() / best));
  CHECK(job.result().speedup_vs_eager() == Approx(m.eager().median_ms() / best));
  CHECK(job.result().speedup_vs_compile() == Approx(m.compiled().median_ms() / best));
  CHECK(StrContains(html, absl::StrFormat("<tr><th>GPU-seconds</th><td>%.1f <small>(time the job held a GPU)",
                                          job.gpu_seconds_used())));
  CHECK(StrContains(html, absl::StrFormat("<tr><th>GPU busy</th><td>%.0f%% <small>(of the GPU time held",
                                          100 * job.gpu_busy_seconds_used() / job.gpu_seconds_used())));
  // GPU wording, no CPU banner, never a made-up zero.
  CHECK_FALSE(StrContains(html, "cpu-banner"));
  CHECK_FALSE(StrContains(html, "worker-seconds</th>"));
  CHECK(StrContains(html, "<tr><th>device</th><td>NVIDIA H200</td></tr>"));
  CHECK(StrContains(html, "<tr><th>brain</th><td>heuristic</td></tr>"));
  CHECK(StrContains(html, "<tr><th>rounds</th><td>1 at most; 1 run</td></tr>"));
  // The best kernel was verified, not profiled (a one-round job): no speed-of-light figure.
  CHECK(StrContains(html,
                    "<tr><th>speed of light</th><td colspan=\"2\">n/a (the best kernel was not "
                    "profiled)</td></tr>"));
  CHECK_FALSE(StrContains(html, "0.00x"));
  CHECK_FALSE(StrContains(html, "0.0%"));
}

TEST_CASE("report: a GPU job recorded on the H200, faster than torch.compile") {
  auto job = report_testdata::Load("gpu_h200_tall_skinny");
  REQUIRE(job.ok());
  const std::string html = RenderHtmlReport(job->job, job->candidates, job->reflexions);
  CheckFinalRunTable(job->job, html);
  // The figures as read from the fixture (1.7725 / 1.5712 ms and so on).
  CHECK(StrContains(html, ResultRow("starting kernel", 1.7725, 1.5712)));
  CHECK(StrContains(html, "<span class=\"faster\">1.13x faster</span>"));
  CHECK(StrContains(html, "<tr><th>torch.compile</th><td><span class=\"num\">1.8036 "
                          "ms</span></td><td><span class=\"faster\">1.15x faster</span>"));
  CHECK(StrContains(html, "<tr><th>GPU-seconds</th><td>17.1 "));
  CHECK(StrContains(html, "<tr><th>GPU busy</th><td>45% "));
  // Faster than both PyTorch paths in its final run: the kernel is the one to deploy.
  CHECK(StrContains(html, "<p id=\"deploy\" class=\"deploy kernel\"><b>What to deploy:</b> "
                          "deploy the kernel: fastest by "));
  // The arithmetic-intensity roofline of the final run, from the job's figure.
  CHECK(StrContains(html, absl::StrFormat("<td colspan=\"2\">%.1f%% <small>(useful FLOPs",
                                          job->job.result().roofline_bound_pct())));
  CHECK(StrContains(html, "65.3% <small>(useful FLOPs"));
  // Round 1's 1.14x (its own measurement over the baseline run) and the final run's 1.13x
  // agree within 1%: no sentence about differing figures.
  CHECK(StrContains(html, "<title>round 1: 1.14x (3/3 correct)</title>"));
  CHECK_FALSE(StrContains(html, "class=\"differs\""));
  // The starting kernel was profiled, the best was not: one point on the H200's roofline.
  CHECK(StrContains(html, "Ceilings of the NVIDIA H200 from kagent's spec table: 4.80 TB/s DRAM"));
  CHECK(StrContains(html, "class=\"ptlabel\">start</text>"));
  CHECK_FALSE(StrContains(html, "class=\"ptlabel\">best</text>"));
  CHECK(StrContains(html, "<td class=\"CORRECT\">CORRECT</td><td><span class=\"num\">1.7869 "
                          "ms</span></td><td>58.0%</td>"));
  CHECK(StrContains(html, "<tr><th>created</th><td>2026-12-05 03:38:58 UTC</td></tr>"));
}

TEST_CASE("report: a GPU job recorded on the H200, slower than torch.compile, no counters") {
  auto job = report_testdata::Load("gpu_h200_square_slower");
  REQUIRE(job.ok());
  const std::string html = RenderHtmlReport(job->job, job->candidates, job->reflexions);
  CheckFinalRunTable(job->job, html);
  // 1.03x over the start, slower than eager and torch.compile: said so.
  CHECK(StrContains(html, "<span class=\"faster\">1.03x faster</span>"));
  CHECK(StrContains(html, "<tr><th>eager PyTorch</th><td><span class=\"num\">2.6776 "
                          "ms</span></td><td><span class=\"slower\">0.84x (1.19x "
                          "slower)</span></td></tr>"));
  CHECK(StrContains(html, "<tr><th>torch.compile</th><td><span class=\"num\">2.6790 "
                          "ms</span></td><td><span class=\"slower\">0.84x (1.19x "
                          "slower)</span></td></tr>"));
  CHECK(StrContains(html, "<tr><th>GPU-seconds</th><td>19.0 "));
  CHECK(StrContains(html, "<tr><th>GPU busy</th><td>52% "));
  // The start's profile failed ("no kernels captured") and no FLOPs came with the
  // signature: n/a everywhere a roofline figure would be, no chart.
  CHECK(StrContains(html,
                    "<tr><th>arithmetic-intensity roofline</th><td colspan=\"2\">n/a (the "
                    "signature gives no FLOPs and bytes)</td></tr>"));
  CHECK(StrContains(html,
                    "No roofline chart: no kernel of this job was profiled (no hardware counters "
                    "were collected)."));
  CHECK(StrContains(html, "<td class=\"CORRECT\">CORRECT</td><td><span class=\"num\">3.2790 "
                          "ms</span></td><td>n/a</td>"));
}

TEST_CASE("report: a GPU job recorded on the H200: a crashed candidate, best kernel slower") {
  auto job = report_testdata::Load("gpu_h200_small_k_crash");
  REQUIRE(job.ok());
  const std::string html = RenderHtmlReport(job->job, job->candidates, job->reflexions);
  CheckFinalRunTable(job->job, html);
  // In the final run the best kernel is 0.99x the start: slower, said so; round 1 had
  // measured 1.02x, and the report says which run each figure comes from.
  CHECK(StrContains(html, "<tr><th>starting kernel</th><td><span class=\"num\">0.8918 "
                          "ms</span></td><td><span class=\"slower\">0.99x (1.01x "
                          "slower)</span></td></tr>"));
  CHECK(StrContains(html,
                    "The chart's last point, 1.02x, comes from round 1's measurement and the "
                    "baseline run; the result table's 0.99x comes from the final run"));
  CHECK(StrContains(html, "<tr><th>GPU-seconds</th><td>85.0 "));
  CHECK(StrContains(html, "<tr><th>GPU busy</th><td>14% "));
  // The crashed candidate: a red CRASH with its error, no median, no roofline.
  CHECK(StrContains(html, "<td class=\"CRASH\">CRASH<br><small>gate trial 0: AcceleratorError"));
  CHECK(StrContains(html, "an illegal memory access was encountered"));
  CHECK(StrContains(html, "</small></td><td>n/a</td><td>n/a</td>"));
  CHECK(StrContains(html, ".CRASH,.TIMEOUT,.OOM,.REJECTED,.COMPILE_ERROR,.INFRA_ERROR{color:#d62728}"));
  CHECK(StrContains(html, "<title>round 1: 1.02x (2/3 correct)</title>"));
}

v1::Job FinalRun(double best_ms, double start_ms, double eager_ms, double compiled_ms) {
  v1::Job job;
  job.set_id("job-e1");
  job.mutable_problem()->set_name("relu");
  job.set_state(v1::JOB_STATE_DONE);
  v1::JobResult* r = job.mutable_result();
  r->set_best_candidate_id("job-e1-r1-w0");
  r->add_lineage("job-e1-c0");
  r->add_lineage("job-e1-r1-w0");
  v1::Measurement* m = r->mutable_best_measurement();
  m->set_gpu_name("NVIDIA H200");
  m->mutable_candidate()->set_median_ms(best_ms);
  m->mutable_reference_kernel()->set_median_ms(start_ms);
  m->mutable_eager()->set_median_ms(eager_ms);
  m->mutable_compiled()->set_median_ms(compiled_ms);
  return job;
}

TEST_CASE("report: slower reads as slower, a missing time as n/a") {
  v1::Job job = FinalRun(1.0, 2.0, 0.8, 0);
  job.mutable_config()->mutable_budget()->set_max_gpu_seconds(600);
  const std::string html = RenderHtmlReport(job, {}, {});
  CHECK(StrContains(html, "<tr><th>budget</th><td>600 GPU-seconds</td></tr>"));
  CHECK(StrContains(html, "<td><span class=\"faster\">2.00x faster</span>"));
  CHECK(StrContains(html,
                    "<tr><th>eager PyTorch</th><td><span class=\"num\">0.8000 "
                    "ms</span></td><td><span class=\"slower\">0.80x "
                    "(1.25x slower)</span></td></tr>"));
  CHECK(StrContains(html, "<tr><th>torch.compile</th><td>n/a</td><td>n/a</td></tr>"));
  CHECK(StrContains(
      html, "<tr><th>speed of light</th><td colspan=\"2\">n/a (the best kernel was not profiled)"));
  CHECK(StrContains(html, "<p>No rounds completed.</p>"));
  CHECK(StrContains(html, "No roofline chart: no kernel of this job was profiled"));
}

TEST_CASE("report: the best kernel is the starting kernel: no 0-ms start, no ratio to it") {
  v1::Job job = FinalRun(1.5, 0, 1.5, 1.2);
  job.mutable_result()->set_best_candidate_id("job-e1-c0");
  job.mutable_result()->clear_lineage();
  job.mutable_result()->add_lineage("job-e1-c0");
  job.mutable_result()->set_speedup_vs_start(1.0);
  const std::string html = RenderHtmlReport(job, {}, {});
  CHECK(StrContains(
      html, "<tr><th>starting kernel</th><td>the best kernel</td><td>the starting kernel itself"));
  CHECK(StrContains(html, "<td>1.00x (as fast)</td>"));
  CHECK(StrContains(html, "0.80x (1.25x slower)"));
  CHECK_FALSE(StrContains(html, "0.0000 ms"));

  // Another best kernel, but the final run did not time the start: the baseline run's
  // time, labelled as such.
  v1::Job other = FinalRun(1.0, 0, 1.5, 1.2);
  other.mutable_baseline()->mutable_candidate()->set_median_ms(3.0);
  const std::string h2 = RenderHtmlReport(other, {}, {});
  CHECK(StrContains(h2, "<span class=\"num\">3.0000 ms</span> <small>(baseline run)</small>"));
  CHECK(StrContains(h2, "3.00x faster</span> <small>(across two runs"));
}

TEST_CASE("report: a job without a result says so") {
  v1::Job job;
  job.set_id("job-e2");
  job.set_state(v1::JOB_STATE_ROUNDS);
  CHECK(StrContains(RenderHtmlReport(job, {}, {}), "<p>No result: the job has not finished.</p>"));
  job.set_state(v1::JOB_STATE_FAILED);
  job.set_error("no GPU worker");
  const std::string html = RenderHtmlReport(job, {}, {});
  CHECK(StrContains(html, "<p>No result: the job ended without a verified best kernel.</p>"));
  CHECK(StrContains(html, "<tr><th>stop reason</th><td>no GPU worker</td></tr>"));
  CHECK(StrContains(html, "<tr><th>state</th><td>FAILED</td></tr>"));
}

TEST_CASE("report: the configuration names an ablation arm and a shared memory") {
  v1::Job job;
  job.set_id("job-a1");
  job.set_state(v1::JOB_STATE_ROUNDS);
  const std::string plain = RenderHtmlReport(job, {}, {});
  CHECK_FALSE(StrContains(plain, "<th>ablation</th>"));
  CHECK_FALSE(StrContains(plain, "<th>reflexion memory</th>"));
  job.mutable_config()->set_ablation(v1::ABLATION_BLIND_SWEEP);
  job.mutable_config()->set_sweep_seed(5);
  job.mutable_config()->set_share_memory_across_jobs(true);
  const std::string html = RenderHtmlReport(job, {}, {});
  CHECK(StrContains(html, "<tr><th>ablation</th><td>BLIND_SWEEP (sweep seed 5): a "
                          "search-efficiency arm, not the full loop"));
  CHECK(StrContains(html, "<tr><th>reflexion memory</th><td>shared with the tenant's other jobs"));
}

TEST_CASE("report: the chart's figure and the table's say which run each comes from") {
  v1::Job job = FinalRun(1.0, 1.06, 1.2, 1.1);
  auto* t = job.mutable_result()->add_trajectory();
  t->set_round(1);
  t->set_best_speedup_vs_start(1.68);
  t->set_candidates(4);
  t->set_correct(3);
  const std::string html = RenderHtmlReport(job, {}, {});
  CHECK(StrContains(
      html,
      "The chart's last point, 1.68x, comes from round 1's measurement and the baseline "
      "run; the result table's 1.06x comes from the final run"));
  CHECK(StrContains(html, "<title>round 0: the starting kernel, 1.00x</title>"));
  CHECK(StrContains(html,
                    "<text x=\"48.0\" y=\"228\" class=\"tick\" text-anchor=\"middle\">0</text>"));
}

}  // namespace
}  // namespace kagent
