#include "tools/report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench.h"
#include "tools/enum_names.h"

namespace kagent {
namespace {

std::string Ratio(double r) { return r > 0 ? absl::StrFormat("%.2fx", r) : "n/a"; }
std::string Ms(double ms) { return ms > 0 ? absl::StrFormat("%.4f ms", ms) : "n/a"; }


// Best-so-far speedup per round: a line chart.
std::string TrajectoryChart(const v1::JobResult& r) {
  const int w = 640, h = 260, pad = 44;
  if (r.trajectory_size() == 0) return "<p>No rounds completed.</p>";
  double max_s = 1.0;
  int max_round = 0;
  for (const auto& t : r.trajectory()) {
    max_s = std::max(max_s, t.best_speedup_vs_start());
    max_round = std::max(max_round, t.round());
  }
  max_s *= 1.1;
  auto X = [&](double round) { return pad + (w - 2 * pad) * round / std::max(1, max_round); };
  auto Y = [&](double s) { return h - pad - (h - 2 * pad) * s / max_s; };
  std::string svg = absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"best speedup per "
      "round\">",
      w, h);
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>",
                                        pad, h - pad, w - pad, h - pad));
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>",
                                        pad, pad, pad, h - pad));
  for (int i = 0; i <= 4; ++i) {
    double s = max_s * i / 4;
    absl::StrAppend(&svg, absl::StrFormat(
        "<text x=\"%d\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%.2fx</text>", pad - 4, Y(s) + 4, s));
  }
  std::string points = absl::StrFormat("%.1f,%.1f", X(0), Y(1.0));
  for (const auto& t : r.trajectory()) {
    absl::StrAppend(&points, absl::StrFormat(" %.1f,%.1f", X(t.round()), Y(t.best_speedup_vs_start())));
  }
  absl::StrAppend(&svg, "<polyline class=\"line\" points=\"", points, "\"/>");
  absl::StrAppend(&svg, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"/>", X(0), Y(1.0)));
  for (const auto& t : r.trajectory()) {
    absl::StrAppend(&svg, absl::StrFormat(
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>round %d: %.2fx (%d/%d correct)</title></circle>"
        "<text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">%d</text>",
        X(t.round()), Y(t.best_speedup_vs_start()), t.round(), t.best_speedup_vs_start(), t.correct(),
        t.candidates(), X(t.round()), h - pad + 16, t.round()));
  }
  absl::StrAppend(&svg, absl::StrFormat(
      "<text x=\"%d\" y=\"%d\" class=\"label\" text-anchor=\"middle\">round</text>", w / 2, h - 6));
  absl::StrAppend(&svg, "</svg>");
  return svg;
}

