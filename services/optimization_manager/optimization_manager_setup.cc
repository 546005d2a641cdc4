#include "services/optimization_manager/optimization_manager_setup.h"

#include "common/install_paths.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/heuristic/heuristic_brain.h"
#include "engines/heuristic/template_library.h"
#include "kagent/v1/optimization_manager_service.grpc.pb.h"
#include "services/optimization_manager/optimization_manager_service.h"

namespace kagent {

void OptimizationManagerSetupOptions::Register(OptionSet& o) {
  o.AddString("python", &python, "Python for the generated-source checks");
  o.AddString("templates-dir", &templates_dir, "Triton template folder (default: built in)");
  o.AddInt("max-parallel-workers", &max_parallel_workers, "generation workers per round");
  o.AddValidator([this] {
    return max_parallel_workers >= 1 && max_parallel_workers <= 64
               ? absl::OkStatus()
               : absl::InvalidArgumentError("--max-parallel-workers must be in [1, 64]");
  });
}

absl::Status SetUpOptimizationManager(const OptimizationManagerSetupOptions& o,
                                      ServiceContext& ctx) {
  std::shared_ptr<const TemplateLibrary> library;
  if (o.templates_dir.empty()) {
    KAGENT_ASSIGN_OR_RETURN(library, TemplateLibrary::Embedded());
  } else {
    KAGENT_ASSIGN_OR_RETURN(library, TemplateLibrary::FromDirectory(o.templates_dir));
  }
  auto* brain = ctx.Keep(std::make_unique<HeuristicBrain>(library));
  OptimizationManagerOptions mo;
  mo.max_parallel_workers = o.max_parallel_workers;
  mo.python = o.python.empty() ? DefaultPython() : o.python;
  auto* svc = ctx.Keep(std::make_unique<OptimizationManagerServiceImpl>(mo, brain, ctx.auth));
  ctx.host->AddService(svc, v1::OptimizationManagerService::service_full_name());
  return absl::OkStatus();
}

}  // namespace kagent
