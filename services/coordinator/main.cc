// kagent-coordinator: the public job API and the only stateful service.
#include "common/service_main.h"
#include "services/coordinator/coordinator_setup.h"

int main(int argc, char** argv) {
  kagent::CoordinatorOptions options;
  return kagent::ServiceMain(
      argc, argv, "kagent-coordinator", [&](kagent::OptionSet& o) { options.Register(o); },
      [&](kagent::ServiceContext& ctx) {
        return kagent::SetUpCoordinator(options, ctx, "", nullptr);
      });
}
