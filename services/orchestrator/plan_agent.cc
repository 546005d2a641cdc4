#include "services/orchestrator/plan_agent.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/llm/transcript_status.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm_agent_choice.h"
#include "services/orchestrator/planner.h"

namespace kagent {

absl::StatusOr<v1::PlanRoundResponse> PlanAgent::Plan(const v1::PlanRoundRequest& request) const {
  v1::PlanRoundResponse response;
  KAGENT_ASSIGN_OR_RETURN(*response.mutable_plan(), PlanRound(request));
  v1::RoundPlan& heuristic = *response.mutable_plan();
  // A job that chose its agents without "plan" keeps the heuristic plan.
  if (writer_ == nullptr || !JobWantsLlmAgent(request.llm_agents(), "plan") ||
      heuristic.assignments_size() == 0) {
    return response;
  }
  KAGENT_ASSIGN_OR_RETURN(std::vector<PlanOption> options, PlanOptions(request));
  RoundPlanInput input;
  input.request = &request;
  input.options = std::move(options);
  input.budget = heuristic.assignments_size();
  v1::AgentExchange* exchange = response.mutable_exchange();
  exchange->set_agent("plan");
  exchange->set_brain(writer_->Name());
  absl::StatusOr<RoundPlanDraft> draft = writer_->Plan(input);
  if (!draft.ok()) {
    KLOG(WARNING).With("agent", writer_->Name())
        << "plan agent failed, using the heuristic plan: "
        << absl::StatusCodeToString(draft.status().code()) << ": " << draft.status().message();
    heuristic.set_rationale(absl::StrCat("heuristic plan (the plan agent ", writer_->Name(),
                                         " failed: ", draft.status().message(), "): ",
                                         heuristic.rationale()));
    llm::RecordAgentFallback(draft.status(), exchange);
    return response;
  }
  KLOG(INFO).With("agent", writer_->Name())
      << "round " << request.round() << " planned by the plan agent: "
      << draft->plan.assignments_size() << " assignment(s), " << draft->dropped.size()
      << " entry(ies) of the reply dropped";
  heuristic = std::move(draft->plan);
  exchange->set_model(draft->model);
  exchange->set_prompt(std::move(draft->prompt));
  exchange->set_reply(std::move(draft->reply));
  return response;
}

}  // namespace kagent
