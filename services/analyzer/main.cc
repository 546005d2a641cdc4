// kagent-analyzer: ranked prescriptions from the optimization database.
#include "common/service_main.h"
#include "services/analyzer/analyzer_setup.h"

int main(int argc, char** argv) {
  kagent::AnalyzerServerOptions options;
  return kagent::ServiceMain(
      argc, argv, "kagent-analyzer", [&](kagent::OptionSet& o) { options.Register(o); },
      [&](kagent::ServiceContext& ctx) { return kagent::SetUpAnalyzer(options, ctx); });
}
