// The line chart `kagent bench` draws (trajectory.svg, gpu_curve.svg and the comparison's
// charts): lines of (x, y) points, y on a log scale between powers of two that enclose
// the data (at least 1x to 2x), thin lines for problems and bold ones for suites, each bold
// line named in a legend. Self-contained SVG. Pure; no I/O.
#ifndef KAGENT_TOOLS_BENCH_CHART_H_
#define KAGENT_TOOLS_BENCH_CHART_H_

#include <string>
#include <utility>
#include <vector>

namespace kagent::cli {

struct ChartLine {
  std::string name;                                // the tooltip (and the legend when bold)
  std::vector<std::pair<double, double>> points;   // (x, y), y > 0, in x order
  bool bold = false;
  std::string color;                               // "" : grey-blue thin, red bold
};

struct Chart {
  std::string title;
  std::string x_label;  // "round", "GPU-seconds"
  bool integer_x = false;  // ticks at whole numbers (rounds)
  std::vector<ChartLine> lines;
};

std::string RenderChartSvg(const Chart& chart);

// The colors of bold lines by index (a comparison's arms), cycling.
std::string ArmColor(size_t index);

}  // namespace kagent::cli

#endif  // KAGENT_TOOLS_BENCH_CHART_H_
