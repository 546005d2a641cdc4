#include "services/judge/classification.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernel_model/metric_names.h"
#include "kernel_model/occupancy.h"

namespace kagent {

using kagent::v1::BottleneckCategory;
using kagent::v1::DiagnoseRequest;

namespace {

constexpr StallReason kStalls[] = {
    {metric::kStallLongScoreboard, "long_scoreboard",
     "waiting for L1TEX results (global, local or texture memory): memory latency is "
     "exposed; more warps in flight, more independent loads or deeper pipelining hide it"},
    {metric::kStallShortScoreboard, "short_scoreboard",
     "waiting for MIO results (shared memory, special math functions): shared-memory "
     "latency or bank conflicts"},
    {metric::kStallBarrier, "barrier",
     "waiting at a block-wide barrier: warps of a CTA arrive unevenly or the CTA is too "
     "large for its synchronization pattern"},
    {metric::kStallMemoryThrottle, "memory_throttle",
     "the memory pipeline is saturated with pending requests"},
    {metric::kStallMioThrottle, "mio_throttle",
     "the MIO queue (shared memory, special math) is full: too many shared-memory "
     "instructions"},
    {metric::kStallLgThrottle, "lg_throttle",
     "the local/global queue is full: many small memory instructions; wider (vectorized) "
     "accesses issue fewer of them"},
    {metric::kStallMathPipeThrottle, "math_pipe_throttle",
     "the math pipe is busy: the kernel is limited by arithmetic throughput"},
    {metric::kStallWait, "wait", "fixed-latency dependencies between instructions"},
    {metric::kStallNotSelected, "not_selected",
     "eligible warps were not picked: there are more ready warps than issue slots"},
    {metric::kStallNoInstruction, "no_instruction",
     "instruction fetch misses: the code is too large for the instruction cache"},
};

}  // namespace

absl::StatusOr<Classification> Classify(const DiagnoseRequest& request, const ProfileView& view,
                                        const JudgeOptions& o) {
  const double sm_count = request.gpu().sm_count();

  // --- Speed of light. ncu's SOL metrics, else the op signature's achieved fractions.
  std::string compute_metric = metric::kComputeSol;
  std::string memory_metric = metric::kMemorySol;
  std::optional<double> compute = view.Get(compute_metric);
  std::optional<double> memory = view.Get(memory_metric);
  if (!compute && !memory) {
    compute_metric = metric::kAchievedFlopsPct;
    memory_metric = metric::kAchievedBandwidthPct;
    compute = view.Get(compute_metric);
    memory = view.Get(memory_metric);
  }
  std::optional<double> efficiency;
  if (compute || memory) efficiency = std::max(compute.value_or(0), memory.value_or(0));
  const bool memory_side = memory.value_or(-1) >= compute.value_or(-1);  // ties: memory

  // --- Flags, one per rule.
  // SOL counts cache traffic: a kernel re-reading overlapping data through L1/L2 can
  // saturate a unit while the op's own bytes and FLOPs (its arithmetic-intensity
  // roofline, from the op signature) move far below the ceiling. Such a kernel is not at
  // its roofline; it does redundant work (seen on the H200: a max-pool at 99% memory SOL
  // and 46% of the bytes-over-time roofline, torch.compile 1.8x faster).
  std::optional<double> useful;
  if (compute_metric == metric::kComputeSol) {
    std::optional<double> bw = view.Get(metric::kAchievedBandwidthPct);
    std::optional<double> fl = view.Get(metric::kAchievedFlopsPct);
    if (bw || fl) useful = std::max(bw.value_or(0), fl.value_or(0));
  }
  const bool redundant_traffic = efficiency && *efficiency >= o.at_roofline_pct && useful &&
                                 *useful < o.bound_sol_pct;
  const bool at_roofline = efficiency && *efficiency >= o.at_roofline_pct && !redundant_traffic;

  const double mean_launch_ns = view.total_duration_ns() / view.launches();
  std::optional<double> gpu_busy = view.Get(metric::kGpuBusy);
  const bool short_launches =
      view.total_duration_ns() > 0 &&
      (mean_launch_ns < o.launch_bound_ns ||
       (view.launches() >= o.many_launches && mean_launch_ns < o.many_launches_mean_ns));
  const bool mostly_idle = gpu_busy && *gpu_busy < o.min_gpu_busy_pct;
  const bool launch_bound = short_launches || mostly_idle;

  const bool sol_bound = efficiency && *efficiency >= o.bound_sol_pct;
  const BottleneckCategory sol_category = memory_side ? kagent::v1::BOTTLENECK_MEMORY_BOUND
                                                      : kagent::v1::BOTTLENECK_COMPUTE_BOUND;
  const bool other_side_bound =
      sol_bound && (memory_side ? compute.value_or(0) : memory.value_or(0)) >= o.bound_sol_pct;

  std::optional<double> ctas = view.Get(metric::kGridSize);
  const bool grid_underfilled = ctas && *ctas < sm_count;

  std::string theoretical_metric;
  std::optional<double> theoretical = TheoreticalOccupancy(view, &theoretical_metric);
  std::optional<std::string> occupancy_limiter = OccupancyLimiter(view);
  const bool occupancy_limited =
      theoretical && *theoretical < o.low_occupancy_pct &&
      (!efficiency || *efficiency < o.occupancy_matters_below_pct);

  const bool latency_bound = efficiency && *efficiency < o.bound_sol_pct;

  std::vector<BottleneckCategory> fired;
  if (at_roofline) fired.push_back(kagent::v1::BOTTLENECK_AT_ROOFLINE);
  if (launch_bound) fired.push_back(kagent::v1::BOTTLENECK_LAUNCH_BOUND);
  if (sol_bound) fired.push_back(sol_category);
  if (other_side_bound) {
    fired.push_back(memory_side ? kagent::v1::BOTTLENECK_COMPUTE_BOUND
                                : kagent::v1::BOTTLENECK_MEMORY_BOUND);
  }
  if (grid_underfilled) fired.push_back(kagent::v1::BOTTLENECK_GRID_UNDERFILLED);
  if (occupancy_limited) fired.push_back(kagent::v1::BOTTLENECK_OCCUPANCY_LIMITED);
  if (latency_bound) fired.push_back(kagent::v1::BOTTLENECK_LATENCY_BOUND);
  if (fired.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot diagnose kernel '", view.dominant_kernel(), "': the profile has no SOL metrics (",
        metric::kComputeSol, ", ", metric::kMemorySol,
        "), the request has no op_signature flops/min_bytes to derive them, and neither the "
        "launch nor the grid rule applies"));
  }
  const BottleneckCategory primary = fired[0];
  const BottleneckCategory secondary =
      fired.size() > 1 ? fired[1] : kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED;
  auto is = [&](BottleneckCategory c) { return primary == c || secondary == c; };

