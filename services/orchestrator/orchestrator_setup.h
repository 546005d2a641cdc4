// Builds the OrchestratorService (plan agent + reflect agent) on a ServiceContext.
//
// The reflect agent: the heuristic reflexion always; with `llm_config` (--llm-config FILE,
// the JSON of docs/llm.md) and "reflect" among `llm_agents`, an LlmReflexionWriter over
// that configuration's stack drafts the judgement around the measured facts
// (reflect_agent.h), any failure of it keeping the heuristic reflexion for that attempt.
// The plan agent: the heuristic plan always; with `llm_config` and "plan" among
// `llm_agents`, an LlmRoundPlanner chooses and orders among the pairs the planner's rules
// offer (plan_agent.h), any failure of it keeping the heuristic plan for that round.
#ifndef KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SETUP_H_
#define KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SETUP_H_

#include <string>

#include "common/llm/factory.h"
#include "common/service_main.h"

namespace kagent {

struct OrchestratorOptions {
  std::string optimization_db;  // default: <root>/data/optimization_db.json
  // LLM configuration file (docs/llm.md); empty: the heuristic reflexion and plan alone.
  std::string llm_config;
  // Which of the orchestrator's agents ask the LLM with `llm_config`, in --llm-agents'
  // syntax (engines/llm/llm_agents.h): "reflect" and "plan", each optionally "=model".
  // The other services' agents may be listed (kagentd passes its whole --llm-agents) and
  // are ignored here.
  std::string llm_agents = "reflect,plan";
  // Shared LLM pieces (not options), as for the analyzer (kagentd passes its own).
  llm::LlmDeps llm_deps;
  void Register(OptionSet& o);
};

// The configuration's errors are prefixed with "LLM orchestrator agents from FILE: ";
// an unparsable `llm_agents` is INVALID_ARGUMENT; the endpoint is not probed.

absl::Status SetUpOrchestrator(const OrchestratorOptions& options, ServiceContext& ctx);

}  // namespace kagent

#endif  // KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SETUP_H_
