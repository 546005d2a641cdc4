// The one list of metric names: the Nsight Compute metrics that the profiler, the judge,
// the analyzer and the brains refer to by name, and the few values the judge derives
// itself (prefix "kagent__"). The full set the profiler requests, with each metric's
// aggregation, is ncu_metrics.tsv.
//
// The profiler stores every collected metric in KernelMetrics.values under its exact
// Nsight Compute name. Any of them may be missing (CUPTI backend, another architecture,
// a metric ncu refused to collect): readers must treat absence as "unknown", never as 0,
// and never cite a missing metric.
#ifndef KAGENT_KERNEL_MODEL_METRIC_NAMES_H_
#define KAGENT_KERNEL_MODEL_METRIC_NAMES_H_

namespace kagent::metric {

// Time and clocks.
inline constexpr char kDuration[] = "gpu__time_duration.sum";  // ns
inline constexpr char kSmClock[] = "sm__cycles_elapsed.avg.per_second";  // Hz

// Speed of light (SOL): the busiest unit on each side, % of its sustained peak.
inline constexpr char kComputeSol[] = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr char kMemorySol[] =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";

// Memory hierarchy.
inline constexpr char kDramThroughput[] = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr char kDramBytesRead[] = "dram__bytes_read.sum";
inline constexpr char kDramBytesWrite[] = "dram__bytes_write.sum";
inline constexpr char kL2HitRate[] = "lts__t_sector_hit_rate.pct";
inline constexpr char kL1HitRate[] = "l1tex__t_sector_hit_rate.pct";
inline constexpr char kL2Throughput[] = "lts__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr char kL1Throughput[] = "l1tex__throughput.avg.pct_of_peak_sustained_active";

// Occupancy and launch configuration.
inline constexpr char kAchievedOccupancy[] = "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr char kTheoreticalOccupancy[] = "sm__maximum_warps_per_active_cycle_pct";
inline constexpr char kLimitRegisters[] = "launch__occupancy_limit_registers";
inline constexpr char kLimitSharedMem[] = "launch__occupancy_limit_shared_mem";
inline constexpr char kLimitBlocks[] = "launch__occupancy_limit_blocks";
inline constexpr char kLimitWarps[] = "launch__occupancy_limit_warps";
inline constexpr char kRegistersPerThread[] = "launch__registers_per_thread";
inline constexpr char kSharedMemStatic[] = "launch__shared_mem_per_block_static";
inline constexpr char kSharedMemDynamic[] = "launch__shared_mem_per_block_dynamic";
inline constexpr char kGridSize[] = "launch__grid_size";
inline constexpr char kBlockSize[] = "launch__block_size";
inline constexpr char kWaves[] = "launch__waves_per_multiprocessor";

// Warp stall reasons, cycles per issued instruction.
inline constexpr char kStallLongScoreboard[] =
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio";
inline constexpr char kStallShortScoreboard[] =
    "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio";
inline constexpr char kStallBarrier[] =
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio";
inline constexpr char kStallMemoryThrottle[] =
    "smsp__average_warps_issue_stalled_memory_throttle_per_issue_active.ratio";
inline constexpr char kStallMioThrottle[] =
    "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio";
inline constexpr char kStallLgThrottle[] =
    "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio";
inline constexpr char kStallMathPipeThrottle[] =
    "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio";
inline constexpr char kStallWait[] = "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio";
inline constexpr char kStallNotSelected[] =
    "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio";
inline constexpr char kStallNoInstruction[] =
    "smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio";

// Pipes and instruction mix.
inline constexpr char kTensorPipe[] = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr char kFaddInst[] = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
inline constexpr char kFmulInst[] = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
inline constexpr char kFfmaInst[] = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";

// Values the judge derives (documented in docs/judge.md). They live in the same map as
// the ncu metrics so the analyzer's preconditions can use them.
inline constexpr char kLaunches[] = "kagent__launches";                  // count
inline constexpr char kDistinctKernels[] = "kagent__distinct_kernels";  // count
inline constexpr char kTotalKernelTime[] = "kagent__total_kernel_time_ns";
inline constexpr char kMeanLaunchDuration[] = "kagent__mean_launch_duration_ns";
inline constexpr char kDominantShare[] = "kagent__dominant_kernel_share_pct";
inline constexpr char kGridFill[] = "kagent__grid_fill_pct";  // CTAs / SMs x 100
inline constexpr char kGpuBusy[] = "kagent__gpu_busy_pct";    // kernel time / wall median
inline constexpr char kBytesOverMin[] = "kagent__dram_bytes_over_min_bytes";
inline constexpr char kAchievedBandwidthPct[] = "kagent__achieved_dram_bandwidth_pct";
inline constexpr char kAchievedFlopsPct[] = "kagent__achieved_flops_pct";
inline constexpr char kDerivedTheoreticalOccupancy[] = "kagent__theoretical_occupancy_pct";

}  // namespace kagent::metric

#endif  // KAGENT_KERNEL_MODEL_METRIC_NAMES_H_
