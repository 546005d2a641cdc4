// LlmRoundPlanner: the orchestrator's plan agent over a language model
// (engines/round_plan_writer.h).
//
// Renders the "plan_round" prompt template (docs/llm.md) with the round, the beam's
// kernels best first, each with its measurement (median and ratios to eager and
// torch.compile, BeamEntry.measurement), its diagnosis (BeamEntry.report) and the
// prescriptions the rules offer for it in rank order (id, title, expected speedup and
// effect, rationale), the pairs the rules exclude and
// why, the job's earlier lessons, the budget and fixes_per_kernel, and asks through
// llm::ChatForJson for
//   {"plan": [{"parent": "<kernel id>", "pattern": "<pattern id>", "reason": "..."}]}
// ("plan" required). Each entry is checked against the input: an entry that is not an
// object with string "parent" and "pattern", an unknown parent, a pattern that is not
// among the parent's prescriptions, a pair the rules exclude, a pair named twice, one
// past fixes_per_kernel for its kernel or past the budget is dropped, with the reason
// logged and kept in RoundPlanDraft.dropped. The reply is refused (INTERNAL, with the
// exchange attached; the orchestrator uses the heuristic plan) when "plan" is not a list
// or no entry is left.
//
// Accounting keys are the calling thread's LogContext (the orchestrator sets the job and
// tenant). Thread-safe: immutable after construction; the client is thread-safe.
#ifndef KAGENT_ENGINES_LLM_LLM_PLANNER_H_
#define KAGENT_ENGINES_LLM_LLM_PLANNER_H_

#include <memory>
#include <string>

#include "common/llm/llm_client.h"
#include "common/llm/prompt_templates.h"
#include "engines/llm/agent_call.h"
#include "engines/round_plan_writer.h"

namespace kagent {

class LlmRoundPlanner : public RoundPlanWriter {
 public:
  // `client` and `prompts` must not be null.
  LlmRoundPlanner(std::shared_ptr<llm::LlmClient> client,
                  std::shared_ptr<const llm::PromptLibrary> prompts,
                  llm_engine::AgentOptions options);

  // INVALID_ARGUMENT without a request, with no offered option or a budget below 1;
  // otherwise as above.
  absl::StatusOr<RoundPlanDraft> Plan(const RoundPlanInput& input) override;
  std::string Name() const override { return options_.name; }

 private:
  const std::shared_ptr<llm::LlmClient> client_;
  const std::shared_ptr<const llm::PromptLibrary> prompts_;
  const llm_engine::AgentOptions options_;
};

}  // namespace kagent

#endif  // KAGENT_ENGINES_LLM_LLM_PLANNER_H_
