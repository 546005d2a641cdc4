#include "services/judge/root_causes.h"

#include <optional>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernel_model/metric_names.h"
#include "services/judge/report_text.h"

namespace kagent {
namespace {

using judge_text::Micros;
using judge_text::Num;
using judge_text::Pct;
using kagent::v1::BottleneckCategory;
using kagent::v1::DiagnoseRequest;
using kagent::v1::Evidence;
using kagent::v1::RootCause;

// Builds a report incrementally, refusing to cite metrics that are not in the view.
class ReportBuilder {
 public:
  explicit ReportBuilder(const ProfileView& view) : view_(view) {}

  // Adds evidence for `metric` to `cause` when the metric is known; returns whether it
  // was added.
  bool Cite(RootCause* cause, const std::string& metric, const std::string& unit,
            const std::string& meaning) {
    std::optional<double> value = view_.Get(metric);
    if (!value) return false;
    Evidence* e = cause->add_evidence();
    e->set_metric(metric);
    e->set_value(*value);
    e->set_unit(unit);
    e->set_meaning(meaning);
    cited_.insert(metric);
    return true;
  }

  // Appends `cause` to the report when it cites at least one metric.
  void Add(RootCause cause) {
    if (cause.evidence().empty()) return;
    cause.set_source("rules");
    causes_.push_back(std::move(cause));
  }

  bool WasCited(const std::string& metric) const { return cited_.count(metric) > 0; }
  std::vector<RootCause>& causes() { return causes_; }

