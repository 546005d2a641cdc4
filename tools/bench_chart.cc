// The SVG charts of `kagent bench` (bench_chart.h), and trajectory.svg (bench.h,
// RenderTrajectorySvg): the suite's best-so-far speedup over the starting kernels against
// rounds, one line per problem and the suite's geometric mean, on a log scale.
#include "tools/bench_chart.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/bench.h"
#include "tools/report.h"

namespace kagent::cli {
namespace {

// A tick step for [0, max] of about 5-10 ticks: 1, 2 or 5 times a power of ten.
double NiceStep(double max) {
  if (max <= 0) return 1;
  const double raw = max / 8;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

}  // namespace

std::string ArmColor(size_t index) {
  static const char* kColors[] = {"#c33", "#36c", "#393", "#c80", "#839", "#099"};
  return kColors[index % (sizeof(kColors) / sizeof(kColors[0]))];
}

std::string RenderChartSvg(const Chart& chart) {
  constexpr double kW = 720, kH = 420, kLeft = 64, kRight = 24, kTop = 40, kBottom = 52;
  double x_max = chart.integer_x ? 1 : 0;
  double y_max = 2.0, y_min = 1.0;
  for (const ChartLine& l : chart.lines) {
    for (const auto& [x, y] : l.points) {
      x_max = std::max(x_max, x);
      if (y > 0) {
        y_max = std::max(y_max, y);
        y_min = std::min(y_min, y);
      }
    }
  }
  if (x_max <= 0) x_max = 1;
  // Log scale between powers of two that enclose the data.
  double lo = std::pow(2.0, std::floor(std::log2(y_min)));
  double hi = std::pow(2.0, std::ceil(std::log2(y_max)));
  if (hi <= lo) hi = lo * 2;
  auto px = [&](double x) { return kLeft + (kW - kLeft - kRight) * x / x_max; };
  auto py = [&](double v) {
    double t = (std::log2(std::max(v, lo)) - std::log2(lo)) / (std::log2(hi) - std::log2(lo));
    return kH - kBottom - (kH - kTop - kBottom) * t;
  };
  std::string o = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"15\">%s</text>\n",
      kW, kH, kW, kH, kLeft, HtmlEscape(chart.title));
  // Grid: horizontal lines at powers of two, vertical at the x ticks.
  for (double v = lo; v <= hi * 1.0001; v *= 2) {
    o += absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%gx</text>\n",
        kLeft, py(v), kW - kRight, py(v), kLeft - 6, py(v) + 4, v);
  }
  const double step = chart.integer_x ? std::max(1.0, std::floor(x_max / 10)) : NiceStep(x_max);
  for (double x = 0; x <= x_max * 1.0001; x += step) {
    o += absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
        px(x), kTop, px(x), kH - kBottom, px(x), kH - kBottom + 16, x);
  }
  o += absl::StrFormat(
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n"
      "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">speedup vs "
      "start (log scale)</text>\n",
      (kLeft + kW - kRight) / 2, kH - 12, HtmlEscape(chart.x_label), (kTop + kH - kBottom) / 2);
  // Thin lines first, bold ones over them; the bold ones named top right.
  int legend = 0;
  size_t bold_index = 0;
  for (bool bold : {false, true}) {
    for (const ChartLine& l : chart.lines) {
      if (l.bold != bold || l.points.empty()) continue;
      std::string pts;
      for (const auto& [x, y] : l.points) {
        pts += absl::StrFormat("%s%.1f,%.1f", pts.empty() ? "" : " ", px(x), py(y));
      }
      const std::string color =
          !l.color.empty() ? l.color : bold ? ArmColor(bold_index) : std::string("#9ab");
      o += absl::StrFormat(
          "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%d\" points=\"%s\"><title>%s"
          "</title></polyline>\n",
          color, bold ? 3 : 1, pts, HtmlEscape(l.name));
      if (bold) {
        o += absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">%s</text>\n",
                             kW - kRight - 220, kTop + 14 + 16 * legend++, color,
                             HtmlEscape(l.name));
        ++bold_index;
      }
    }
  }
  o += "</svg>\n";
  return o;
}

std::string RenderTrajectorySvg(const std::vector<BenchRow>& rows) {
  Chart chart;
  chart.title = absl::StrFormat("Best-so-far speedup over the starting kernel (%d problems)",
                                static_cast<int>(rows.size()));
  chart.x_label = "round";
  chart.integer_x = true;
  // One thin line per problem: 1.0 at round 0, then its best-so-far after each round.
  for (const auto& r : rows) {
    if (r.trajectory.empty()) continue;
    ChartLine& l = chart.lines.emplace_back();
    l.name = r.name;
    l.points.emplace_back(0, 1.0);
    double v = 1.0;
    for (const auto& [round, sp] : r.trajectory) {
      if (sp > 0) v = std::max(v, sp);
      l.points.emplace_back(round, v);
    }
  }
  std::vector<double> suite = SuiteTrajectory(rows);
  if (!suite.empty()) {
    ChartLine& l = chart.lines.emplace_back();
    l.bold = true;
    l.name = absl::StrFormat("geometric mean %.2fx", suite.back());
    for (size_t i = 0; i < suite.size(); ++i) l.points.emplace_back(static_cast<double>(i), suite[i]);
  }
  return RenderChartSvg(chart);
}

}  // namespace kagent::cli
