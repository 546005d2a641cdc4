// The pure half of `kagent bench` (tools/bench.h): rows from jobs, the summary and the
// Markdown/JSON renderings (bench_runs.cc reads results.json back and merges runs;
// bench_chart.cc draws the SVG chart). No I/O and no server here; tools/bench.cc runs the
// suite and writes the files.
#include "tools/bench.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernel_model/gpu_spec.h"
#include "kernel_model/op_recognition.h"
#include "kernel_model/recommendation.h"
#include "tools/bench_curves.h"
#include "tools/enum_names.h"
#include "tools/report.h"

namespace kagent::cli {
namespace {

std::string Ms(double v) { return v > 0 ? absl::StrFormat("%.3f", v) : "-"; }
std::string X(double v) { return v > 0 ? absl::StrFormat("%.2fx", v) : "-"; }
std::string Pct(double v) { return v > 0 ? absl::StrFormat("%.0f%%", v) : "-"; }
double Ratio(double num, double den) { return num > 0 && den > 0 ? num / den : 0; }


}  // namespace

std::string MarkdownCell(std::string s) {
  for (char& c : s) {
    if (c == '|' || c == '\n' || c == '\r') c = ' ';
  }
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

BenchRow RowFromJob(const std::string& name, const v1::Job& job) {
  BenchRow r;
  r.name = name;
  r.job_id = job.id();
  r.state = StateName(job.state());
  r.error = job.error();
  r.rounds = job.current_round();
  r.gpu_seconds = job.gpu_seconds_used();
  r.gpu_busy_seconds = job.gpu_busy_seconds_used();
  r.candidates_measured = job.candidates_measured();
  r.variants_screened = job.variants_screened();
  const v1::JobResult& res = job.result();
  r.stop_reason = res.stop_reason();
  const v1::Measurement& best = res.best_measurement();
  const v1::Measurement& base = job.baseline();
  r.cpu_worker = MeasuredOnCpuWorker(best) || MeasuredOnCpuWorker(base);
  if (!res.best_candidate_id().empty() && best.candidate().median_ms() > 0) {
    r.best_ms = best.candidate().median_ms();
    r.start_ms = best.reference_kernel().median_ms() > 0 ? best.reference_kernel().median_ms()
                                                         : base.candidate().median_ms();
    r.eager_ms = best.eager().median_ms() > 0 ? best.eager().median_ms() : base.eager().median_ms();
    r.compile_ms =
        best.compiled().median_ms() > 0 ? best.compiled().median_ms() : base.compiled().median_ms();
    r.speedup_vs_start = res.speedup_vs_start() > 0 ? res.speedup_vs_start() : Ratio(r.start_ms, r.best_ms);
    r.speedup_vs_eager = res.speedup_vs_eager() > 0 ? res.speedup_vs_eager() : Ratio(r.eager_ms, r.best_ms);
    r.speedup_vs_compile =
        res.speedup_vs_compile() > 0 ? res.speedup_vs_compile() : Ratio(r.compile_ms, r.best_ms);
    r.roofline_pct = res.roofline_efficiency_pct();
    r.ai_roofline_pct = res.roofline_bound_pct();
  } else if (base.candidate().median_ms() > 0) {
    // No improved kernel: the starting kernel is the best there is.
    r.start_ms = r.best_ms = base.candidate().median_ms();
    r.eager_ms = base.eager().median_ms();
    r.compile_ms = base.compiled().median_ms();
    r.speedup_vs_start = 1.0;
    r.speedup_vs_eager = Ratio(r.eager_ms, r.best_ms);
    r.speedup_vs_compile = Ratio(r.compile_ms, r.best_ms);
  } else {
    r.eager_ms = base.eager().median_ms();
    r.compile_ms = base.compiled().median_ms();
  }
  std::vector<v1::RoundSummary> rounds(res.trajectory().begin(), res.trajectory().end());
  std::sort(rounds.begin(), rounds.end(), [](const v1::RoundSummary& a, const v1::RoundSummary& b) {
    return a.round() < b.round();
  });
  for (const auto& t : rounds) {
    r.trajectory.emplace_back(t.round(), t.best_speedup_vs_start());
    if (t.gpu_seconds_used() > 0) {
      r.gpu_trajectory.emplace_back(t.gpu_seconds_used(), t.best_speedup_vs_start());
    }
  }
  std::sort(r.trajectory.begin(), r.trajectory.end());
  r.max_rounds = job.config().budget().max_rounds();
  r.op_class = res.op_class();
  // A job that did not finish (or stored before JobResult.op_class) names no class: the
  // class of a stored op signature, recognized as the coordinator does.
  for (const v1::OpSignature* sig : {&base.op_signature(), &best.op_signature()}) {
    if (sig->ops_size() == 0) continue;
    absl::StatusOr<RecognizedOp> op = RecognizeOp(*sig);
    if (!op.ok()) continue;
    if (r.op_class.empty() && op->op_class != "unknown") r.op_class = op->op_class;
    if (r.conv_class.empty()) r.conv_class = ConvClass(*op);
  }
  if (job.state() == v1::JOB_STATE_DONE && !res.best_candidate_id().empty()) {
    r.deploy = DeployKey(RecommendationOf(res).deploy());
  }
  return r;
}

double GeometricMean(const std::vector<double>& values) {
  double log_sum = 0;
  int n = 0;
  for (double v : values) {
    if (v > 0 && std::isfinite(v)) {
      log_sum += std::log(v);
      ++n;
    }
  }
  return n == 0 ? 0 : std::exp(log_sum / n);
}

double CandidatesPerGpuMinute(int64_t candidates, double gpu_seconds) {
  return candidates > 0 && gpu_seconds > 0 ? static_cast<double>(candidates) / (gpu_seconds / 60)
                                           : 0;
}

double GpuBusyFraction(double busy_seconds, double held_seconds) {
  return busy_seconds > 0 && held_seconds > 0 ? busy_seconds / held_seconds : 0;
}

std::string FormatPerGpuMinute(double v) { return v > 0 ? absl::StrFormat("%.2f", v) : "-"; }
std::string FormatBusyFraction(double v) {
  return v > 0 ? absl::StrFormat("%.0f%%", 100 * v) : "n/a";
}

// "Clearly faster": beyond the run-to-run noise of a median (docs/measurement.md).
constexpr double kClearMargin = 1.02;

BenchSummary Summarize(const std::vector<BenchRow>& rows) {
  BenchSummary s;
  s.problems = static_cast<int>(rows.size());
  std::vector<double> vs_start, vs_eager, vs_compile;
  double roof_sum = 0, ai_sum = 0;
  double busy_held = 0;  // the held seconds of the rows that report busy time
  int roof_n = 0, ai_n = 0;
  for (const auto& r : rows) {
    if (r.state == "FAILED" || r.state == "CANCELLED" || r.state == "SUBMIT_ERROR") ++s.failed;
    s.gpu_seconds += r.gpu_seconds;
    s.candidates_measured += r.candidates_measured;
    s.variants_screened += r.variants_screened;
    if (r.cpu_worker) ++s.cpu_worker_rows;
    if (r.gpu_busy_seconds > 0 && r.gpu_seconds > 0) {
      s.gpu_busy_seconds += r.gpu_busy_seconds;
      busy_held += r.gpu_seconds;
      ++s.busy_rows;
    }
    // An unfinished job's "best" is whatever its last round left (often the start): its
    // ratios would mix a partial search into the suite's figures, so only finished jobs
    // count.
    if (r.state != "DONE") continue;
    ++s.done;
    vs_start.push_back(r.speedup_vs_start);
    vs_eager.push_back(r.speedup_vs_eager);
    vs_compile.push_back(r.speedup_vs_compile);
    if (r.speedup_vs_compile > 0) {
      ++s.compared_with_compile;
      if (r.speedup_vs_compile > 1.0) ++s.faster_than_compile;
      if (r.speedup_vs_compile > kClearMargin) ++s.clearly_faster_than_compile;
    }
    if (r.roofline_pct > 0) {
      roof_sum += r.roofline_pct;
      ++roof_n;
    }
    if (r.ai_roofline_pct > 0) {
      ai_sum += r.ai_roofline_pct;
      ++ai_n;
    }
  }
  s.geomean_vs_start = GeometricMean(vs_start);
  s.geomean_vs_eager = GeometricMean(vs_eager);
  s.geomean_vs_compile = GeometricMean(vs_compile);
  s.mean_roofline_pct = roof_n > 0 ? roof_sum / roof_n : 0;
  s.mean_ai_roofline_pct = ai_n > 0 ? ai_sum / ai_n : 0;
  s.candidates_per_gpu_minute = CandidatesPerGpuMinute(s.candidates_measured, s.gpu_seconds);
  s.gpu_busy_fraction = GpuBusyFraction(s.gpu_busy_seconds, busy_held);
  s.coverage = Coverage(rows);
  s.by_op_class = CoverageByOpClass(rows);
  s.by_conv_class = CoverageByConvClass(rows);
  return s;
}

std::vector<double> SuiteTrajectory(const std::vector<BenchRow>& rows) {
  int max_round = 0;
  for (const auto& r : rows) {
    for (const auto& [round, sp] : r.trajectory) max_round = std::max(max_round, round);
  }
  std::vector<double> out;
  if (rows.empty()) return out;
  for (int round = 0; round <= max_round; ++round) {
    std::vector<double> at;
    for (const auto& r : rows) {
      double v = 1.0;
      for (const auto& [rr, sp] : r.trajectory) {
        if (rr <= round && sp > 0) v = sp;
      }
      at.push_back(v);
    }
    out.push_back(GeometricMean(at));
  }
  return out;
}

std::string RenderBenchMarkdown(const std::vector<BenchRow>& rows, const BenchSummary& s,
                                const std::string& header) {
  std::string o = absl::StrCat("# kagent bench results\n\n", header.empty() ? "" : header + "\n\n");
  o += "Times are medians in ms. The best kernel, the starting kernel, eager and torch.compile "
       "come from one final run that timed them side by side.\n\n";
  const bool with_run =
      std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return !r.run.empty(); });
  const std::string held = HeldTimeUnit(s);  // "GPU", or "worker" on the CPU worker
  o += absl::StrCat("| problem | ", with_run ? "run | " : "",
                    "state | op class | start ms | eager ms | compile ms | best ms | vs start | "
                    "vs eager | vs compile | deploy | roofline | AI roofline | rounds | ", held,
                    "-s | cand/", held, "-min | GPU busy | variants | notes |\n");
  o += absl::StrCat("|---|", with_run ? "---|" : "",
                    "---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
                    "---|\n");
  for (const auto& r : rows) {
    std::string notes = !r.error.empty() ? r.error : r.stop_reason;
    std::string first = with_run ? absl::StrCat(MarkdownCell(r.name), " | ", MarkdownCell(r.run))
                                 : MarkdownCell(r.name);
    o += absl::StrFormat(
        "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %.1f | %s | %s | "
        "%d | %s |\n",
        first, r.state, r.op_class.empty() ? "-" : MarkdownCell(r.op_class), Ms(r.start_ms),
        Ms(r.eager_ms), Ms(r.compile_ms), Ms(r.best_ms), X(r.speedup_vs_start),
        X(r.speedup_vs_eager), X(r.speedup_vs_compile),
        r.deploy.empty() ? "-" : MarkdownCell(r.deploy),
        Pct(r.roofline_pct), Pct(r.ai_roofline_pct), r.rounds, r.gpu_seconds,
        FormatPerGpuMinute(CandidatesPerGpuMinute(r.candidates_measured, r.gpu_seconds)),
        FormatBusyFraction(GpuBusyFraction(r.gpu_busy_seconds, r.gpu_seconds)),
        r.variants_screened, MarkdownCell(notes));
  }
  o += "\n## Summary\n\n";
  o += absl::StrFormat("- problems: %d (%d done, %d failed or not submitted)\n", s.problems, s.done,
                       s.failed);
  if (s.done < s.problems) {
    o += absl::StrFormat("- the means and counts below are over the %d finished (DONE) problems; "
                         "GPU time is over all\n", s.done);
  }
  o += absl::StrFormat("- geometric-mean speedup over the starting kernels: %s\n", X(s.geomean_vs_start));
  o += absl::StrFormat("- geometric-mean speedup over eager PyTorch: %s\n", X(s.geomean_vs_eager));
  o += absl::StrFormat("- geometric-mean speedup over torch.compile: %s\n", X(s.geomean_vs_compile));
  auto share = [&](int n) {
    return s.compared_with_compile > 0
               ? absl::StrFormat("%.0f%%", 100.0 * n / s.compared_with_compile)
               : std::string("-");
  };
  o += absl::StrFormat("- faster than torch.compile: %d of %d (%s); by more than 2%%: %d (%s)\n",
                       s.faster_than_compile, s.compared_with_compile,
                       share(s.faster_than_compile), s.clearly_faster_than_compile,
                       share(s.clearly_faster_than_compile));
  o += absl::StrFormat("- mean roofline efficiency of the final kernels: %s\n", Pct(s.mean_roofline_pct));
  o += absl::StrFormat("- mean arithmetic-intensity roofline of the final kernels (where known): %s\n",
                       Pct(s.mean_ai_roofline_pct));
  if (held == "worker") {
    o += absl::StrFormat(
        "- worker time: %.1f worker-s (the CPU worker's slot, Triton's interpreter; no GPU)\n",
        s.gpu_seconds);
  } else {
    o += absl::StrFormat("- GPU time: %.1f GPU-s\n", s.gpu_seconds);
  }
  o += absl::StrFormat("- candidates measured: %d, %s per %s-minute\n", s.candidates_measured,
                       FormatPerGpuMinute(s.candidates_per_gpu_minute), held);
  o += absl::StrFormat("- GPU busy (kernels running, NVML) of the GPU time held: %s%s\n",
                       FormatBusyFraction(s.gpu_busy_fraction),
                       s.busy_rows == 0
                           ? " (no problem reported busy time: CPU workers or no NVML)"
                           : absl::StrFormat(" (over the %d problems that report it)", s.busy_rows));
  o += absl::StrFormat("- kernel variants screened before measuring: %d\n", s.variants_screened);
  o += RenderCoverageMarkdown(s.coverage, s.by_op_class, s.by_conv_class);
  o += RenderStopRulesMarkdown(AccountStopRules(rows));
  o += "\n![best-so-far speedup against rounds](trajectory.svg)\n";
  o += "\n![best-so-far speedup against GPU-seconds](gpu_curve.svg)\n";
  return o;
}

