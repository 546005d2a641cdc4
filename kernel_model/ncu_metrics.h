// The Nsight Compute metric set the profiler collects, and how each one aggregates.
//
// The set itself is data: kernel_model/ncu_metrics.tsv (embedded at build time), one
// row per metric with its aggregation, the compute capabilities it applies to, its unit
// and a one-line meaning. Correct a name for an architecture there, not in code.
// docs/metrics-ncu.md lists the same set.
//
// Thread-safe: the table is parsed once, on first use, and read-only afterwards.
#ifndef KAGENT_KERNEL_MODEL_NCU_METRICS_H_
#define KAGENT_KERNEL_MODEL_NCU_METRICS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kagent {

// How the aggregate over a profile's kernels combines one metric.
enum class MetricAggregation {
  // Counters (bytes, instructions, time): the sum over kernels.
  kSum,
  // Percentages, ratios, rates and launch configuration: the mean weighted by each
  // kernel's duration (gpu__time_duration.sum).
  kDurationWeightedMean,
};

struct NcuMetricInfo {
  std::string name;
  MetricAggregation aggregation = MetricAggregation::kDurationWeightedMean;
  int min_cc = 0;    // inclusive, major*10+minor; 0: no lower bound
  int max_cc = 0;    // inclusive; 0: no upper bound
  std::string unit;  // after conversion to base units
  std::string meaning;

  bool AppliesTo(int cc) const {
    return (min_cc == 0 || cc >= min_cc) && (max_cc == 0 || cc <= max_cc);
  }
};

// Every row of ncu_metrics.tsv, in file order. Crashes at first use if the embedded file
// is malformed (a build-time data error, caught by the unit test).
const std::vector<NcuMetricInfo>& NcuMetricTable();

// The metric names to request on a GPU of compute capability `cc` (e.g. 90 for sm_90).
std::vector<std::string> NcuMetricsForArch(int cc);

// The table row for `name`, or null.
const NcuMetricInfo* FindNcuMetric(absl::string_view name);

// The table's aggregation for `name`; for names outside the table (ncu's raw page also
// reports .avg/.min/.max siblings and launch attributes): kSum for plain counters ending
// in ".sum", else the duration-weighted mean.
MetricAggregation AggregationFor(absl::string_view name);

// Parses the TSV format; exposed for tests. Returns rows, or an error naming the line.
struct NcuMetricTableParse {
  std::vector<NcuMetricInfo> rows;
  std::string error;  // empty on success
};
NcuMetricTableParse ParseNcuMetricTable(absl::string_view tsv);

// Compute capability from "sm_90", "9.0", "90" or "sm90"; 0 when unrecognized.
int ParseComputeCapability(absl::string_view text);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_NCU_METRICS_H_
