// PlanAgent: the orchestrator's round planner with a RoundPlanWriter (an LLM,
// engines/round_plan_writer.h) over the heuristic plan (planner.h), which is the fallback
// per call.
//
// Every round first gets the heuristic plan; its size is the writer's budget. With a
// writer, a request whose job chose "plan" or chose no agents (PlanRoundRequest
// .llm_agents) and a non-empty heuristic plan, the writer chooses and orders among the pairs
// the planner's rules offer (PlanOptions); its plan replaces the heuristic one, its
// rationale giving each assignment's reason and the entries dropped. A failing writer
// (the endpoint, a spent budget, a refused reply) leaves the heuristic plan, whose
// rationale then starts with "heuristic plan (the plan agent <name> failed: <why>)"; the
// same is logged. When the writer was asked, the response's exchange holds its prompt,
// reply and (on a fallback) the reason.
//
// Thread-safe when the writer is; the writer is borrowed and must outlive the agent.
#ifndef KAGENT_SERVICES_ORCHESTRATOR_PLAN_AGENT_H_
#define KAGENT_SERVICES_ORCHESTRATOR_PLAN_AGENT_H_

#include "absl/status/statusor.h"
#include "engines/round_plan_writer.h"
#include "kagent/v1/orchestrator_service.pb.h"

namespace kagent {

class PlanAgent {
 public:
  // `writer` may be null (the heuristic plan alone).
  explicit PlanAgent(RoundPlanWriter* writer) : writer_(writer) {}

  // Errors: PlanRound's (INVALID_ARGUMENT for a malformed request); never the writer's.
  absl::StatusOr<v1::PlanRoundResponse> Plan(const v1::PlanRoundRequest& request) const;

 private:
  RoundPlanWriter* writer_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_ORCHESTRATOR_PLAN_AGENT_H_