std::string RenderBenchJson(const std::vector<BenchRow>& rows, const BenchSummary& s,
                            const std::string& settings_json) {
  nlohmann::json j;
  j["settings"] = nlohmann::json::parse(settings_json.empty() ? "{}" : settings_json, nullptr,
                                        /*allow_exceptions=*/false);
  if (j["settings"].is_discarded()) j["settings"] = nlohmann::json::object();
  j["summary"] = {{"problems", s.problems},
                  {"done", s.done},
                  {"failed", s.failed},
                  {"geomean_speedup_vs_start", s.geomean_vs_start},
                  {"geomean_speedup_vs_eager", s.geomean_vs_eager},
                  {"geomean_speedup_vs_compile", s.geomean_vs_compile},
                  {"faster_than_compile", s.faster_than_compile},
                  {"clearly_faster_than_compile", s.clearly_faster_than_compile},
                  {"compared_with_compile", s.compared_with_compile},
                  {"mean_roofline_efficiency_pct", s.mean_roofline_pct},
                  {"mean_roofline_bound_pct", s.mean_ai_roofline_pct},
                  {"gpu_seconds", s.gpu_seconds},
                  {"candidates_measured", s.candidates_measured},
                  {"candidates_per_gpu_minute", s.candidates_per_gpu_minute},
                  {"gpu_busy_seconds", s.gpu_busy_seconds},
                  {"gpu_busy_fraction", s.gpu_busy_fraction > 0 ? nlohmann::json(s.gpu_busy_fraction)
                                                                : nlohmann::json(nullptr)},
                  {"variants_screened", s.variants_screened}};
  // KernelBench's figures (tools/bench_coverage.cc), derived from the rows.
  auto coverage = [](const BenchCoverage& c) {
    nlohmann::json fast = nlohmann::json::object();
    for (int i = 0; i < kFastPCount; ++i) fast[absl::StrFormat("%g", kFastP[i])] = c.fast_p[i];
    nlohmann::json j = {{"problems", c.problems},
                        {"verified", c.verified},
                        {"coverage", c.problems > 0 ? static_cast<double>(c.verified) / c.problems : 0},
                        {"geomean_speedup_vs_compile", c.geomean_vs_compile},
                        {"geomean_speedup_vs_best_baseline", c.geomean_vs_baseline},
                        {"fast_p", fast},
                        {"fell_back_to_pytorch", c.fell_back}};
    if (!c.op_class.empty()) j["op_class"] = c.op_class;
    return j;
  };
  j["summary"]["kernelbench"] = coverage(s.coverage);
  nlohmann::json classes = nlohmann::json::array();
  for (const BenchCoverage& c : s.by_op_class) classes.push_back(coverage(c));
  j["summary"]["by_op_class"] = classes;
  nlohmann::json conv_classes = nlohmann::json::array();
  for (const BenchCoverage& c : s.by_conv_class) {
    nlohmann::json one = coverage(c);
    one.erase("op_class");
    one["conv_class"] = c.op_class;
    conv_classes.push_back(one);
  }
  j["summary"]["by_conv_class"] = conv_classes;
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json traj = nlohmann::json::array();
    for (const auto& [round, sp] : r.trajectory) {
      traj.push_back({{"round", round}, {"best_speedup_vs_start", sp}});
    }
    nlohmann::json gpu_traj = nlohmann::json::array();
    for (const auto& [gpu_s, sp] : r.gpu_trajectory) {
      gpu_traj.push_back({{"gpu_seconds", gpu_s}, {"best_speedup_vs_start", sp}});
    }
    const double busy = GpuBusyFraction(r.gpu_busy_seconds, r.gpu_seconds);  // null: n/a
    arr.push_back({{"name", r.name},
                   {"run", r.run},
                   {"job_id", r.job_id},
                   {"state", r.state},
                   {"error", r.error},
                   {"stop_reason", r.stop_reason},
                   {"start_ms", r.start_ms},
                   {"eager_ms", r.eager_ms},
                   {"compile_ms", r.compile_ms},
                   {"best_ms", r.best_ms},
                   {"speedup_vs_start", r.speedup_vs_start},
                   {"speedup_vs_eager", r.speedup_vs_eager},
                   {"speedup_vs_compile", r.speedup_vs_compile},
                   {"roofline_efficiency_pct", r.roofline_pct},
                   {"roofline_bound_pct", r.ai_roofline_pct},
                   {"rounds", r.rounds},
                   {"gpu_seconds", r.gpu_seconds},
                   {"gpu_busy_seconds", r.gpu_busy_seconds},
                   {"cpu_worker", r.cpu_worker},
                   {"candidates_measured", r.candidates_measured},
                   {"variants_screened", r.variants_screened},
                   {"candidates_per_gpu_minute",
                    CandidatesPerGpuMinute(r.candidates_measured, r.gpu_seconds)},
                   {"gpu_busy_fraction", busy > 0 ? nlohmann::json(busy) : nlohmann::json(nullptr)},
                   {"op_class", r.op_class},
                   {"conv_class", r.conv_class},
                   {"deploy", r.deploy},
                   {"speedup_vs_best_baseline", SpeedupVsBestBaseline(r)},
                   {"trajectory", traj},
                   {"gpu_trajectory", gpu_traj},
                   {"max_rounds", r.max_rounds}});
  }
  j["problems"] = arr;
  j["suite_trajectory"] = SuiteTrajectory(rows);
  nlohmann::json gpu_curve = nlohmann::json::array();
  for (const auto& [x, y] : SuiteGpuCurve(rows)) {
    gpu_curve.push_back({{"gpu_seconds", x}, {"best_speedup_vs_start", y}});
  }
  j["suite_gpu_curve"] = gpu_curve;
  j["stop_rules"] = nlohmann::json::parse(StopRulesJson(AccountStopRules(rows)));
  return j.dump(2) + "\n";
}

