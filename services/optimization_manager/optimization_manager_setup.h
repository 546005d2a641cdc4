// Builds the OptimizationManagerService with the heuristic brain on a ServiceContext
// (kagent-optimization-manager and kagentd).
#ifndef KAGENT_SERVICES_OPTIMIZATION_MANAGER_OPTIMIZATION_MANAGER_SETUP_H_
#define KAGENT_SERVICES_OPTIMIZATION_MANAGER_OPTIMIZATION_MANAGER_SETUP_H_

#include <string>

#include "common/service_main.h"

namespace kagent {

struct OptimizationManagerSetupOptions {
  std::string python;         // for the source checker; default .venv/bin/python or python3
  std::string templates_dir;  // empty: the templates built into the binary
  int max_parallel_workers = 4;
  void Register(OptionSet& o);
};

absl::Status SetUpOptimizationManager(const OptimizationManagerSetupOptions& options,
                                      ServiceContext& ctx);

}  // namespace kagent

#endif  // KAGENT_SERVICES_OPTIMIZATION_MANAGER_OPTIMIZATION_MANAGER_SETUP_H_
