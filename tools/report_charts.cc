#include "tools/report_charts.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/report.h"

namespace kagent::report_charts {
namespace {

std::string Axis(double x1, double y1, double x2, double y2) {
  return absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"axis\"/>",
                         x1, y1, x2, y2);
}

// "1e12" style tick text for a power of ten.
std::string Decade(int exponent) { return absl::StrFormat("1e%d", exponent); }

}  // namespace

std::string TrajectoryChart(const v1::JobResult& r) {
  const int w = 640, h = 260, pad = 48;
  double max_s = 1.0;
  int max_round = 1;
  for (const auto& t : r.trajectory()) {
    max_s = std::max(max_s, t.best_speedup_vs_start());
    max_round = std::max(max_round, t.round());
  }
  max_s *= 1.1;
  auto X = [&](double round) { return pad + (w - 2.0 * pad) * round / max_round; };
  auto Y = [&](double s) { return h - pad - (h - 2.0 * pad) * s / max_s; };
  std::string svg = absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"best-so-far speedup "
      "over the starting kernel by round\">",
      w, h);
  absl::StrAppend(&svg, Axis(pad, h - pad, w - pad, h - pad), Axis(pad, pad, pad, h - pad));
  for (int i = 0; i <= 4; ++i) {
    double s = max_s * i / 4;
    absl::StrAppend(&svg,
                    absl::StrFormat("<text x=\"%d\" y=\"%.1f\" class=\"tick\" "
                                    "text-anchor=\"end\">%s</text>",
                                    pad - 4, Y(s) + 4, i == 0 ? "0" : absl::StrFormat("%.2fx", s)));
  }
  // 1.00x: the starting kernel's own level.
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                                        "class=\"unity\"/>",
                                        pad, Y(1.0), w - pad, Y(1.0)));
  std::string points = absl::StrFormat("%.1f,%.1f", X(0), Y(1.0));
  for (const auto& t : r.trajectory()) {
    absl::StrAppend(&points,
                    absl::StrFormat(" %.1f,%.1f", X(t.round()), Y(t.best_speedup_vs_start())));
  }
  absl::StrAppend(&svg, "<polyline class=\"line\" points=\"", points, "\"/>");
  absl::StrAppend(
      &svg, absl::StrFormat(
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>round 0: the starting kernel, "
                "1.00x</title>"
                "</circle><text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">0</text>",
                X(0), Y(1.0), X(0), h - pad + 16));
  for (const auto& t : r.trajectory()) {
    absl::StrAppend(
        &svg, absl::StrFormat(
                  "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>round %d: %.2fx (%d/%d "
                  "correct)</title></circle>"
                  "<text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">%d</text>",
                  X(t.round()), Y(t.best_speedup_vs_start()), t.round(), t.best_speedup_vs_start(),
                  t.correct(), t.candidates(), X(t.round()), h - pad + 16, t.round()));
  }
  absl::StrAppend(&svg,
                  absl::StrFormat("<text x=\"%d\" y=\"%d\" class=\"label\" "
                                  "text-anchor=\"middle\">round (0 = the starting kernel)</text>",
                                  w / 2, h - 8));
  absl::StrAppend(&svg, "</svg>");
  return svg;
}

