#include "services/orchestrator/heuristic_reflector.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "services/orchestrator/reflexion.h"

namespace kagent {

absl::StatusOr<v1::ReflectResponse> HeuristicReflector::Reflect(const v1::ReflectRequest& request) {
  const v1::Candidate& parent = request.parent();
  const v1::Candidate& attempt = request.attempt();
  v1::ReflectResponse response;
  bool parent_ok = parent.measurement().verdict() == v1::VERDICT_CORRECT &&
                   parent.measurement().candidate().median_ms() > 0;
  if (!parent_ok) {
    v1::Reflexion r;
    r.set_candidate_id(attempt.id());
    r.set_pattern_id(attempt.prescription().pattern_id());
    r.set_fix_effective(false);
    r.set_lesson(absl::StrCat("no correct parent to compare with; attempt was ",
                              v1::Verdict_Name(attempt.measurement().verdict())));
    *response.mutable_reflexion() = std::move(r);
    return response;
  }
  ReflectContext ctx;
  ctx.prescriber = prescriber_.get();
  if (!request.gpu().arch().empty()) ctx.gpu = &request.gpu();
  KAGENT_ASSIGN_OR_RETURN(*response.mutable_reflexion(), HeuristicReflect(parent, attempt, ctx));
  return response;
}

}  // namespace kagent