std::string FormatMs(double v) { return Ms(v); }

std::string HeldTimeUnit(const BenchSummary& s) {
  return s.problems > 0 && s.cpu_worker_rows == s.problems ? "worker" : "GPU";
}

std::string ThroughputLine(const BenchSummary& s) {
  if (HeldTimeUnit(s) == "worker") {
    return absl::StrFormat(
        "%d candidates measured in %.1f worker-s on the CPU worker (Triton's interpreter, no "
        "GPU): %s per worker-minute; %d variants screened",
        s.candidates_measured, s.gpu_seconds, FormatPerGpuMinute(s.candidates_per_gpu_minute),
        s.variants_screened);
  }
  return absl::StrFormat(
      "%d candidates measured in %.1f GPU-s: %s per GPU-minute; GPU busy %s%s; %d variants "
      "screened%s",
      s.candidates_measured, s.gpu_seconds, FormatPerGpuMinute(s.candidates_per_gpu_minute),
      FormatBusyFraction(s.gpu_busy_fraction),
      s.busy_rows > 0 ? absl::StrFormat(" (%d problems with NVML figures)", s.busy_rows) : "",
      s.variants_screened,
      s.cpu_worker_rows > 0
          ? absl::StrFormat(" (%d problem%s on the CPU worker: its slot's seconds, not a GPU's)",
                            s.cpu_worker_rows, s.cpu_worker_rows == 1 ? "" : "s")
          : "");
}

std::string SummaryLine(const BenchSummary& s) {
  return absl::StrFormat(
      "geometric mean %s vs start, %s vs eager, %s vs torch.compile; faster than "
      "torch.compile on %d of %d (by more than 2%%: %d)",
      X(s.geomean_vs_start), X(s.geomean_vs_eager), X(s.geomean_vs_compile),
      s.faster_than_compile, s.compared_with_compile, s.clearly_faster_than_compile);
}

}  // namespace kagent::cli
