#include "services/orchestrator/plan_agent.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "services/orchestrator/planner.h"

namespace kagent {

absl::StatusOr<v1::RoundPlan> PlanAgent::Plan(const v1::PlanRoundRequest& request) const {
  KAGENT_ASSIGN_OR_RETURN(v1::RoundPlan heuristic, PlanRound(request));
  if (writer_ == nullptr || heuristic.assignments_size() == 0) return heuristic;
  KAGENT_ASSIGN_OR_RETURN(std::vector<PlanOption> options, PlanOptions(request));
  RoundPlanInput input;
  input.request = &request;
  input.options = std::move(options);
  input.budget = heuristic.assignments_size();
  absl::StatusOr<RoundPlanDraft> draft = writer_->Plan(input);
  if (!draft.ok()) {
    KLOG(WARNING).With("agent", writer_->Name())
        << "plan agent failed, using the heuristic plan: "
        << absl::StatusCodeToString(draft.status().code()) << ": " << draft.status().message();
    heuristic.set_rationale(absl::StrCat("heuristic plan (the plan agent ", writer_->Name(),
                                         " failed: ", draft.status().message(), "): ",
                                         heuristic.rationale()));
    return heuristic;
  }
  KLOG(INFO).With("agent", writer_->Name())
      << "round " << request.round() << " planned by the plan agent: "
      << draft->plan.assignments_size() << " assignment(s), " << draft->dropped.size()
      << " entry(ies) of the reply dropped";
  return std::move(draft->plan);
}

}  // namespace kagent
