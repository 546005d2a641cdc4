// kagent-benchmark: a GPU worker. Serves BenchmarkService and ProfilerService for one
// GPU, one task at a time, and registers with a coordinator when given one.
#include "common/service_main.h"
#include "services/benchmark/worker_setup.h"

int main(int argc, char** argv) {
  kagent::WorkerOptions options;
  return kagent::ServiceMain(
      argc, argv, "kagent-benchmark", [&](kagent::OptionSet& o) { options.Register(o); },
      [&](kagent::ServiceContext& ctx) {
        kagent::ResolveWorkerPaths(options);
        return kagent::SetUpWorker(options, ctx);
      });
}