 private:
  const ProfileView& view_;
  std::set<std::string> cited_;
  std::vector<RootCause> causes_;
};

bool IsReuseOp(const std::string& op_class) {
  return op_class == "gemm" || op_class == "conv" || op_class == "attention" ||
         op_class == "bmm";
}

}  // namespace

std::vector<RootCause> WriteRootCauses(const DiagnoseRequest& request, const ProfileView& view,
                                       const Classification& k, const JudgeOptions& o) {
  const std::string op_class = request.op_signature().op_class();
  const double sm_count = request.gpu().sm_count();
  ReportBuilder rb(view);
  // The classification's values under the names the cause builders read.
  const std::string& compute_metric = k.compute_metric;
  const std::string& memory_metric = k.memory_metric;
  const std::optional<double>& compute = k.compute;
  const std::optional<double>& memory = k.memory;
  const std::optional<double>& efficiency = k.efficiency;
  const bool memory_side = k.memory_side;
  const std::optional<double>& useful = k.useful;
  const bool redundant_traffic = k.redundant_traffic;
  const double mean_launch_ns = k.mean_launch_ns;
  const std::optional<double>& gpu_busy = k.gpu_busy;
  const bool short_launches = k.short_launches;
  const bool mostly_idle = k.mostly_idle;
  const std::optional<double>& ctas = k.ctas;
  const bool grid_underfilled = k.grid_underfilled;
  const std::string& theoretical_metric = k.theoretical_metric;
  const std::optional<double>& theoretical = k.theoretical;
  const std::optional<std::string>& occupancy_limiter = k.occupancy_limiter;
  const BottleneckCategory primary = k.primary;
  const BottleneckCategory secondary = k.secondary;
  const std::string& memory_unit = k.memory_unit;
  const std::string& compute_unit = k.compute_unit;
  const std::optional<double>& tensor = k.tensor;
  const std::optional<double>& ffma = k.ffma;
  const auto& stalls = k.stalls;
  auto is = [&](BottleneckCategory c) { return k.Is(c); };

  // --- Root causes, one builder per category; emitted primary first, then secondary.
  auto memory_cause = [&]() {
    RootCause c;
    std::string text = absl::StrCat("Memory-bound: memory SOL ", Pct(*memory), " against compute SOL ",
                                    compute ? Pct(*compute) : std::string("unknown"));
    rb.Cite(&c, memory_metric, "%",
            "the busiest memory unit runs at this share of its sustained peak");
    if (compute) rb.Cite(&c, compute_metric, "%", "the busiest compute pipe is far less loaded");
    std::optional<double> dram = view.Get(metric::kDramThroughput);
    if (memory_unit == "dram_bandwidth" && dram && *dram >= o.dram_near_peak_pct) {
      absl::StrAppend(&text, "; DRAM throughput ", Pct(*dram),
                      ": the kernel streams from HBM at near peak, so only moving fewer bytes "
                      "can make it much faster");
      rb.Cite(&c, metric::kDramThroughput, "%", "HBM bandwidth in use: near the ceiling");
    } else if (memory_unit == "dram_bandwidth" && dram) {
      absl::StrAppend(&text, "; DRAM is the busiest memory unit at ", Pct(*dram),
                      ", below its ceiling: wider, coalesced accesses and more bytes in flight "
                      "can still raise it");
      rb.Cite(&c, metric::kDramThroughput, "%", "HBM bandwidth in use, with room left");
    } else if (memory_unit == "l2_bandwidth") {
      absl::StrAppend(&text, "; L2 is the busiest memory unit at ", Pct(*view.Get(metric::kL2Throughput)),
                      ": data is re-read through L2; keeping it in shared memory or registers, or "
                      "a better L2 access order, relieves it");
      rb.Cite(&c, metric::kL2Throughput, "%", "L2 bandwidth in use: the busiest memory unit");
      if (dram) rb.Cite(&c, metric::kDramThroughput, "%", "HBM bandwidth, below the L2 load");
    } else if (memory_unit == "l1_bandwidth") {
      absl::StrAppend(&text, "; L1/shared memory is the busiest memory unit at ",
                      Pct(*view.Get(metric::kL1Throughput)),
                      IsReuseOp(op_class)
                          ? ": the traffic is on chip (shared-memory staging of the MMA operands); "
                            "larger tiles or fewer shared-memory round trips per FLOP relieve it"
                          : ": the traffic is on chip; uncoalesced or redundant loads, or "
                            "shared-memory bank conflicts, load L1 more than the data requires");
      rb.Cite(&c, metric::kL1Throughput, "%", "L1TEX/shared-memory throughput: the busiest unit");
      if (dram) rb.Cite(&c, metric::kDramThroughput, "%", "HBM bandwidth, below the L1 load");
    }
    c.set_cause(text);
    rb.Add(std::move(c));
  };

  auto compute_cause = [&]() {
    RootCause c;
    std::string text = absl::StrCat("Compute-bound: compute SOL ", Pct(*compute), " against memory SOL ",
                                    memory ? Pct(*memory) : std::string("unknown"));
    rb.Cite(&c, compute_metric, "%", "the busiest compute pipe runs at this share of its peak");
    if (memory) rb.Cite(&c, memory_metric, "%", "the memory system is less loaded");
    if (compute_unit == "tensor_pipe") {
      absl::StrAppend(&text, "; the tensor pipe is active ", Pct(*tensor),
                      " of cycles: the MMA units are the limiter, so gains need fewer or "
                      "cheaper MMAs (lower precision) or better overlap of the rest");
      rb.Cite(&c, metric::kTensorPipe, "%", "tensor-core (HMMA) pipe activity: the limiter");
    } else if (compute_unit == "fma_pipe") {
      absl::StrAppend(&text, "; the math runs on the FP32 pipes",
                      tensor ? absl::StrCat(" while the tensor pipe is active ", Pct(*tensor), " of cycles")
                             : std::string(""),
                      ffma ? absl::StrCat(" (", Num(*ffma), " FFMA thread instructions)") : std::string(""));
      if (tensor) rb.Cite(&c, metric::kTensorPipe, "%", "tensor cores nearly idle");
      if (ffma) rb.Cite(&c, metric::kFfmaInst, "thread-instructions", "FP32 fused multiply-adds executed");
    }
    c.set_cause(text);
    rb.Add(std::move(c));
  };

  auto at_roofline_cause = [&]() {
    RootCause c;
    c.set_cause(absl::StrCat("At the roofline: efficiency ", Pct(*efficiency), " (",
                             memory_side ? "memory" : "compute", " SOL) is at or above ",
                             Pct(o.at_roofline_pct),
                             ": further gains need less work (fewer bytes or FLOPs, fusion), not "
                             "better scheduling"));
    rb.Cite(&c, memory_side ? memory_metric : compute_metric, "%",
            "at the hardware ceiling of this unit");
    if (memory_side) rb.Cite(&c, metric::kDramThroughput, "%", "HBM bandwidth in use");
    if (!memory_side) rb.Cite(&c, metric::kTensorPipe, "%", "tensor-core pipe activity");
    rb.Add(std::move(c));
  };

  auto launch_cause = [&]() {
    if (short_launches) {
      RootCause c;
      const bool tiny = mean_launch_ns < o.launch_bound_ns;
      c.set_cause(absl::StrCat(
          "Launch-bound: ", view.launches(), view.launches() == 1 ? " launch" : " launches",
          " averaging ", Micros(mean_launch_ns), " each (", Micros(view.total_duration_ns()),
          " in all)",
          tiny ? absl::StrCat(" is under ", Micros(o.launch_bound_ns),
                              " per launch, so the fixed cost of a launch (a few us of host, "
                              "driver and GPU front-end work) is comparable to the work itself")
               : absl::StrCat(": with ", o.many_launches, " or more launches under ",
                              Micros(o.many_launches_mean_ns),
                              " each, the per-launch costs (a few us each) add up; fewer, "
                              "fused launches remove them")));
      rb.Cite(&c, metric::kDuration, "ns", "mean GPU time of one launch of the diagnosed kernel");
      rb.Cite(&c, metric::kMeanLaunchDuration, "ns", "mean GPU time per launch over all kernels");
      rb.Cite(&c, metric::kLaunches, "count", "kernel launches in the profiled range");
      rb.Add(std::move(c));
    }
    if (mostly_idle) {
      RootCause c;
      c.set_cause(absl::StrCat("Overhead-bound: kernels keep the GPU busy only ", Pct(*gpu_busy),
                               " of the measured wall-clock median (",
                               Micros(view.total_duration_ns()), " of kernel time): host-side "
                               "work and gaps between launches dominate"));
      rb.Cite(&c, metric::kGpuBusy, "%", "kernel time over the wall-clock median");
      rb.Cite(&c, metric::kTotalKernelTime, "ns", "GPU time of all kernels");
      rb.Add(std::move(c));
    }
  };

  auto grid_cause = [&]() {
    RootCause c;
    const double idle = sm_count - *ctas;
    c.set_cause(absl::StrCat("Grid underfilled: ", Num(*ctas), " CTAs for ", Num(sm_count),
                             " SMs, so ", Num(idle), " SMs (", Pct(100.0 * idle / sm_count),
                             ") get no work; split the work into more, smaller CTAs"));
    rb.Cite(&c, metric::kGridSize, "CTAs", "CTAs launched, fewer than the GPU's SMs");
    rb.Cite(&c, metric::kWaves, "waves/SM", "under one wave: the GPU is never full");
    rb.Cite(&c, metric::kGridFill, "%", "CTAs per SM x 100");
    rb.Add(std::move(c));
  };

  auto occupancy_cause = [&]() {
    RootCause c;
    std::string name = occupancy_limiter.value_or("");
    std::string text = absl::StrCat("Occupancy-limited", name.empty() ? "" : " by " + name, ": at most ",
                                    Pct(*theoretical), " of the warp slots can be filled");
    if (auto achieved = view.Get(metric::kAchievedOccupancy)) {
      absl::StrAppend(&text, " (achieved ", Pct(*achieved), ")");
    }
    absl::StrAppend(&text, ", too few warps to hide latency");
    std::vector<std::string> limits;
    for (const auto& [m, label] : {std::pair{metric::kLimitRegisters, "registers"},
                                   std::pair{metric::kLimitSharedMem, "shared memory"},
                                   std::pair{metric::kLimitWarps, "warps"},
                                   std::pair{metric::kLimitBlocks, "block limit"}}) {
      if (auto v = view.Get(m)) limits.push_back(absl::StrCat(label, " ", Num(*v)));
    }
    if (!limits.empty()) {
      absl::StrAppend(&text, "; resident blocks per SM allowed by ", absl::StrJoin(limits, ", "));
    }
    if (name == "registers") {
      if (auto regs = view.Get(metric::kRegistersPerThread)) {
        absl::StrAppend(&text, "; ", Num(*regs), " registers per thread");
      }
      rb.Cite(&c, metric::kLimitRegisters, "blocks/SM", "blocks per SM the register file allows: the lowest limit");
      rb.Cite(&c, metric::kRegistersPerThread, "registers/thread", "register footprint per thread");
    } else if (name == "shared_memory") {
      rb.Cite(&c, metric::kLimitSharedMem, "blocks/SM", "blocks per SM shared memory allows: the lowest limit");
      rb.Cite(&c, metric::kSharedMemDynamic, "bytes/block", "dynamic shared memory per block");
      rb.Cite(&c, metric::kSharedMemStatic, "bytes/block", "static shared memory per block");
    } else if (name == "blocks_per_sm") {
      absl::StrAppend(&text, "; blocks are too small to fill the SM within the per-SM block limit");
      rb.Cite(&c, metric::kLimitBlocks, "blocks/SM", "hardware limit on resident blocks: the lowest limit");
      rb.Cite(&c, metric::kBlockSize, "threads", "threads per block: small blocks");
    } else if (name == "warps") {
      rb.Cite(&c, metric::kLimitWarps, "blocks/SM", "blocks per SM the warp slots allow: the lowest limit");
      rb.Cite(&c, metric::kBlockSize, "threads", "threads per block");
    }
    c.set_cause(text);
    rb.Cite(&c, theoretical_metric, "%", "the most warps that can be resident, % of the SM's warp slots");
    rb.Cite(&c, metric::kAchievedOccupancy, "%", "warps actually resident on average");
    rb.Add(std::move(c));
  };

  auto latency_cause = [&]() {
    RootCause c;
    std::string text = absl::StrCat("Underutilized: memory SOL ", memory ? Pct(*memory) : "unknown",
                                    " and compute SOL ", compute ? Pct(*compute) : "unknown",
                                    " are both under ", Pct(o.bound_sol_pct),
                                    ": neither the memory system nor the math pipes are busy, warps "
                                    "mostly wait");
    if (!stalls.empty()) {
      absl::StrAppend(&text, ", most on ", stalls.front().second->name, " (",
                      Num(stalls.front().first), " cycles per issued instruction)");
    }
    c.set_cause(text);
    if (memory) rb.Cite(&c, memory_metric, "%", "memory side well under its peak");
    if (compute) rb.Cite(&c, compute_metric, "%", "compute side well under its peak");
    rb.Add(std::move(c));
  };

  auto redundant_traffic_cause = [&]() {
    RootCause c;
    c.set_cause(absl::StrCat(
        "Redundant traffic: ", memory_side ? "memory" : "compute", " SOL is ",
        Pct(*efficiency), " but the op's own ", memory_side ? "bytes" : "FLOPs", " move at only ",
        Pct(*useful), " of the ceiling (arithmetic-intensity roofline): the unit is busy with "
        "work the op does not need (re-reads through L1/L2, recomputation); keep reused data "
        "in registers or shared memory, or retile so each input is read once"));
    rb.Cite(&c, memory_side ? memory_metric : compute_metric, "%", "the busiest unit");
    rb.Cite(&c, memory_side ? metric::kAchievedBandwidthPct : metric::kAchievedFlopsPct, "%",
            "the op's minimum over the kernel time, against the peak");
    rb.Add(std::move(c));
  };

  auto emit = [&](BottleneckCategory category) {
    switch (category) {
      case kagent::v1::BOTTLENECK_MEMORY_BOUND:
        memory_cause();
        break;
      case kagent::v1::BOTTLENECK_COMPUTE_BOUND:
        compute_cause();
        break;
      case kagent::v1::BOTTLENECK_AT_ROOFLINE:
        at_roofline_cause();
        break;
      case kagent::v1::BOTTLENECK_LAUNCH_BOUND:
        launch_cause();
        break;
      case kagent::v1::BOTTLENECK_GRID_UNDERFILLED:
        grid_cause();
        break;
      case kagent::v1::BOTTLENECK_OCCUPANCY_LIMITED:
        occupancy_cause();
        break;
      case kagent::v1::BOTTLENECK_LATENCY_BOUND:
        latency_cause();
        break;
      default:
        break;
    }
  };
  emit(primary);
  if (secondary != kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED) emit(secondary);
  if (redundant_traffic) redundant_traffic_cause();

  // --- Supporting observations.
  // Occupancy capped by a resource while the SOL is high enough that it is not the
  // bottleneck (it could still buy part of the remaining headroom).
  if (theoretical && *theoretical < o.low_occupancy_pct &&
      !is(kagent::v1::BOTTLENECK_OCCUPANCY_LIMITED) && primary != kagent::v1::BOTTLENECK_AT_ROOFLINE &&
      occupancy_limiter && efficiency) {
    RootCause c;
    std::string text = absl::StrCat("Occupancy is capped at ", Pct(*theoretical), " by ",
                                    *occupancy_limiter);
    if (*occupancy_limiter == "registers") {
      if (auto regs = view.Get(metric::kRegistersPerThread)) {
        absl::StrAppend(&text, " (", Num(*regs), " registers per thread)");
      }
      rb.Cite(&c, metric::kRegistersPerThread, "registers/thread", "register footprint per thread");
      rb.Cite(&c, metric::kLimitRegisters, "blocks/SM", "blocks per SM the register file allows");
    } else if (*occupancy_limiter == "shared_memory") {
      rb.Cite(&c, metric::kLimitSharedMem, "blocks/SM", "blocks per SM shared memory allows");
    } else if (*occupancy_limiter == "blocks_per_sm") {
      rb.Cite(&c, metric::kLimitBlocks, "blocks/SM", "hardware limit on resident blocks");
    } else if (*occupancy_limiter == "warps") {
      rb.Cite(&c, metric::kLimitWarps, "blocks/SM", "blocks per SM the warp slots allow");
    }
    absl::StrAppend(&text, ", yet the kernel reaches ", Pct(*efficiency),
                    " of its roofline: occupancy is not what bounds it; more resident warps "
                    "could still hide part of the latency behind the remaining ",
                    Pct(100.0 - *efficiency));
    c.set_cause(text);
    rb.Cite(&c, theoretical_metric, "%", "the most warps that can be resident, % of the SM's warp slots");
    rb.Add(std::move(c));
  }
  // Dominant stall reasons (the top one, and the second when at least half as large).
  for (size_t i = 0; i < stalls.size() && i < 2; ++i) {
    if (i == 1 && stalls[1].first < 0.5 * stalls[0].first) break;
    const StallReason& s = *stalls[i].second;
    RootCause c;
    c.set_cause(absl::StrCat(i == 0 ? "Warps stall most on " : "Next stall reason: ", s.name, " (",
                             Num(stalls[i].first), " cycles per issued instruction): ", s.meaning));
    rb.Cite(&c, s.metric, "cycles/issue", s.meaning);
    rb.Add(std::move(c));
  }
  // Achieved occupancy far under theoretical without a resource limit (tail, imbalance).
  if (auto achieved = view.Get(metric::kAchievedOccupancy);
      achieved && theoretical && !is(kagent::v1::BOTTLENECK_OCCUPANCY_LIMITED) &&
      !grid_underfilled && *achieved < o.achieved_over_theoretical_min * *theoretical) {
    RootCause c;
    c.set_cause(absl::StrCat("Achieved occupancy ", Pct(*achieved), " is well under the theoretical ",
                             Pct(*theoretical),
                             ": warps retire unevenly (a partial last wave, too few CTAs per SM, "
                             "or load imbalance)"));
    rb.Cite(&c, metric::kAchievedOccupancy, "%", "warps actually resident on average");
    rb.Cite(&c, theoretical_metric, "%", "the most warps that could be resident");
    rb.Cite(&c, metric::kWaves, "waves/SM", "waves of CTAs per SM");
    rb.Add(std::move(c));
  }
  // DRAM traffic against the op's minimum.
  if (auto ratio = view.Get(metric::kBytesOverMin); ratio && *ratio >= o.excess_bytes_ratio) {
    RootCause c;
    c.set_cause(absl::StrCat("DRAM traffic is ", absl::StrFormat("%.2f", *ratio),
                             "x the minimum the op needs: data is fetched more than once "
                             "(uncoalesced access, poor tile reuse or L2 misses)"));
    rb.Cite(&c, metric::kBytesOverMin, "x", "DRAM bytes read+written over the op's minimum bytes");
    rb.Cite(&c, metric::kDramBytesRead, "bytes", "bytes read from DRAM");
    rb.Cite(&c, metric::kDramBytesWrite, "bytes", "bytes written to DRAM");
    rb.Add(std::move(c));
  }
  // Poor L2 reuse on ops that reuse tiles.
  if (auto hit = view.Get(metric::kL2HitRate); hit && IsReuseOp(op_class) && *hit < o.low_l2_hit_pct) {
    RootCause c;
    c.set_cause(absl::StrCat("L2 hit rate ", Pct(*hit), " on a ", op_class,
                             ": tiles shared between CTAs are re-fetched from DRAM; a grouped "
                             "(swizzled) program order keeps them in L2"));
    rb.Cite(&c, metric::kL2HitRate, "%", "share of L2 sector lookups that hit");
    rb.Add(std::move(c));
  }
  // Tensor cores idle on a GEMM-like op.
  if (tensor && IsReuseOp(op_class) && *tensor < o.tensor_idle_pct &&
      !rb.WasCited(metric::kTensorPipe)) {
    RootCause c;
    c.set_cause(absl::StrCat("Tensor cores are nearly idle (", Pct(*tensor), " of cycles) on a ", op_class,
                             ": the MMAs run on the FP32 pipes (fp32 operands without tf32, or tile "
                             "shapes that are not multiples of 16)"));
    rb.Cite(&c, metric::kTensorPipe, "%", "tensor-core pipe activity");
    rb.Cite(&c, metric::kFfmaInst, "thread-instructions", "FP32 fused multiply-adds executed");
    rb.Add(std::move(c));
  }
  // Several kernels: say which one is diagnosed.
  if (view.groups().size() > 1) {
    RootCause c;
    std::vector<std::string> others;
    for (size_t i = 1; i < view.groups().size() && i < 4; ++i) {
      const KernelGroup& g = view.groups()[i];
      others.push_back(absl::StrCat(g.name, " ", Pct(100.0 * g.total_ns / view.total_duration_ns())));
    }
    c.set_cause(absl::StrCat("The profile holds ", view.groups().size(), " kernels (", view.launches(),
                             " launches, ", Micros(view.total_duration_ns()), " in all); ",
                             view.dominant_kernel(), " takes ", Pct(100.0 * view.dominant_share()),
                             " of the GPU time and is the one diagnosed; then ",
                             absl::StrJoin(others, ", ")));
    rb.Cite(&c, metric::kDominantShare, "%", "share of GPU time in the diagnosed kernel");
    rb.Cite(&c, metric::kDistinctKernels, "count", "distinct kernels in the profile");
    rb.Cite(&c, metric::kLaunches, "count", "kernel launches in the profile");
    rb.Add(std::move(c));
  }
  return std::move(rb.causes());
}

}  // namespace kagent
