// The HTML report's SVG charts (tools/report.h): the best-so-far speedup per round and
// the roofline against a GPU's ceilings. Each returns one inline <svg> element, sized by
// its viewBox so it scales to the width of its container. Text is HTML-escaped here.
//
// Pure functions; thread-safe.
#ifndef KAGENT_TOOLS_REPORT_CHARTS_H_
#define KAGENT_TOOLS_REPORT_CHARTS_H_

#include <string>
#include <vector>

#include "kagent/v1/common.pb.h"

namespace kagent::report_charts {

// The best-so-far speedup over the starting kernel after each round (RoundSummary's
// best_speedup_vs_start), from round 0 (the starting kernel, 1.00x by definition) to the
// last round. Precondition: r.trajectory_size() > 0.
std::string TrajectoryChart(const v1::JobResult& r);

// A kernel placed on the roofline: its arithmetic intensity (FLOP per byte) and achieved
// rate (FLOP/s), both > 0.
struct RooflinePoint {
  std::string label;  // "start", "best", ...
  std::string id;     // the candidate's id (the point's tooltip)
  double intensity = 0;
  double flops = 0;
  bool best = false;
};

// Log-log roofline: attainable = min(peak_flops, intensity x peak_bytes_per_second), the
// knee where they meet, and the points. `peak_name` names the FLOP/s ceiling ("bf16").
// Preconditions: both peaks > 0, `points` not empty.
std::string RooflineChart(double peak_bytes_per_second, double peak_flops,
                          const std::string& peak_name, const std::vector<RooflinePoint>& points);

// A bar per profiled kernel of its speed-of-light efficiency (roofline_efficiency_pct, the
// larger of compute and memory SOL), for profiles without an arithmetic intensity.
struct SolBar {
  std::string id;
  double pct = 0;
  bool best = false;
};
std::string SolBarChart(const std::vector<SolBar>& bars);

}  // namespace kagent::report_charts

#endif  // KAGENT_TOOLS_REPORT_CHARTS_H_
