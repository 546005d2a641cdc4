// The judge: a deterministic roofline diagnosis of a profiled kernel.
//
// Given the profile (kagent.v1.HardwareMetrics), the GPU's spec and optionally the op
// signature and the timing, Judge::Diagnose classifies the bottleneck of the dominant
// kernel into a primary and a secondary BottleneckCategory, names the limiter, and writes
// root causes each citing the metrics (name, value, unit, meaning) the rule read. Every
// rule and threshold is listed in docs/judge.md; the thresholds live in JudgeOptions.
//
// Rules, in priority order (the first that fires is primary, the next one secondary):
//   1. at-roofline       efficiency = max(compute SOL, memory SOL) >= 95%
//   2. launch-bound      mean kernel duration per launch < 10 us, or >= 3 launches with a
//                        mean < 20 us, or kernels keep the GPU busy < 50% of the measured
//                        wall-clock median
//   3. memory-/compute-bound  the larger SOL >= 60% (ties go to memory); when both are
//                        >= 60% the other side follows as the next category
//   4. grid-underfilled  fewer CTAs than SMs (launch__grid_size < sm_count)
//   5. occupancy-limited theoretical occupancy < 50% while efficiency < 80%; the limiter is
//                        the smallest launch__occupancy_limit_* value
//   6. latency-bound     both SOL < 60%
// When SOL metrics are missing (CUPTI backend), the achieved DRAM bandwidth and FLOP/s
// of the op signature over the kernel time stand in for them. classification.h fires the
// rules; root_causes.h writes the causes they cite.
//
// Without a profile (no kernels: a CPU worker, a failed or skipped profile) there is no
// rule to run: the report has no category and the narrator narrates from the measured
// times alone (Judge::Diagnose; docs/llm.md).
//
// A narrator (see narrator.h) writes BottleneckReport.narrative and may add root causes;
// its citations are validated and it can change nothing else. A request whose job chose
// its LLM agents without "narrate" (DiagnoseRequest.llm_agents) gets the heuristic one.
//
// Thread-safety: Diagnose is const and may be called concurrently when the narrator is
// thread-safe.
#ifndef KAGENT_SERVICES_JUDGE_JUDGE_H_
#define KAGENT_SERVICES_JUDGE_JUDGE_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "kagent/v1/common.pb.h"
#include "kagent/v1/judge_service.pb.h"
#include "kernel_model/profile_view.h"
#include "services/judge/narrator.h"

namespace kagent {

// Thresholds of the rules. Defaults are the documented ones (docs/judge.md).
struct JudgeOptions {
  // Efficiency (the larger SOL) at or above which the kernel is at its roofline.
  double at_roofline_pct = 95.0;
  // A SOL at or above this makes the kernel memory- or compute-bound; with both below
  // it the kernel is latency-bound (underutilized).
  double bound_sol_pct = 60.0;
  // Low occupancy only counts as a bottleneck while efficiency is below this: a GEMM at
  // 85% compute SOL with 12% occupancy is not occupancy-limited.
  double occupancy_matters_below_pct = 80.0;
  // Theoretical occupancy below this means a resource caps the resident warps.
  double low_occupancy_pct = 50.0;
  // Mean kernel duration per launch below this is launch-bound (launch cost is a few us).
  double launch_bound_ns = 10000.0;
  // Many short kernels: at least this many launches with a mean below
  // many_launches_mean_ns are launch-bound too.
  int many_launches = 3;
  double many_launches_mean_ns = 20000.0;
  // Kernel time below this share of the wall-clock median is overhead-bound.
  double min_gpu_busy_pct = 50.0;
  // DRAM throughput at or above this is "near peak".
  double dram_near_peak_pct = 80.0;
  // Achieved occupancy below this fraction of theoretical is flagged (tail, imbalance).
  double achieved_over_theoretical_min = 0.7;
  // L2 hit rate below this on ops with data reuse (gemm, conv, attention) is flagged.
  double low_l2_hit_pct = 50.0;
  // DRAM bytes above this multiple of the op's minimum bytes are flagged as redundant.
  double excess_bytes_ratio = 1.25;
  // Stall reasons below this many cycles per issued instruction are not cited.
  double min_stall_cycles = 1.0;
  // Tensor pipe activity below this on GEMM-like ops means tensor cores are idle.
  double tensor_idle_pct = 5.0;
};

// Returns INVALID_ARGUMENT for a request the judge cannot diagnose: no kernels without
// no_profile_reason and a measured median (a diagnosis without counters needs both, and
// no GPU spec), missing GPU spec (gpu absent or sm_count <= 0), non-finite values.
absl::Status ValidateDiagnoseRequest(const kagent::v1::DiagnoseRequest& request);

class Judge {
 public:
  // `narrator` may be null (the heuristic narrator is used); when set it is not owned
  // and must outlive the Judge.
  explicit Judge(JudgeOptions options = {}, JudgeNarrator* narrator = nullptr);

  // Diagnoses the request. INVALID_ARGUMENT for bad requests (see
  // ValidateDiagnoseRequest) and for profiles no rule can classify (no SOL, no op
  // signature to derive one, and neither launch nor grid rule applies). When the LLM
  // narrator was asked and `exchange` is not null, *exchange gets its record (agent
  // "narrate": brain, model, prompt, reply, and the fallback's reason when the heuristic
  // narrative was used instead); otherwise it is left untouched.
  absl::StatusOr<kagent::v1::BottleneckReport> Diagnose(
      const kagent::v1::DiagnoseRequest& request,
      kagent::v1::AgentExchange* exchange = nullptr) const;

  // The rules alone, without a narrative. Same errors as Diagnose.
  absl::StatusOr<kagent::v1::BottleneckReport> DiagnoseByRules(
      const kagent::v1::DiagnoseRequest& request, const ProfileView& view) const;

  const JudgeOptions& options() const { return options_; }

 private:
  // A request without kernels (ValidateDiagnoseRequest): a report with no category, no
  // limiter and no values, its summary saying why there are no counters, and the
  // narrator's NarrateWithoutProfile checked against the measured facts alone.
  absl::StatusOr<kagent::v1::BottleneckReport> DiagnoseWithoutProfile(
      const kagent::v1::DiagnoseRequest& request, kagent::v1::AgentExchange* exchange) const;
  // Asks the narrator the request wants (`narrate`), the heuristic one on its failure,
  // keeps what `validate` accepts, and adds it to `report`; records the LLM narrator's
  // exchange in `exchange` (may be null) as Diagnose says.
  absl::Status AddNarrative(
      const kagent::v1::DiagnoseRequest& request,
      const std::function<absl::StatusOr<NarrativeResult>(JudgeNarrator&)>& narrate,
      const std::function<NarrativeValidation(const NarrativeResult&, const std::string&)>& validate,
      kagent::v1::BottleneckReport& report, kagent::v1::AgentExchange* exchange) const;

  JudgeOptions options_;
  JudgeNarrator* narrator_;  // not owned; may be null
  mutable HeuristicNarrator heuristic_narrator_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_JUDGE_JUDGE_H_