// Roofline: attainable = min(peak FLOP/s, AI x peak bandwidth), log-log, with each
// profiled candidate placed by its arithmetic intensity and achieved FLOP/s; where a
// profile has no intensity, a bar of roofline efficiency instead.
std::string RooflineChart(const v1::Job& job, const std::vector<v1::Candidate>& cands) {
  struct Pt {
    std::string id;
    double ai, flops, eff;
    bool best;
  };
  std::vector<Pt> pts;
  for (const auto& c : cands) {
    if (!c.has_metrics() || c.metrics().kernels_size() == 0) continue;
    pts.push_back({c.id(), c.metrics().arithmetic_intensity(), c.metrics().achieved_flops(),
                   c.metrics().roofline_efficiency_pct(), c.id() == job.result().best_candidate_id()});
  }
  if (pts.empty()) return "<p>No profiled kernels (no hardware counters were collected).</p>";
  const int w = 640, h = 300, pad = 50;
  std::string svg = absl::StrFormat("<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"roofline\">", w, h);
  bool have_ai = std::any_of(pts.begin(), pts.end(), [](const Pt& p) { return p.ai > 0 && p.flops > 0; });
  if (!have_ai) {
    // Efficiency bars.
    int n = static_cast<int>(pts.size());
    double bw = (w - 2.0 * pad) / n;
    absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>", pad, h - pad, w - pad, h - pad));
    absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"roof\"/>",
                                          pad, h - pad - (h - 2.0 * pad), w - pad, h - pad - (h - 2.0 * pad)));
    for (int i = 0; i < n; ++i) {
      double bh = (h - 2.0 * pad) * std::min(100.0, pts[i].eff) / 100.0;
      absl::StrAppend(&svg, absl::StrFormat(
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"%s\"><title>%s: %.1f%% of roofline</title></rect>",
          pad + i * bw + 2, h - pad - bh, std::max(1.0, bw - 4), bh, pts[i].best ? "bar best" : "bar",
          HtmlEscape(pts[i].id), pts[i].eff));
    }
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%d\" y=\"%d\" class=\"label\">100%% of roofline (max of compute and memory SOL)</text>", pad + 4, pad - 6));
    absl::StrAppend(&svg, "</svg>");
    return svg;
  }
  // The roof: each profiled point's attainable rate is achieved / efficiency; the
  // largest of those gives the compute ceiling and the matching bandwidth.
  double peak_bw = 0, peak_f = 0;
  for (const auto& p : pts) {
    if (p.eff > 0 && p.flops > 0) {
      double attainable = p.flops / (p.eff / 100.0);
      peak_f = std::max(peak_f, attainable);
      peak_bw = std::max(peak_bw, attainable / p.ai);
    }
  }
  double min_ai = 1e-2, max_ai = 1e4, min_f = 1e9, max_f = std::max(peak_f * 2, 1e12);
  auto X = [&](double ai) { return pad + (w - 2 * pad) * (std::log10(ai) - std::log10(min_ai)) / (std::log10(max_ai) - std::log10(min_ai)); };
  auto Y = [&](double f) { return h - pad - (h - 2 * pad) * (std::log10(std::max(f, min_f)) - std::log10(min_f)) / (std::log10(max_f) - std::log10(min_f)); };
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>", pad, h - pad, w - pad, h - pad));
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>", pad, pad, pad, h - pad));
  if (peak_bw > 0) {
    double knee = peak_f / peak_bw;
    absl::StrAppend(&svg, absl::StrFormat("<polyline class=\"roof\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>",
                                          X(min_ai), Y(min_ai * peak_bw), X(knee), Y(peak_f), X(max_ai), Y(peak_f)));
  }
  for (const auto& p : pts) {
    if (p.ai <= 0 || p.flops <= 0) continue;
    absl::StrAppend(&svg, absl::StrFormat(
        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" class=\"%s\"><title>%s: AI %.2f FLOP/B, %.3g FLOP/s, %.1f%%</title></circle>",
        X(p.ai), Y(p.flops), p.best ? 6 : 4, p.best ? "pt best" : "pt", HtmlEscape(p.id), p.ai, p.flops, p.eff));
  }
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%d\" y=\"%d\" class=\"label\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte, log)</text>", w / 2, h - 8));
  absl::StrAppend(&svg, "</svg>");
  return svg;
}

}  // namespace

