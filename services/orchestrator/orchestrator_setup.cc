#include "services/orchestrator/orchestrator_setup.h"

#include "common/logging.h"
#include "common/status.h"
#include "kagent/v1/orchestrator_service.grpc.pb.h"
#include "kernel_model/optimization_db.h"
#include "kernel_model/prescriber.h"
#include "services/orchestrator/heuristic_reflector.h"
#include "services/orchestrator/orchestrator_service.h"

namespace kagent {

void OrchestratorOptions::Register(OptionSet& o) {
  o.AddString("optimization-db", &optimization_db,
              "optimization database file (default: data/optimization_db.json of the install)");
}

absl::Status SetUpOrchestrator(const OrchestratorOptions& o, ServiceContext& ctx) {
  std::string path = o.optimization_db.empty() ? DefaultOptimizationDbPath() : o.optimization_db;
  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<Prescriber> prescriber, Prescriber::FromFile(path));
  auto* reflector = ctx.Keep(
      std::make_unique<HeuristicReflector>(std::shared_ptr<const Prescriber>(std::move(prescriber))));
  auto* svc = ctx.Keep(std::make_unique<OrchestratorServiceImpl>(reflector, ctx.auth));
  ctx.host->AddService(svc, v1::OrchestratorService::service_full_name());
  return absl::OkStatus();
}

}  // namespace kagent
