// The HTML report's figures and wording, on a GPU job built from the H200 case study
// (tools/testdata/report/gpu_matvec_h200), a job recorded on a CPU worker
// (tools/testdata/report/cpu_matvec_small) and small jobs made here for the edge cases.
// report_browser_test renders the same two fixtures in a headless browser.
#include "tools/report.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
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
  // The best kernel is the starting kernel: no ratio to itself, no 0-ms start.
  CHECK(StrContains(html, "<tr><th>starting kernel</th><td>the best kernel</td>"));
  CHECK_FALSE(StrContains(html, "0.00x"));
  CHECK_FALSE(StrContains(html, "0.0%"));
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
