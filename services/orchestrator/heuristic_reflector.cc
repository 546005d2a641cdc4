#include "services/orchestrator/heuristic_reflector.h"

#include "absl/strings/str_cat.h"
#include "services/orchestrator/reflexion.h"

namespace kagent {

absl::StatusOr<v1::Reflexion> HeuristicReflector::Reflect(const v1::Candidate& parent,
                                                          const v1::Candidate& attempt,
                                                          const v1::GpuSpec& gpu) {
  bool parent_ok = parent.measurement().verdict() == v1::VERDICT_CORRECT &&
                   parent.measurement().candidate().median_ms() > 0;
  if (!parent_ok) {
    v1::Reflexion r;
    r.set_candidate_id(attempt.id());
    r.set_pattern_id(attempt.prescription().pattern_id());
    r.set_fix_effective(false);
    r.set_lesson(absl::StrCat("no correct parent to compare with; attempt was ",
                              v1::Verdict_Name(attempt.measurement().verdict())));
    return r;
  }
  ReflectContext ctx;
  ctx.prescriber = prescriber_.get();
  if (!gpu.arch().empty()) ctx.gpu = &gpu;
  return HeuristicReflect(parent, attempt, ctx);
}

}  // namespace kagent
