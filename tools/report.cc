#include "tools/report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "kernel_model/gpu_spec.h"
#include "kernel_model/op_recognition.h"
#include "kernel_model/recommendation.h"
#include "kernel_model/roofline.h"
#include "kernel_model/speedup_text.h"
#include "tools/bench.h"
#include "tools/enum_names.h"
#include "tools/report_charts.h"

namespace kagent {
namespace {

// The harness names the device "cpu" in a measurement it ran under Triton's interpreter
// on a CPU worker (python/kagent_harness/measure.py; the coordinator reads it the same
// way, services/coordinator/job_run_internal.h).

std::string Ms(double ms) {
  return ms > 0 ? absl::StrFormat("<span class=\"num\">%.4f ms</span>", ms) : "n/a";
}
std::string Pct(double pct) { return pct > 0 ? absl::StrFormat("%.1f%%", pct) : "n/a"; }

// The best kernel against another time of the same run, as every surface writes it
// (kernel_model/speedup_text.h): "2.01x faster", "0.80x (1.25x slower)", "1.00x (as
// fast)", coloured; "n/a" when either time is missing.
std::string Versus(double other_ms, double best_ms) {
  if (other_ms <= 0 || best_ms <= 0) return "n/a";
  const double r = other_ms / best_ms;
  const std::string text = FormatSpeedup(r);
  if (absl::EndsWith(text, "(as fast)")) return text;
  return absl::StrCat("<span class=\"", r > 1 ? "faster" : "slower", "\">", text, "</span>");
}

// An id on one line, in monospace, cut with an ellipsis when long; the whole id in its
// title. A candidate's id is shown without its job's id and dash ("r2-w0" for
// "job-1a2b-r2-w0"), as the page's header names the job.
std::string Id(const std::string& id, const std::string& job_id = "") {
  if (id.empty()) return "";
  absl::string_view shown = id;
  if (!job_id.empty() && absl::ConsumePrefix(&shown, job_id + "-") && shown.empty()) shown = id;
  return absl::StrCat("<span class=\"id\" title=\"", HtmlEscape(id), "\">",
                      HtmlEscape(std::string(shown)), "</span>");
}

std::string Time(const google::protobuf::Timestamp& t) {
  if (t.seconds() <= 0) return "n/a";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixSeconds(t.seconds()),
                          absl::UTCTimeZone());
}

std::string Row(const std::string& th, const std::string& td) {
  return absl::StrCat("<tr><th>", th, "</th><td>", td, "</td></tr>");
}

std::string Tensor(const v1::TensorInfo& t) {
  return absl::StrCat(HtmlEscape(t.dtype()), "[", absl::StrJoin(t.shape(), ", "), "]");
}

std::string Bytes(double b) {
  if (b >= 1 << 30) return absl::StrFormat("%.2f GiB", b / (1 << 30));
  if (b >= 1 << 20) return absl::StrFormat("%.2f MiB", b / (1 << 20));
  return absl::StrFormat("%.0f B", b);
}

// The problem: name, op class, the reference's aten ops with their shapes, the work.
std::string ProblemSection(const v1::Job& job, const v1::OpSignature& sig) {
  std::string h = "<h2>Problem</h2><table>";
  // The stored measurements carry the harness's signature; the class is recognized here
  // as the coordinator does (kernel_model/op_recognition.h).
  std::string op_class = sig.op_class(), described;
  if (sig.ops_size() > 0) {
    absl::StatusOr<RecognizedOp> op = RecognizeOp(sig);
    if (op.ok()) {
      if (op_class.empty()) op_class = op->op_class;
      described = DescribeOp(*op);
    }
  }
  absl::StrAppend(
      &h, Row("name", HtmlEscape(job.problem().name())),
      Row("op class",
          op_class.empty()
              ? "n/a (not recognized)"
              : absl::StrCat(
                    HtmlEscape(op_class),
                    described.empty() ? "" : " <small>(" + HtmlEscape(described) + ")</small>")));
  std::string ops;
  const int shown = std::min(sig.ops_size(), 8);
  for (int i = 0; i < shown; ++i) {
    const v1::OpRecord& op = sig.ops(i);
    std::vector<std::string> in, out;
    for (const auto& t : op.inputs()) in.push_back(Tensor(t));
    for (const auto& t : op.outputs()) out.push_back(Tensor(t));
    absl::StrAppend(&ops, "<code>", HtmlEscape(op.op()), "(", absl::StrJoin(in, ", "), ") &rarr; ",
                    absl::StrJoin(out, ", "), "</code><br>");
  }
  if (sig.ops_size() > shown) absl::StrAppend(&ops, "and ", sig.ops_size() - shown, " more ops");
  absl::StrAppend(&h, Row("reference ops", ops.empty() ? "n/a (no op signature recorded)" : ops));
  absl::StrAppend(
      &h, Row("work",
              sig.flops() > 0 && sig.min_bytes() > 0
                  ? absl::StrFormat("%.4g FLOP, %s moved at least (%.3g FLOP/byte)", sig.flops(),
                                    Bytes(sig.min_bytes()), sig.flops() / sig.min_bytes())
                  : std::string("n/a (the signature gives no FLOPs and bytes)")));
  absl::StrAppend(&h, "</table>");
  return h;
}

template <typename T>
std::string OrDefault(bool has, T value) {
  return has ? absl::StrCat(value) : std::string("server default");
}

std::string ConfigSection(const v1::Job& job, bool cpu) {
  const v1::JobConfig& c = job.config();
  const v1::Budget& b = c.budget();
  std::string h = "<h2>Configuration</h2><table>";
  std::string strategy = c.strategy() == v1::SEARCH_STRATEGY_GREEDY ? "greedy"
                         : c.strategy() == v1::SEARCH_STRATEGY_BEAM ? "beam"
                                                                    : "server default (beam)";
  std::string budget;
  if (b.has_max_wall_seconds())
    absl::StrAppend(&budget, absl::StrFormat("%.0f s of wall time; ", b.max_wall_seconds()));
  if (b.has_max_gpu_seconds())
    absl::StrAppend(
        &budget, absl::StrFormat("%.0f %s-seconds; ", b.max_gpu_seconds(), cpu ? "worker" : "GPU"));
  if (b.has_max_llm_tokens()) absl::StrAppend(&budget, b.max_llm_tokens(), " LLM tokens; ");
  if (b.has_max_llm_cost_usd())
    absl::StrAppend(&budget, absl::StrFormat("$%.2f of LLM calls; ", b.max_llm_cost_usd()));
  std::string tol =
      job.problem().has_atol() || job.problem().has_rtol()
          ? absl::StrCat("atol ",
                         job.problem().has_atol() ? absl::StrCat(job.problem().atol()) : "default",
                         ", rtol ",
                         job.problem().has_rtol() ? absl::StrCat(job.problem().rtol()) : "default")
          : std::string("per-dtype defaults (fp32 1e-4, fp16/bf16 1e-2)");
  const v1::CorrectnessDetails& applied = job.result().best_measurement().correctness();
  if (applied.atol() > 0 || applied.rtol() > 0) {
    absl::StrAppend(&tol, absl::StrFormat("; the final run applied atol %g, rtol %g",
                                          applied.atol(), applied.rtol()));
  }
  absl::StrAppend(
      &h, Row("brain", c.brain().empty() ? "heuristic (default)" : HtmlEscape(c.brain())),
      Row("strategy", strategy),
      Row("rounds", absl::StrCat(OrDefault(b.has_max_rounds(), b.max_rounds()), " at most; ",
                                 job.current_round(), " run")),
      Row("beam width (kernels kept a round)", OrDefault(c.has_beam_width(), c.beam_width())),
      Row("fixes per kernel", OrDefault(c.has_fixes_per_kernel(), c.fixes_per_kernel())),
      Row("plateau rounds", OrDefault(c.has_plateau_rounds(), c.plateau_rounds())),
      Row("target efficiency",
          c.has_target_efficiency_pct()
              ? absl::StrFormat("%.0f%% of the roofline", c.target_efficiency_pct())
              : "server default"),
      Row("budget", budget.empty() ? "server defaults" : budget.substr(0, budget.size() - 2)),
      Row("tolerances", tol),
      Row("extra shape sets", absl::StrCat(job.problem().extra_shapes_size())));
  if (c.avoid_patterns_size() > 0) {
    absl::StrAppend(&h,
                    Row("avoided patterns", HtmlEscape(absl::StrJoin(c.avoid_patterns(), ", "))));
  }
  if (c.ablation() != v1::ABLATION_NONE) {
    std::string arm = AblationName(c.ablation());
    if (c.ablation() == v1::ABLATION_BLIND_SWEEP) {
      absl::StrAppend(&arm, " (sweep seed ", c.sweep_seed(), ")");
    }
    absl::StrAppend(&h, Row("ablation", absl::StrCat(HtmlEscape(arm),
                                                     ": a search-efficiency arm, not the full "
                                                     "loop (docs/loop.md, Ablations)")));
  }
  if (c.share_memory_across_jobs()) {
    absl::StrAppend(&h, Row("reflexion memory", "shared with the tenant's other jobs on this op "
                                                "class and GPU architecture"));
  }
  absl::StrAppend(&h, "</table>");
  return h;
}

// The job's counters. On a CPU worker nothing is a GPU: the held time is the worker's.
std::string CountersTable(const v1::Job& job, bool cpu, const std::string& device) {
  const v1::JobResult& r = job.result();
  const std::string unit = cpu ? "worker" : "GPU";
  std::string h = "<table>";
  absl::StrAppend(
      &h,
      Row("state", std::string(absl::StripPrefix(v1::JobState_Name(job.state()), "JOB_STATE_"))),
      Row("stop reason", HtmlEscape(job.error().empty() ? r.stop_reason() : job.error())),
      Row("created", Time(job.created_at())), Row("last update", Time(job.updated_at())),
      Row("device", device.empty() ? "n/a" : HtmlEscape(device)),
      Row(absl::StrCat(unit, "-seconds"),
          absl::StrFormat("%.1f <small>(%s)</small>", job.gpu_seconds_used(),
                          cpu ? "time the job held the CPU worker's slot; no GPU was used"
                              : "time the job held a GPU")),
      Row("GPU busy",
          cpu ? "n/a (no GPU)"
          : job.gpu_busy_seconds_used() > 0
              ? absl::StrCat(cli::FormatBusyFraction(cli::GpuBusyFraction(
                                 job.gpu_busy_seconds_used(), job.gpu_seconds_used())),
                             " <small>(of the GPU time held, kernels running per NVML)</small>")
              : "n/a (no NVML figure from the worker)"),
      Row("candidates measured",
          absl::StrCat(job.candidates_measured(), " (",
                       cli::FormatPerGpuMinute(cli::CandidatesPerGpuMinute(
                           job.candidates_measured(), job.gpu_seconds_used())),
                       " per ", unit, "-minute)")),
      Row("variants screened", absl::StrCat(job.variants_screened())));
  if (job.llm_tokens_used() > 0) {
    absl::StrAppend(&h, Row("LLM", absl::StrFormat("%d tokens, $%.4f", job.llm_tokens_used(),
                                                   job.llm_cost_usd())));
  }
  absl::StrAppend(&h, "</table>");
  return h;
}

// The result table: every time and every ratio from the final run (best_measurement),
// which timed the best kernel beside the starting kernel, eager and torch.compile.
std::string ResultSection(const v1::Job& job, const std::string& start_id, bool cpu) {
  const v1::JobResult& r = job.result();
  const v1::Measurement& fin = r.best_measurement();
  const double best = fin.candidate().median_ms();
  std::string h = "<h2>Result</h2>";
  if (r.best_candidate_id().empty()) {
    const bool ended = job.state() == v1::JOB_STATE_DONE || job.state() == v1::JOB_STATE_FAILED ||
                       job.state() == v1::JOB_STATE_CANCELLED;
    return absl::StrCat(h, "<p>No result: the job ",
                        ended ? "ended without a verified best kernel" : "has not finished",
                        ".</p>");
  }
  const v1::Recommendation rec = RecommendationOf(r);
  if (rec.deploy() != v1::DEPLOY_UNSPECIFIED) {
    absl::StrAppend(&h, "<p id=\"deploy\" class=\"deploy ",
                    KeepsPyTorch(rec.deploy()) ? "keep" : "kernel", "\"><b>What to deploy:</b> ",
                    HtmlEscape(rec.summary()), "</p>");
  }
  absl::StrAppend(
      &h,
      "<p class=\"note\">Every time and ratio in this table comes from one run, the final "
      "verification run, which timed the best kernel, the starting kernel, eager PyTorch and "
      "torch.compile side by side",
      cpu ? " (on the CPU worker: interpreter times)" : "", ".</p>");
  absl::StrAppend(
      &h,
      "<div class=\"scroll\"><table><tr><th></th><th>median</th><th>the best kernel is</th></tr>");
  absl::StrAppend(&h, "<tr><th>best kernel ", Id(r.best_candidate_id(), job.id()), "</th><td>",
                  Ms(best), "</td><td></td></tr>");
  std::string start_ms = Ms(fin.reference_kernel().median_ms());
  std::string start_vs = Versus(fin.reference_kernel().median_ms(), best);
  if (fin.reference_kernel().median_ms() <= 0) {
    if (!start_id.empty() && start_id == r.best_candidate_id()) {
      start_ms = "the best kernel";
      start_vs = "the starting kernel itself: no other kernel was faster";
    } else if (job.baseline().candidate().median_ms() > 0) {
      start_ms = absl::StrCat(Ms(job.baseline().candidate().median_ms()),
                              " <small>(baseline run)</small>");
      start_vs = absl::StrCat(
          Versus(job.baseline().candidate().median_ms(), best),
          " <small>(across two runs: the final run did not time the starting kernel)</small>");
    }
  }
  absl::StrAppend(&h, "<tr><th>starting kernel</th><td>", start_ms, "</td><td>", start_vs,
                  "</td></tr>");
  absl::StrAppend(&h, "<tr><th>eager PyTorch</th><td>", Ms(fin.eager().median_ms()), "</td><td>",
                  Versus(fin.eager().median_ms(), best), "</td></tr>");
  absl::StrAppend(&h, "<tr><th>torch.compile</th><td>", Ms(fin.compiled().median_ms()), "</td><td>",
                  Versus(fin.compiled().median_ms(), best), "</td></tr>");
  const std::string no_counters =
      cpu ? "n/a (no hardware counters on a CPU worker)" : "n/a (the best kernel was not profiled)";
  absl::StrAppend(
      &h, "<tr><th>arithmetic-intensity roofline</th><td colspan=\"2\">",
      r.roofline_bound_pct() > 0
          ? absl::StrFormat("%.1f%% <small>(useful FLOPs and bytes over the final run's time, "
                            "against the roofline at the op's intensity)</small>",
                            r.roofline_bound_pct())
          : std::string(cpu ? "n/a (no GPU)" : "n/a (the signature gives no FLOPs and bytes)"),
      "</td></tr>");
  absl::StrAppend(
      &h, "<tr><th>speed of light</th><td colspan=\"2\">",
      r.roofline_efficiency_pct() > 0
          ? absl::StrFormat("%.1f%% <small>(the larger of compute and memory SOL, from the best "
                            "kernel's profile)</small>",
                            r.roofline_efficiency_pct())
          : no_counters,
      "</td></tr></table></div>");
  return h;
}

// The trajectory and, right under it, where its figures come from when they differ from
// the result table's.
std::string TrajectorySection(const v1::Job& job) {
  const v1::JobResult& r = job.result();
  std::string h = "<section><h2>Best speedup by round</h2>";
  if (r.trajectory_size() == 0) return absl::StrCat(h, "<p>No rounds completed.</p></section>");
  absl::StrAppend(&h, report_charts::TrajectoryChart(r));
  const v1::RoundSummary& last = r.trajectory(r.trajectory_size() - 1);
  absl::StrAppend(
      &h,
      "<p class=\"note\">Each point: the best kernel so far, its median in the round that "
      "measured it, over the starting kernel's median in the baseline run.");
  const v1::Measurement& fin = r.best_measurement();
  double final_ratio = fin.reference_kernel().median_ms() > 0 && fin.candidate().median_ms() > 0
                           ? fin.reference_kernel().median_ms() / fin.candidate().median_ms()
                           : 0;
  if (final_ratio > 0 && last.best_speedup_vs_start() > 0 &&
      std::abs(final_ratio / last.best_speedup_vs_start() - 1) > 0.01) {
    absl::StrAppend(
        &h, absl::StrFormat(
                " <b class=\"differs\">The chart's last point, %.2fx, comes from round %d's "
                "measurement and the "
                "baseline run; the result table's %.2fx comes from the final run, which timed both "
                "kernels side by "
                "side</b> (the final run is the figure to trust: one run, same conditions).",
                last.best_speedup_vs_start(), last.round(), final_ratio));
  }
  absl::StrAppend(&h, "</p></section>");
  return h;
}

// The roofline against the GPU's ceilings (the spec table's entry for the device the
// final run names), with the starting and the best kernel placed by their profiles.
std::string RooflineSection(const v1::Job& job, const std::vector<v1::Candidate>& cands,
                            const std::string& start_id, const v1::OpSignature& sig, bool cpu) {
  std::string h = "<section><h2>Roofline</h2>";
  std::vector<report_charts::SolBar> bars;
  std::vector<report_charts::RooflinePoint> pts;
  const std::string& best_id = job.result().best_candidate_id();
  for (const auto& c : cands) {
    if (!c.has_metrics() || c.metrics().kernels_size() == 0) continue;
    bool best = c.id() == best_id;
    bars.push_back({c.id(), c.metrics().roofline_efficiency_pct(), best});
    if ((best || c.id() == start_id) && c.metrics().arithmetic_intensity() > 0 &&
        c.metrics().achieved_flops() > 0) {
      pts.push_back({best && c.id() == start_id ? "start = best"
                     : best                     ? "best"
                                                : "start",
                     c.id(), c.metrics().arithmetic_intensity(), c.metrics().achieved_flops(),
                     best});
    }
  }
  if (bars.empty()) {
    return absl::StrCat(
        h, "<p>No roofline chart: no kernel of this job was profiled (",
        cpu ? "a CPU worker has no hardware counters" : "no hardware counters were collected",
        ").</p></section>");
  }
  const std::string& device = job.result().best_measurement().gpu_name();
  absl::StatusOr<v1::GpuSpec> spec = LookupGpuSpec(device, 0);
  std::string key;  // PeakFlops' label for the chart
  const double peak_f = spec.ok() ? PeakFlops(sig, *spec, &key) : 0;
  if (!pts.empty() && spec.ok() && spec->peak_dram_bytes_per_second() > 0 && peak_f > 0) {
    absl::StrAppend(
        &h, report_charts::RooflineChart(spec->peak_dram_bytes_per_second(), peak_f, key, pts));
    absl::StrAppend(
        &h, absl::StrFormat("<p class=\"note\">Ceilings of the %s from kagent's spec table: %.2f "
                            "TB/s DRAM, %.0f TFLOP/s %s. "
                            "Points: the op's FLOPs over its minimum bytes, and its FLOPs over the "
                            "profiled kernel time.</p>",
                            HtmlEscape(spec->name()), spec->peak_dram_bytes_per_second() / 1e12,
                            peak_f / 1e12, HtmlEscape(key)));
  } else {
    absl::StrAppend(&h, report_charts::SolBarChart(bars));
    absl::StrAppend(
        &h, "<p class=\"note\">Speed of light per profiled kernel: ",
        pts.empty()
            ? "the op signature gives no FLOPs and bytes, so no kernel has an intensity"
            : absl::StrCat("the device ", HtmlEscape(device), " is not in kagent's spec table"),
        ".</p>");
  }
  absl::StrAppend(&h, "</section>");
  return h;
}

constexpr char kStyle[] =
    "*{box-sizing:border-box}"
    "body{font-family:system-ui,sans-serif;margin:0 auto;padding:1em "
    "2em;max-width:1600px;color:#222;"
    "line-height:1.4}"
    "h1{font-size:1.5em;overflow-wrap:anywhere}h1 small{font-weight:normal;color:#666}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
    "text-align:left;vertical-align:top}th{background:#f3f3f3;font-weight:600}"
    ".scroll{overflow-x:auto;max-width:100%}"
    ".grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,560px),1fr));gap:0 "
    "2em}"
    ".chart{display:block;width:100%;height:auto;background:#fafafa;border:1px solid #ddd}"
    ".axis{stroke:#444}.unity{stroke:#bbb;stroke-dasharray:2 "
    "2}.line{fill:none;stroke:#1f77b4;stroke-width:2}"
    ".roof{fill:none;stroke:#d62728;stroke-width:2}.tick,.label,.ptlabel{font-size:11px;fill:#444}"
    ".pt{fill:#1f77b4}.best{fill:#2ca02c}.bar{fill:#1f77b4}"
    ".id{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em;white-space:"
    "nowrap;"
    "overflow:hidden;text-overflow:ellipsis;display:inline-block;max-width:16em;vertical-align:"
    "bottom}"
    ".banner{background:#fff3cd;border:1px solid #d4a300;padding:.6em 1em;margin:1em 0}"
    ".deploy{padding:.4em .6em;border-left:4px solid #2a7a2a}.deploy.keep{border-color:#b35900}"
    ".note{color:#555;font-size:.92em}.slower{color:#b35900}.faster{color:#2a7a2a}.num{white-space:"
    "nowrap}"
    "td.lesson{min-width:22em}"
    "@media (max-width:800px){body{padding:.5em 1em}.id{max-width:10em}}"
    "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}"
    ".CORRECT{color:#2ca02c}.INCORRECT,.CRASH,.TIMEOUT,.OOM,.REJECTED,.COMPILE_ERROR,.INFRA_ERROR"
    "{color:#d62728}.DUPLICATE,.GENERATION_FAILED{color:#7f7f7f}";

}  // namespace

