// Builds the OrchestratorService (planner + heuristic reflector) on a ServiceContext.
#ifndef KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SETUP_H_
#define KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SETUP_H_

#include <string>

#include "common/service_main.h"

namespace kagent {

struct OrchestratorOptions {
  std::string optimization_db;  // default: <root>/data/optimization_db.json
  void Register(OptionSet& o);
};

absl::Status SetUpOrchestrator(const OrchestratorOptions& options, ServiceContext& ctx);

}  // namespace kagent

#endif  // KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SETUP_H_