std::string RooflineChart(double peak_bw, double peak_f, const std::string& peak_name,
                          const std::vector<RooflinePoint>& pts) {
  const int w = 640, h = 320, pad_l = 56, pad_r = 20, pad_t = 24, pad_b = 44;
  const double knee = peak_f / peak_bw;
  double lo_ai = knee, hi_ai = knee, lo_f = peak_f;
  for (const auto& p : pts) {
    lo_ai = std::min(lo_ai, p.intensity);
    hi_ai = std::max(hi_ai, p.intensity);
    lo_f = std::min(lo_f, p.flops);
  }
  // Whole decades around the points and the knee.
  const int ai0 = static_cast<int>(std::floor(std::log10(lo_ai))) - 1;
  const int ai1 = static_cast<int>(std::ceil(std::log10(hi_ai))) + 1;
  const int f0 = static_cast<int>(std::floor(std::log10(lo_f))) - 1;
  const int f1 = static_cast<int>(std::ceil(std::log10(peak_f))) + 1;
  auto X = [&](double ai) {
    return pad_l + (w - pad_l - pad_r) * (std::log10(ai) - ai0) / (ai1 - ai0);
  };
  auto Y = [&](double f) {
    double l = std::clamp(std::log10(f), static_cast<double>(f0), static_cast<double>(f1));
    return h - pad_b - (h - pad_t - pad_b) * (l - f0) / (f1 - f0);
  };
  std::string svg = absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"roofline\">", w, h);
  absl::StrAppend(&svg, Axis(pad_l, h - pad_b, w - pad_r, h - pad_b),
                  Axis(pad_l, pad_t, pad_l, h - pad_b));
  for (int e = ai0; e <= ai1; ++e) {
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%d\" class=\"tick\" "
                                          "text-anchor=\"middle\">%s</text>",
                                          X(std::pow(10.0, e)), h - pad_b + 14, Decade(e)));
  }
  for (int e = f0; e <= f1; ++e) {
    absl::StrAppend(&svg, absl::StrFormat("<text x=\"%d\" y=\"%.1f\" class=\"tick\" "
                                          "text-anchor=\"end\">%s</text>",
                                          pad_l - 4, Y(std::pow(10.0, e)) + 4, Decade(e)));
  }
  // The memory ceiling from the left edge (or where it enters the plot) to the knee, then
  // the compute ceiling.
  double x_start = std::max(std::pow(10.0, ai0), std::pow(10.0, f0) / peak_bw);
  absl::StrAppend(
      &svg,
      absl::StrFormat(
          "<polyline class=\"roof\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"><title>ceilings: "
          "%.3g B/s DRAM, %.3g FLOP/s %s; knee at %.3g FLOP/B</title></polyline>",
          X(x_start), Y(x_start * peak_bw), X(knee), Y(peak_f), X(std::pow(10.0, ai1)), Y(peak_f),
          peak_bw, peak_f, HtmlEscape(peak_name), knee));
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" class=\"label\" "
                                        "text-anchor=\"end\">%s peak %.3g FLOP/s</text>",
                                        static_cast<double>(w - pad_r - 4), Y(peak_f) - 6,
                                        HtmlEscape(peak_name), peak_f));
  for (const auto& p : pts) {
    absl::StrAppend(
        &svg,
        absl::StrFormat(
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" class=\"%s\"><title>%s %s: %.3g FLOP/B, "
            "%.3g FLOP/s</title></circle><text x=\"%.1f\" y=\"%.1f\" class=\"ptlabel\">%s</text>",
            X(p.intensity), Y(p.flops), p.best ? 6 : 4, p.best ? "pt best" : "pt",
            HtmlEscape(p.label), HtmlEscape(p.id), p.intensity, p.flops, X(p.intensity) + 8,
            Y(p.flops) + (p.best ? -8 : 14), HtmlEscape(p.label)));
  }
  absl::StrAppend(
      &svg,
      absl::StrFormat(
          "<text x=\"%d\" y=\"%d\" class=\"label\" text-anchor=\"middle\">arithmetic intensity "
          "(FLOP/byte, log); up: FLOP/s (log)</text>",
          (w + pad_l) / 2, h - 8));
  absl::StrAppend(&svg, "</svg>");
  return svg;
}

std::string SolBarChart(const std::vector<SolBar>& bars) {
  const int w = 640, h = 260, pad = 44;
  const int n = std::max<int>(1, static_cast<int>(bars.size()));
  const double bw = (w - 2.0 * pad) / n;
  std::string svg = absl::StrFormat(
      "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"speed of light\">", w,
      h);
  absl::StrAppend(&svg, Axis(pad, h - pad, w - pad, h - pad));
  absl::StrAppend(
      &svg, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"roof\"/>", pad,
                            pad, w - pad, pad));
  for (int i = 0; i < static_cast<int>(bars.size()); ++i) {
    double bh = (h - 2.0 * pad) * std::clamp(bars[i].pct, 0.0, 100.0) / 100.0;
    absl::StrAppend(&svg, absl::StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                          "height=\"%.1f\" class=\"%s\"><title>%s: %.1f%% "
                                          "of speed of light</title></rect>",
                                          pad + i * bw + 2, h - pad - bh, std::max(1.0, bw - 4), bh,
                                          bars[i].best ? "bar best" : "bar", HtmlEscape(bars[i].id),
                                          bars[i].pct));
  }
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%d\" y=\"%d\" class=\"label\">100%% of speed of "
                                        "light (the larger of compute and memory SOL)</text>",
                                        pad + 4, pad - 6));
  absl::StrAppend(&svg, "</svg>");
  return svg;
}

}  // namespace kagent::report_charts