std::string HtmlEscape(const std::string& t) {
  std::string out;
  out.reserve(t.size());
  for (char c : t) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string RenderHtmlReport(const v1::Job& job, const std::vector<v1::Candidate>& cands,
                             const std::vector<v1::Reflexion>& reflexions) {
  const v1::JobResult& r = job.result();
  const v1::Measurement& fin = r.best_measurement();
  const bool cpu = MeasuredOnCpuWorker(fin) || MeasuredOnCpuWorker(job.baseline());
  const std::string device = !fin.gpu_name().empty() ? fin.gpu_name() : job.baseline().gpu_name();
  const v1::OpSignature& sig = job.baseline().op_signature().ops_size() > 0
                                   ? job.baseline().op_signature()
                                   : fin.op_signature();
  std::string start_id = r.lineage_size() > 0 ? r.lineage(0) : "";
  for (const auto& c : cands) {
    if (start_id.empty() && c.round() == 0 && c.parent_id().empty()) start_id = c.id();
  }
  std::string h;
  absl::StrAppend(
      &h,
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>kagent ",
      HtmlEscape(job.id()), " ", HtmlEscape(job.problem().name()), "</title><style>", kStyle,
      "</style></head><body>");
  absl::StrAppend(&h, "<h1>", HtmlEscape(job.problem().name()), " <small>", Id(job.id()),
                  "</small></h1>");
  if (cpu) {
    absl::StrAppend(
        &h,
        "<div class=\"banner\" id=\"cpu-banner\"><b>Not GPU times.</b> This job ran on a CPU "
        "worker under Triton's interpreter: the correctness checks are real, but every time and "
        "speedup below is an interpreter time on the CPU and says nothing about a GPU.</div>");
  }
  absl::StrAppend(&h, "<div class=\"grid\"><section><h2>Job</h2>", CountersTable(job, cpu, device),
                  "</section><section>", ConfigSection(job, cpu), "</section></div>");
  absl::StrAppend(&h, ProblemSection(job, sig));
  absl::StrAppend(&h, ResultSection(job, start_id, cpu));
  std::vector<std::string> lineage;
  for (const auto& id : r.lineage()) lineage.push_back(Id(id, job.id()));
  absl::StrAppend(&h, "<p><b>Lineage of the best kernel:</b> ",
                  lineage.empty() ? "n/a" : absl::StrJoin(lineage, " &rarr; "), "</p>");
  absl::StrAppend(&h, "<div class=\"grid\">", TrajectorySection(job),
                  RooflineSection(job, cands, start_id, sig, cpu), "</div>");
  if (r.extra_shapes_size() > 0) {
    absl::StrAppend(
        &h,
        "<h2>Other shapes</h2><p class=\"note\">Each row is one run of its own, timing the best "
        "kernel beside the others on that shape set.</p><div class=\"scroll\"><table><tr><th>shape "
        "set</th><th>verdict</th><th>best</th><th>vs start</th><th>vs eager</th><th>vs "
        "compile</th></tr>");
    for (const auto& m : r.extra_shapes()) {
      double med = m.candidate().median_ms();
      absl::StrAppend(&h, "<tr><td>", HtmlEscape(m.shape_set()), "</td><td class=\"",
                      VerdictName(m.verdict()), "\">", VerdictName(m.verdict()), "</td><td>",
                      Ms(med), "</td><td>", Versus(m.reference_kernel().median_ms(), med),
                      "</td><td>", Versus(m.eager().median_ms(), med), "</td><td>",
                      Versus(m.compiled().median_ms(), med), "</td></tr>");
    }
    absl::StrAppend(&h, "</table></div>");
  }
  std::map<std::string, const v1::Reflexion*> refl;
  for (const auto& x : reflexions) refl[x.candidate_id()] = &x;
  absl::StrAppend(
      &h,
      "<h2>Every attempt</h2><p class=\"note\">Candidates are named without the job's id. Each "
      "median comes "
      "from that candidate's own "
      "measurement; roofline: the arithmetic-intensity figure where the signature gives FLOPs and "
      "bytes, else speed of light, n/a without a profile.</p><div class=\"scroll\"><table>"
      "<tr><th>candidate</th><th>round</th><th>parent</th><th>fix</th>"
      "<th>verdict</th><th>median</th><th>roofline</th><th>reflexion</th></tr>");
  for (const auto& c : cands) {
    auto it = refl.find(c.id());
    std::string lesson = it == refl.end() ? "" : it->second->lesson();
    const v1::Measurement& m = c.measurement();
    bool profiled = c.has_metrics() && c.metrics().kernels_size() > 0;
    absl::StrAppend(&h, "<tr><td>", Id(c.id(), job.id()), "</td><td>", c.round(), "</td><td>",
                    Id(c.parent_id(), job.id()), "</td><td>",
                    HtmlEscape(c.prescription().pattern_id()), "</td><td class=\"",
                    VerdictName(m.verdict()), "\">", VerdictName(m.verdict()),
                    m.correctness().reason().empty()
                        ? ""
                        : "<br><small>" + HtmlEscape(m.correctness().reason()) + "</small>",
                    "</td><td>", Ms(m.candidate().median_ms()), "</td><td>",
                    profiled ? Pct(UsefulRooflinePct(c.metrics())) : "n/a",
                    "</td><td class=\"lesson\">", HtmlEscape(lesson), "</td></tr>");
  }
  absl::StrAppend(&h, "</table></div>");
  absl::StrAppend(&h, "<h2>Best kernel</h2>");
  if (!r.best_kernel().origin().empty()) {
    absl::StrAppend(&h, "<p class=\"note\">origin: ", HtmlEscape(r.best_kernel().origin()), "</p>");
  }
  absl::StrAppend(&h, "<pre>", HtmlEscape(r.best_kernel().source()), "</pre>");
  absl::StrAppend(&h, "</body></html>\n");
  return h;
}

}  // namespace kagent
