// JudgeNarrator: the interface through which the judge asks for a narrative.
//
// After the judge's rules have produced a BottleneckReport, a narrator may add prose and
// further root causes. The embedded implementation is kagent::HeuristicNarrator
// (services/judge/narrator.h); an LLM-backed narrator (engines/llm/llm_narrator.h)
// implements the same interface. Whatever a narrator returns passes through the judge's
// ValidateNarrative() before it reaches the report, so a narrator can change nothing but
// the narrative and the root causes it adds. Without a profile the judge asks
// NarrateWithoutProfile, and only the measured facts it passes may be cited.
//
// Thread-safety: implementations must be thread-safe (one instance serves concurrent
// calls). The report and metrics are borrowed for the duration of the call only.
#ifndef KAGENT_ENGINES_JUDGE_NARRATOR_H_
#define KAGENT_ENGINES_JUDGE_NARRATOR_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

struct NarrativeResult {
  // Prose for BottleneckReport.narrative. Metric names cited in it (tokens containing
  // "__", e.g. dram__throughput.avg.pct_of_peak_sustained_elapsed) are validated.
  std::string narrative;
  // Root causes beyond the rules' own; each must cite at least one metric.
  std::vector<kagent::v1::RootCause> extra_root_causes;
  // A language model's narrator: the model asked (empty: the configuration's default),
  // the conversation sent and the reply the narrative came from. Empty for the rules'.
  std::string model;
  std::string prompt;
  std::string reply;
};

// What is known of a kernel the judge diagnoses without hardware counters (a CPU worker, a
// failed or skipped profile). The pointers are borrowed for the call; either may be null.
struct UnprofiledKernel {
  std::string reason;    // why there are no counters, e.g. "it ran on a CPU worker (...)"
  std::string op_class;  // the recognized op class; "" when none was recognized
  // What was measured, name -> value (the judge's UnprofiledFacts, services/judge/
  // narrator.h: the kernel's median, eager PyTorch's and torch.compile's, and the ratios),
  // only those known: the only values a narrative without a profile may cite.
  std::map<std::string, double> facts;
  const kagent::v1::Measurement* measurement = nullptr;
  const kagent::v1::GpuSpec* gpu = nullptr;
};

// Interface. Implementations must be thread-safe: one instance serves concurrent calls.
class JudgeNarrator {
 public:
  virtual ~JudgeNarrator() = default;
  // Returns narrative for `report` (already complete from the rules) over `metrics`,
  // measured on `gpu` (borrowed for the call; may be null: not known). An error makes
  // the judge fall back to the heuristic narrative; it never fails the diagnosis.
  virtual absl::StatusOr<NarrativeResult> Narrate(const kagent::v1::BottleneckReport& report,
                                                  const kagent::v1::HardwareMetrics& metrics,
                                                  const kagent::v1::GpuSpec* gpu) = 0;
  // Returns narrative for `report`, which the rules wrote without counters (no category,
  // no metric values), from `kernel`'s facts alone. Errors as for Narrate.
  virtual absl::StatusOr<NarrativeResult> NarrateWithoutProfile(
      const kagent::v1::BottleneckReport& report, const UnprofiledKernel& kernel) = 0;
  // Short name for logs and for RootCause.source ("heuristic", "llm:<provider>").
  virtual std::string Name() const = 0;
};

}  // namespace kagent

#endif  // KAGENT_ENGINES_JUDGE_NARRATOR_H_