  // --- Sub-diagnoses used for the limiter and the causes.
  // The limiting memory unit. DRAM when its throughput is near its ceiling (>= 80%) or
  // makes up the memory SOL (>= 90% of it): every DRAM byte also crosses L2, so a busier
  // L2 does not make a streaming kernel L2-bound. Otherwise the busier of L2 and L1.
  std::string memory_unit;
  {
    std::optional<double> dram = view.Get(metric::kDramThroughput);
    if (dram && (*dram >= o.dram_near_peak_pct || (memory && *dram >= 0.9 * *memory))) {
      memory_unit = "dram_bandwidth";
    } else {
      std::optional<double> best;
      for (const auto& [name, unit] : {std::pair{metric::kL2Throughput, "l2_bandwidth"},
                                       std::pair{metric::kL1Throughput, "l1_bandwidth"},
                                       std::pair{metric::kDramThroughput, "dram_bandwidth"}}) {
        if (auto v = view.Get(name); v && (!best || *v > *best)) {
          best = v;
          memory_unit = unit;
        }
      }
    }
  }
  std::optional<double> tensor = view.Get(metric::kTensorPipe);
  std::optional<double> ffma = view.Get(metric::kFfmaInst);
  std::string compute_unit;
  if (tensor && *tensor >= o.tensor_idle_pct) {
    compute_unit = "tensor_pipe";
  } else if (ffma && *ffma > 0) {
    compute_unit = "fma_pipe";
  }
  // Top stall reasons.
  std::vector<std::pair<double, const StallReason*>> stalls;
  for (const StallReason& s : kStalls) {
    if (auto v = view.Get(s.metric); v && *v >= o.min_stall_cycles) stalls.emplace_back(*v, &s);
  }
  std::stable_sort(stalls.begin(), stalls.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });

  // --- Limiter.
  std::string limiter;
  if (is(kagent::v1::BOTTLENECK_OCCUPANCY_LIMITED) && primary != kagent::v1::BOTTLENECK_AT_ROOFLINE) {
    limiter = occupancy_limiter.value_or("");
  } else {
    BottleneckCategory basis = primary == kagent::v1::BOTTLENECK_AT_ROOFLINE ? sol_category : primary;
    switch (basis) {
      case kagent::v1::BOTTLENECK_MEMORY_BOUND:
        limiter = memory_unit;
        break;
      case kagent::v1::BOTTLENECK_COMPUTE_BOUND:
        limiter = compute_unit;
        break;
      case kagent::v1::BOTTLENECK_LAUNCH_BOUND:
        limiter = "launch_overhead";
        break;
      case kagent::v1::BOTTLENECK_GRID_UNDERFILLED:
        limiter = "grid_size";
        break;
      case kagent::v1::BOTTLENECK_LATENCY_BOUND:
        limiter = stalls.empty() ? "" : stalls.front().second->name;
        break;
      default:
        break;
    }
  }

  Classification k;
  k.compute_metric = compute_metric;
  k.memory_metric = memory_metric;
  k.compute = compute;
  k.memory = memory;
  k.efficiency = efficiency;
  k.memory_side = memory_side;
  k.useful = useful;
  k.redundant_traffic = redundant_traffic;
  k.mean_launch_ns = mean_launch_ns;
  k.gpu_busy = gpu_busy;
  k.short_launches = short_launches;
  k.mostly_idle = mostly_idle;
  k.sol_category = sol_category;
  k.ctas = ctas;
  k.grid_underfilled = grid_underfilled;
  k.theoretical_metric = theoretical_metric;
  k.theoretical = theoretical;
  k.occupancy_limiter = occupancy_limiter;
  k.primary = primary;
  k.secondary = secondary;
  k.memory_unit = memory_unit;
  k.compute_unit = compute_unit;
  k.tensor = tensor;
  k.ffma = ffma;
  k.stalls = std::move(stalls);
  k.limiter = limiter;
  return k;
}

}  // namespace kagent
