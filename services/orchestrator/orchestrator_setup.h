// Builds the OrchestratorService (planner + reflect agent) on a ServiceContext.
//
// The reflect agent: the heuristic reflexion always; with `llm_config` (--llm-config FILE,
// the JSON of docs/llm.md) an LlmReflexionWriter over that configuration's stack drafts
// the judgement around the measured facts (reflect_agent.h), any failure of it keeping
// the heuristic reflexion for that attempt. The planner stays deterministic.
#ifndef KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SETUP_H_
#define KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SETUP_H_

#include <string>

#include "common/llm/factory.h"
#include "common/service_main.h"

namespace kagent {

struct OrchestratorOptions {
  std::string optimization_db;  // default: <root>/data/optimization_db.json
  // LLM configuration file (docs/llm.md); empty: the heuristic reflexion alone.
  std::string llm_config;
  // The reflect agent's model; empty: the configuration's `model`.
  std::string llm_model;
  // Shared LLM pieces (not options), as for the analyzer (kagentd passes its own).
  llm::LlmDeps llm_deps;
  void Register(OptionSet& o);
};

// The configuration's errors are prefixed with "LLM reflector from FILE: "; the endpoint
// is not probed.

absl::Status SetUpOrchestrator(const OrchestratorOptions& options, ServiceContext& ctx);

}  // namespace kagent

#endif  // KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SETUP_H_
