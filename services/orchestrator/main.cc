// kagent-orchestrator: plans rounds and writes reflexions.
#include "common/service_main.h"
#include "services/orchestrator/orchestrator_setup.h"

int main(int argc, char** argv) {
  kagent::OrchestratorOptions options;
  return kagent::ServiceMain(
      argc, argv, "kagent-orchestrator", [&](kagent::OptionSet& o) { options.Register(o); },
      [&](kagent::ServiceContext& ctx) { return kagent::SetUpOrchestrator(options, ctx); });
}
