// The shared body of every service binary's main():
//
//   int main(int argc, char** argv) {
//     MyOptions opts;
//     return kagent::ServiceMain(argc, argv, "kagent-judge", [&](kagent::OptionSet& o) {
//       opts.Register(o);
//     }, [&](kagent::ServiceContext& ctx) -> absl::Status {
//       auto svc = std::make_unique<JudgeServiceImpl>(..., ctx.auth);
//       ctx.host->AddService(svc.get(), v1::JudgeService::service_full_name());
//       ctx.Keep(std::move(svc));
//       return absl::OkStatus();
//     });
//   }
//
// It blocks termination signals, parses and validates options (flags, env, config),
// logs them once, starts metrics and the server, runs until SIGTERM/SIGINT, then drains
// (readiness NOT_SERVING, in-flight calls finish, Shutdown with a deadline) and runs the
// registered stop hooks. Exit code 0 on a clean stop, 2 on bad options, 1 on failure.
#ifndef KAGENT_COMMON_SERVICE_MAIN_H_
#define KAGENT_COMMON_SERVICE_MAIN_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/auth.h"
#include "common/metrics.h"
#include "common/options.h"
#include "common/server.h"

namespace kagent {

struct ServiceContext {
  ServerOptions* server_options = nullptr;
  Metrics* metrics = nullptr;
  ServiceHost* host = nullptr;
  const Authenticator* auth = nullptr;  // null when auth is off

  // Keeps an object alive until after the server stopped.
  template <typename T>
  T* Keep(std::unique_ptr<T> object) {
    T* raw = object.get();
    kept_.push_back(std::shared_ptr<void>(std::move(object)));
    return raw;
  }
  // Runs after the server drained, in reverse order of registration.
  void OnStop(std::function<void()> hook) { stop_hooks_.push_back(std::move(hook)); }
  // Runs after the server started (e.g. to register with a coordinator).
  void OnStarted(std::function<absl::Status()> hook) { start_hooks_.push_back(std::move(hook)); }

  std::vector<std::shared_ptr<void>> kept_;
  std::vector<std::function<void()>> stop_hooks_;
  std::vector<std::function<absl::Status()>> start_hooks_;
};

int ServiceMain(int argc, char** argv, const std::string& name,
                const std::function<void(OptionSet&)>& register_options,
                const std::function<absl::Status(ServiceContext&)>& setup);

}  // namespace kagent

#endif  // KAGENT_COMMON_SERVICE_MAIN_H_
