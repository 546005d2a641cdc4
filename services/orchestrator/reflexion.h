// Heuristic (deterministic) reflexion: what one measured attempt teaches.
//
// HeuristicReflect compares an attempt with its parent and writes a kagent.v1.Reflexion:
//   - fix_effective: the attempt is correct and its speedup (parent median / attempt
//     median) clears the measurement noise (the larger of the two candidates' half
//     p10-p90 spread relative to the median, clamped to [1%, 5%]);
//   - diagnosis_correct: when both candidates have metrics and the pattern declares a
//     target metric, whether that metric moved the intended way by more than 1%;
//     otherwise whether the fix was effective;
//   - expected vs actual speedup with the numbers in the lesson;
//   - avoid_patterns: the pattern when the attempt regressed beyond noise or failed (a
//     compile error, crash, wrong result, timeout, OOM or rejection; an infrastructure
//     error is not the pattern's fault and is not avoided);
//   - a fallback (the attempt's prescription has `fallback`: the brain made another move
//     than the pattern's): the lesson names the moves made (the prescription's fix) and
//     why, the expected speedup is the prescription's (the move's, set by the
//     optimization manager), the pattern's target metric is not checked, the lesson says
//     the pattern was neither confirmed nor refuted (diagnosis_correct then follows the
//     fix's effect) and the pattern is never put on avoid_patterns;
//   - try_patterns: up to 3 patterns the prescriber (kernel_model/prescriber.h) ranks
//     next. After an effective fix: for the attempt's own report, excluding patterns
//     that contradict the one just applied (conflict-free neighbours). Otherwise:
//     alternatives for the parent's report (contradicting patterns allowed: the opposite
//     move may be the right one).
// Pure function of its inputs; thread-safe.
#ifndef KAGENT_SERVICES_ORCHESTRATOR_REFLEXION_H_
#define KAGENT_SERVICES_ORCHESTRATOR_REFLEXION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/common.pb.h"
#include "kernel_model/prescriber.h"

namespace kagent {

struct ReflectContext {
  // For target metrics and try-patterns; may be null (no targets, no try-patterns).
  // Not owned.
  const Prescriber* prescriber = nullptr;
  // The GPU, for arch-specific try-patterns; may be null (arch-neutral patterns only).
  const kagent::v1::GpuSpec* gpu = nullptr;
  // The job's avoid-list: never suggested in try_patterns.
  std::vector<std::string> avoid_patterns;
  int max_try_patterns = 3;
};

// INVALID_ARGUMENT when the parent has no correct measurement with a positive median,
// or a correct attempt has no positive median.
absl::StatusOr<kagent::v1::Reflexion> HeuristicReflect(const kagent::v1::Candidate& parent,
                                                       const kagent::v1::Candidate& attempt,
                                                       const ReflectContext& context = {});

}  // namespace kagent

#endif  // KAGENT_SERVICES_ORCHESTRATOR_REFLEXION_H_
