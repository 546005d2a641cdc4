#include "kernel_model/ncu_metrics.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>

namespace kagent {
namespace {

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST_CASE("The embedded metric table parses and holds KernelAgent's set", "[ncu_metrics]") {
  const auto& table = NcuMetricTable();
  REQUIRE(table.size() >= 29);
  std::set<std::string> names;
  for (const auto& info : table) {
    CHECK_FALSE(info.meaning.empty());
    CHECK(names.insert(info.name).second);  // no duplicates
  }
  const std::vector<std::string> h200 = NcuMetricsForArch(90);
  for (const char* name : {
           "gpu__time_duration.sum",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__bytes_read.sum",
           "dram__bytes_write.sum",
           "lts__t_sector_hit_rate.pct",
           "l1tex__t_sector_hit_rate.pct",
           "lts__throughput.avg.pct_of_peak_sustained_elapsed",
           "l1tex__throughput.avg.pct_of_peak_sustained_active",
           "sm__warps_active.avg.pct_of_peak_sustained_active",
           "sm__maximum_warps_per_active_cycle_pct",
           "launch__occupancy_limit_registers",
           "launch__occupancy_limit_shared_mem",
           "launch__occupancy_limit_blocks",
           "launch__occupancy_limit_warps",
           "launch__registers_per_thread",
           "launch__shared_mem_per_block_static",
           "launch__shared_mem_per_block_dynamic",
           "launch__grid_size",
           "launch__block_size",
           "launch__waves_per_multiprocessor",
           "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
           "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio",
           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
           "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
           "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
           "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
           "sm__cycles_elapsed.avg.per_second",
       }) {
    INFO(name);
    CHECK(Contains(h200, name));
  }
}

TEST_CASE("Stall reasons follow the architecture", "[ncu_metrics]") {
  const std::string memory_throttle =
      "smsp__average_warps_issue_stalled_memory_throttle_per_issue_active.ratio";
  const std::string gmma = "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio";
  CHECK(Contains(NcuMetricsForArch(80), memory_throttle));
  CHECK_FALSE(Contains(NcuMetricsForArch(90), memory_throttle));  // absent on the H200
  CHECK(Contains(NcuMetricsForArch(90), gmma));
  CHECK_FALSE(Contains(NcuMetricsForArch(80), gmma));
}

TEST_CASE("The tensor-pipe metric is chosen per architecture", "[ncu_metrics]") {
  const std::string hmma = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
  const std::string blackwell =
      "sm__pipe_tensor_subpipe_hmma_cycles_active.avg.pct_of_peak_sustained_active";
  CHECK(Contains(NcuMetricsForArch(80), hmma));
  CHECK(Contains(NcuMetricsForArch(89), hmma));
  CHECK(Contains(NcuMetricsForArch(90), hmma));
  CHECK_FALSE(Contains(NcuMetricsForArch(90), blackwell));
  CHECK(Contains(NcuMetricsForArch(100), blackwell));
  CHECK_FALSE(Contains(NcuMetricsForArch(100), hmma));
  CHECK_FALSE(Contains(NcuMetricsForArch(75), hmma));
}

TEST_CASE("Metrics aggregate by sum or by duration-weighted mean", "[ncu_metrics]") {
  CHECK(AggregationFor("gpu__time_duration.sum") == MetricAggregation::kSum);
  CHECK(AggregationFor("dram__bytes_read.sum") == MetricAggregation::kSum);
  CHECK(AggregationFor("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum") ==
        MetricAggregation::kSum);
  CHECK(AggregationFor("sm__throughput.avg.pct_of_peak_sustained_elapsed") ==
        MetricAggregation::kDurationWeightedMean);
  CHECK(AggregationFor("sm__cycles_elapsed.avg.per_second") ==
        MetricAggregation::kDurationWeightedMean);
  CHECK(AggregationFor("launch__grid_size") == MetricAggregation::kDurationWeightedMean);
  // Outside the table: the name decides.
  CHECK(AggregationFor("lts__t_bytes.sum") == MetricAggregation::kSum);
  CHECK(AggregationFor("dram__throughput.sum.pct_of_peak_sustained_elapsed") ==
        MetricAggregation::kDurationWeightedMean);
  CHECK(AggregationFor("sm__cycles_elapsed.sum.per_second") ==
        MetricAggregation::kDurationWeightedMean);
  CHECK(AggregationFor("dram__bytes_read.avg") == MetricAggregation::kDurationWeightedMean);
}

TEST_CASE("The metric table format is checked", "[ncu_metrics]") {
  NcuMetricTableParse ok = ParseNcuMetricTable(
      "# comment\n\na.sum\tsum\tall\tbytes\tA.\nb.pct\twmean\t80-89\t%\tB.\nc\twmean\t90-\t%\tC.\n");
  REQUIRE(ok.error.empty());
  REQUIRE(ok.rows.size() == 3);
  CHECK(ok.rows[1].min_cc == 80);
  CHECK(ok.rows[1].max_cc == 89);
  CHECK(ok.rows[2].AppliesTo(100));
  CHECK_FALSE(ok.rows[2].AppliesTo(89));
  CHECK(ParseNcuMetricTable("a\tsum\tall\n").error.find("line 1") != std::string::npos);
  CHECK(ParseNcuMetricTable("a\tavg\tall\tx\ty\n").error.find("sum or wmean") != std::string::npos);
  CHECK(ParseNcuMetricTable("a\tsum\tsm90\tx\ty\n").error.find("bad arch") != std::string::npos);
}

TEST_CASE("Compute capabilities parse from several spellings", "[ncu_metrics]") {
  CHECK(ParseComputeCapability("sm_90") == 90);
  CHECK(ParseComputeCapability("9.0") == 90);
  CHECK(ParseComputeCapability("8.9") == 89);
  CHECK(ParseComputeCapability("sm_100") == 100);
  CHECK(ParseComputeCapability("10.0") == 100);
  CHECK(ParseComputeCapability("sm_90a") == 90);
  CHECK(ParseComputeCapability("gpu") == 0);
}

}  // namespace
}  // namespace kagent
