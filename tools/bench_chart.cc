// The SVG chart of `kagent bench` (tools/bench.h, RenderTrajectorySvg): the suite's
// best-so-far speedup over the starting kernels against rounds, one line per problem and
// the suite's geometric mean, on a log scale. Pure; no I/O.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "tools/bench.h"
#include "tools/report.h"

namespace kagent::cli {

std::string RenderTrajectorySvg(const std::vector<BenchRow>& rows) {
  constexpr double kW = 720, kH = 420, kLeft = 64, kRight = 24, kTop = 40, kBottom = 52;
  std::vector<double> suite = SuiteTrajectory(rows);
  int max_round = std::max(1, static_cast<int>(suite.size()) - 1);
  double y_max = 2.0, y_min = 1.0;
  for (const auto& r : rows) {
    for (const auto& [round, sp] : r.trajectory) {
      if (sp > 0) {
        y_max = std::max(y_max, sp);
        y_min = std::min(y_min, sp);
      }
    }
  }
  // Log scale between powers of two that enclose the data.
  double lo = std::pow(2.0, std::floor(std::log2(y_min)));
  double hi = std::pow(2.0, std::ceil(std::log2(y_max)));
  if (hi <= lo) hi = lo * 2;
  auto px = [&](double round) { return kLeft + (kW - kLeft - kRight) * round / max_round; };
  auto py = [&](double v) {
    double t = (std::log2(v) - std::log2(lo)) / (std::log2(hi) - std::log2(lo));
    return kH - kBottom - (kH - kTop - kBottom) * t;
  };
  std::string o = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"15\">Best-so-far speedup over the starting kernel "
      "(%d problems)</text>\n",
      kW, kH, kW, kH, kLeft, static_cast<int>(rows.size()));
  // Grid: horizontal lines at powers of two, vertical at each round (thinned when many).
  for (double v = lo; v <= hi * 1.0001; v *= 2) {
    o += absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%gx</text>\n",
        kLeft, py(v), kW - kRight, py(v), kLeft - 6, py(v) + 4, v);
  }
  int step = std::max(1, max_round / 10);
  for (int round = 0; round <= max_round; round += step) {
    o += absl::StrFormat(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
        px(round), kTop, px(round), kH - kBottom, px(round), kH - kBottom + 16, round);
  }
  o += absl::StrFormat(
      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">round</text>\n"
      "<text transform=\"translate(16 %.1f) rotate(-90)\" text-anchor=\"middle\">speedup vs "
      "start (log scale)</text>\n",
      (kLeft + kW - kRight) / 2, kH - 12, (kTop + kH - kBottom) / 2);
  // One thin step line per problem: 1.0 at round 0, then its best-so-far after each round.
  for (const auto& r : rows) {
    if (r.trajectory.empty()) continue;
    std::string pts = absl::StrFormat("%.1f,%.1f", px(0), py(1.0));
    double v = 1.0;
    for (const auto& [round, sp] : r.trajectory) {
      if (sp > 0) v = std::max(v, sp);
      pts += absl::StrFormat(" %.1f,%.1f", px(round), py(v));
    }
    o += absl::StrFormat(
        "<polyline fill=\"none\" stroke=\"#9ab\" stroke-width=\"1\" points=\"%s\"><title>%s</title>"
        "</polyline>\n",
        pts, HtmlEscape(r.name));
  }
  if (!suite.empty()) {
    std::string pts;
    for (size_t i = 0; i < suite.size(); ++i) {
      pts += absl::StrFormat("%s%.1f,%.1f", i ? " " : "", px(i), py(std::max(suite[i], lo)));
    }
    o += absl::StrFormat(
        "<polyline fill=\"none\" stroke=\"#c33\" stroke-width=\"3\" points=\"%s\">"
        "<title>geometric mean</title></polyline>\n",
        pts);
    o += absl::StrFormat(
        "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c33\">geometric mean %.2fx</text>\n", kW - kRight - 150,
        kTop + 14, suite.back());
  }
  o += "</svg>\n";
  return o;
}

}  // namespace kagent::cli