std::string HtmlEscape(const std::string& t) {
  std::string out;
  out.reserve(t.size());
  for (char c : t) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string RenderHtmlReport(const v1::Job& job, const std::vector<v1::Candidate>& cands,
                             const std::vector<v1::Reflexion>& reflexions) {
  const v1::JobResult& r = job.result();
  const v1::Measurement& best = r.best_measurement();
  std::string h;
  absl::StrAppend(&h, "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>kagent ",
                  HtmlEscape(job.id()), "</title><style>"
                  "body{font-family:system-ui,sans-serif;margin:2em;max-width:1000px;color:#222}"
                  "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}"
                  "th{background:#f3f3f3}.chart{width:100%;max-width:680px;background:#fafafa;border:1px solid #ddd}"
                  ".axis{stroke:#444}.line{fill:none;stroke:#1f77b4;stroke-width:2}.roof{fill:none;stroke:#d62728;stroke-width:2;stroke-dasharray:4 2}"
                  ".tick,.label{font-size:11px;fill:#444}.pt{fill:#1f77b4}.best{fill:#2ca02c}.bar{fill:#1f77b4}"
                  "pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}"
                  ".CORRECT{color:#2ca02c}.INCORRECT,.CRASH,.TIMEOUT,.OOM,.REJECTED,.COMPILE_ERROR,.INFRA_ERROR{color:#d62728}.DUPLICATE,.GENERATION_FAILED{color:#7f7f7f}"
                  "</style></head><body>");
  absl::StrAppend(&h, "<h1>", HtmlEscape(job.problem().name()), " <small>", HtmlEscape(job.id()), "</small></h1>");
  absl::StrAppend(&h, "<table><tr><th>state</th><td>", v1::JobState_Name(job.state()), "</td></tr>",
                  "<tr><th>stop reason</th><td>", HtmlEscape(job.error().empty() ? r.stop_reason() : job.error()), "</td></tr>",
                  "<tr><th>rounds</th><td>", job.current_round(), "</td></tr>",
                  "<tr><th>GPU</th><td>", HtmlEscape(best.gpu_name()), "</td></tr>",
                  absl::StrFormat("<tr><th>GPU-seconds</th><td>%.1f</td></tr>", job.gpu_seconds_used()),
                  "<tr><th>GPU busy</th><td>",
                  cli::FormatBusyFraction(
                      cli::GpuBusyFraction(job.gpu_busy_seconds_used(), job.gpu_seconds_used())),
                  " <small>(of the GPU time held, kernels running per NVML)</small></td></tr>",
                  "<tr><th>candidates measured</th><td>", job.candidates_measured(), " (",
                  cli::FormatPerGpuMinute(
                      cli::CandidatesPerGpuMinute(job.candidates_measured(), job.gpu_seconds_used())),
                  " per GPU-minute)</td></tr>",
                  "<tr><th>variants screened</th><td>", job.variants_screened(), "</td></tr>",
                  "</table>");
  absl::StrAppend(&h, "<h2>Result</h2><p>All times below come from one final run that timed the best kernel, "
                      "the starting kernel, eager PyTorch and torch.compile side by side.</p><table>"
                      "<tr><th></th><th>median</th><th>best kernel is</th></tr>",
                  "<tr><th>best kernel</th><td>", Ms(best.candidate().median_ms()), "</td><td></td></tr>",
                  "<tr><th>starting kernel</th><td>", Ms(best.reference_kernel().median_ms()), "</td><td>", Ratio(r.speedup_vs_start()), " faster</td></tr>",
                  "<tr><th>eager PyTorch</th><td>", Ms(best.eager().median_ms()), "</td><td>", Ratio(r.speedup_vs_eager()), " faster</td></tr>",
                  "<tr><th>torch.compile</th><td>", Ms(best.compiled().median_ms()), "</td><td>", Ratio(r.speedup_vs_compile()), " faster</td></tr>",
                  absl::StrFormat("<tr><th>roofline efficiency</th><td colspan=\"2\">%.1f%%</td></tr>", r.roofline_efficiency_pct()),
                  "</table>");
  std::string lineage;
  for (const auto& id : r.lineage()) absl::StrAppend(&lineage, lineage.empty() ? "" : " &rarr; ", HtmlEscape(id));
  absl::StrAppend(&h, "<p><b>Lineage of the best kernel:</b> ", lineage.empty() ? "n/a" : lineage, "</p>");
  absl::StrAppend(&h, "<h2>Best speedup by round</h2>", TrajectoryChart(r));
  absl::StrAppend(&h, "<h2>Roofline</h2>", RooflineChart(job, cands));
  if (r.extra_shapes_size() > 0) {
    absl::StrAppend(&h, "<h2>Other shapes</h2><table><tr><th>shape set</th><th>verdict</th><th>best</th><th>vs start</th><th>vs eager</th><th>vs compile</th></tr>");
    for (const auto& m : r.extra_shapes()) {
      double med = m.candidate().median_ms();
      auto rr = [&](double x) { return Ratio(med > 0 && x > 0 ? x / med : 0); };
      absl::StrAppend(&h, "<tr><td>", HtmlEscape(m.shape_set()), "</td><td class=\"", VerdictName(m.verdict()), "\">",
                      VerdictName(m.verdict()), "</td><td>", Ms(med), "</td><td>", rr(m.reference_kernel().median_ms()),
                      "</td><td>", rr(m.eager().median_ms()), "</td><td>", rr(m.compiled().median_ms()), "</td></tr>");
    }
    absl::StrAppend(&h, "</table>");
  }
  std::map<std::string, const v1::Reflexion*> refl;
  for (const auto& x : reflexions) refl[x.candidate_id()] = &x;
  absl::StrAppend(&h, "<h2>Every attempt</h2><table><tr><th>candidate</th><th>round</th><th>parent</th><th>fix</th>"
                      "<th>verdict</th><th>median</th><th>roofline</th><th>reflexion</th></tr>");
  for (const auto& c : cands) {
    auto it = refl.find(c.id());
    std::string lesson = it == refl.end() ? "" : it->second->lesson();
    absl::StrAppend(&h, "<tr><td>", HtmlEscape(c.id()), "</td><td>", c.round(), "</td><td>", HtmlEscape(c.parent_id()),
                    "</td><td>", HtmlEscape(c.prescription().pattern_id()), "</td><td class=\"",
                    VerdictName(c.measurement().verdict()), "\">", VerdictName(c.measurement().verdict()),
                    c.measurement().correctness().reason().empty() ? "" : "<br><small>" + HtmlEscape(c.measurement().correctness().reason()) + "</small>",
                    "</td><td>", Ms(c.measurement().candidate().median_ms()), "</td><td>",
                    c.has_metrics() ? absl::StrFormat("%.1f%%", c.metrics().roofline_efficiency_pct()) : "",
                    "</td><td>", HtmlEscape(lesson), "</td></tr>");
  }
  absl::StrAppend(&h, "</table>");
  absl::StrAppend(&h, "<h2>Best kernel</h2><pre>", HtmlEscape(r.best_kernel().source()), "</pre>");
  absl::StrAppend(&h, "</body></html>\n");
  return h;
}

}  // namespace kagent
