// kagent-benchmark: a GPU worker. Serves BenchmarkService and ProfilerService for one
// GPU, one task at a time, and registers with a coordinator when given one.
#include "common/service_main.h"
#include "services/benchmark/worker_setup.h"

int main(int argc, char** argv) {
  kagent::WorkerOptions options;
  const kagent::OptionSet* flags = nullptr;
  return kagent::ServiceMain(
      argc, argv, "kagent-benchmark",
      [&](kagent::OptionSet& o) {
        options.Register(o);
        flags = &o;
      },
      [&](kagent::ServiceContext& ctx) {
        kagent::ResolveWorkerPaths(options);
        // The files this process holds secrets in are hidden from candidates too.
        options.secret_files = kagent::SecretFiles(*ctx.server_options, flags->config_path());
        return kagent::SetUpWorker(options, ctx);
      });
}
