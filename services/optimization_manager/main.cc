// kagent-optimization-manager: generates candidate kernels in parallel with a brain.
#include "common/service_main.h"
#include "services/optimization_manager/optimization_manager_setup.h"

int main(int argc, char** argv) {
  kagent::OptimizationManagerSetupOptions options;
  return kagent::ServiceMain(
      argc, argv, "kagent-optimization-manager", [&](kagent::OptionSet& o) { options.Register(o); },
      [&](kagent::ServiceContext& ctx) { return kagent::SetUpOptimizationManager(options, ctx); });
}
