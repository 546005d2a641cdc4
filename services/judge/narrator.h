// The judge's narrative seam: HeuristicNarrator, the embedded implementation of
// JudgeNarrator (engines/judge_narrator.h), and the validation of what any narrator says.
//
// After the rules have produced a BottleneckReport, a JudgeNarrator may add prose and
// further root causes. An LLM brain implements it too (engines/llm/llm_narrator.h);
// HeuristicNarrator is the embedded, deterministic implementation. Whatever a narrator
// returns passes through ValidateNarrative() before it reaches the report: every metric it
// cites must exist in the profile and match a measured value within 1%, or the citation
// (and the sentence or root cause that depends on it) is dropped and the drop is logged.
// The report's category, limiter and rule evidence never depend on a narrator.
#ifndef KAGENT_SERVICES_JUDGE_NARRATOR_H_
#define KAGENT_SERVICES_JUDGE_NARRATOR_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engines/judge_narrator.h"
#include "kagent/v1/common.pb.h"
#include "kernel_model/profile_view.h"

namespace kagent {

// Deterministic narrative composed from the report's rule root causes and category.
// Adds no root causes. Stateless and thread-safe.
class HeuristicNarrator : public JudgeNarrator {
 public:
  absl::StatusOr<NarrativeResult> Narrate(const kagent::v1::BottleneckReport& report,
                                          const kagent::v1::HardwareMetrics& metrics,
                                          const kagent::v1::GpuSpec* gpu) override;
  // States why there are no counters and what was measured; adds no root causes.
  absl::StatusOr<NarrativeResult> NarrateWithoutProfile(const kagent::v1::BottleneckReport& report,
                                                        const UnprofiledKernel& kernel) override;
  std::string Name() const override { return "heuristic"; }
};

// The names of what a diagnosis without counters knows (UnprofiledFacts). They contain
// "__" as metric names do, so the narrative's sentences are checked against them too.
inline constexpr char kFactMedianMs[] = "kernel__median_ms";
inline constexpr char kFactEagerMedianMs[] = "eager__median_ms";
inline constexpr char kFactCompileMedianMs[] = "torch_compile__median_ms";
// Eager's (torch.compile's) median over the kernel's: above 1, the kernel is faster.
inline constexpr char kFactSpeedupVsEager[] = "kernel__speedup_vs_eager";
inline constexpr char kFactSpeedupVsCompile[] = "kernel__speedup_vs_torch_compile";

// The facts of `measurement`: each median that is above 0, and each ratio whose two
// medians are.
std::map<std::string, double> UnprofiledFacts(const kagent::v1::Measurement& measurement);

// What ValidateNarrative kept and why it dropped the rest.
struct NarrativeValidation {
  NarrativeResult kept;
  std::vector<std::string> drops;  // one human-readable line per dropped item
};

// Checks every citation of `result` against the profile: the values of every kernel and
// of the aggregate, the top-level SOL fields, kernel durations and launch shapes, and the
// view's own (diagnosed-kernel and derived) values.
//  - Evidence of an extra root cause is kept when its metric is in the profile and its
//    value is within 1% of a measured value of that metric; a root cause left without
//    evidence is dropped. Kept root causes get source "llm" unless `source` says otherwise.
//  - The narrative is checked sentence by sentence: a sentence naming a metric that is
//    not in the profile is dropped; a sentence with numbers must hold, for every metric it
//    names, a number within 1% of a measured value of that metric, or it is dropped.
// Pure function; logs nothing (the caller logs `drops`).
NarrativeValidation ValidateNarrative(const NarrativeResult& result,
                                      const kagent::v1::HardwareMetrics& metrics,
                                      const ProfileView& view, const std::string& source);

// ValidateNarrative for a diagnosis without counters: the only citable names are
// `facts`' (UnprofiledFacts), so every counter a narrator cites (there are none) is
// dropped, with the same rules ("metric dram__bytes.sum is not in what was measured (no
// hardware counters)").
NarrativeValidation ValidateNarrativeWithoutProfile(const NarrativeResult& result,
                                                    const std::map<std::string, double>& facts,
                                                    const std::string& source);

// True when `cited` is within 1% (relative) of `measured`; exact match required at 0.
bool WithinOnePercent(double cited, double measured);

}  // namespace kagent

#endif  // KAGENT_SERVICES_JUDGE_NARRATOR_H_
