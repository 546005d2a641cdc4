#include "common/service_main.h"

#include <iostream>

#include "common/logging.h"

namespace kagent {

int ServiceMain(int argc, char** argv, const std::string& name,
                const std::function<void(OptionSet&)>& register_options,
                const std::function<absl::Status(ServiceContext&)>& setup) {
  BlockTerminationSignals();
  SetLogService(name);
  ServerOptions server_options;
  OptionSet options(name);
  server_options.Register(options);
  register_options(options);
  absl::Status parsed = options.Parse(argc, argv);
  if (options.help_requested()) {
    std::cout << options.Usage();
    return 0;
  }
  if (!parsed.ok()) {
    std::cerr << name << ": " << parsed.message() << "\n";
    return 2;
  }
  auto auth = MakeAuthenticator(server_options);
  if (!auth.ok()) {
    std::cerr << name << ": " << auth.status().message() << "\n";
    return 2;
  }
  options.LogEffective();
  auto metrics = Metrics::Create(server_options.metrics_listen);
  if (!metrics.ok()) {
    KLOG(ERROR) << metrics.status();
    return 1;
  }
  auto host = ServiceHost::Create(server_options, metrics->get());
  if (!host.ok()) {
    KLOG(ERROR) << host.status();
    return 1;
  }
  ServiceContext ctx;
  ctx.server_options = &server_options;
  ctx.metrics = metrics->get();
  ctx.host = host->get();
  ctx.auth = auth->get();
  absl::Status s = setup(ctx);
  if (s.ok()) s = (*host)->Start();
  if (!s.ok()) {
    KLOG(ERROR) << name << " failed to start: " << s;
    for (auto it = ctx.stop_hooks_.rbegin(); it != ctx.stop_hooks_.rend(); ++it) (*it)();
    return 1;
  }
  // One line on stdout that scripts and tests read to find the ports.
  std::cout << "{\"service\":\"" << name << "\",\"port\":" << (*host)->port()
            << ",\"metrics_port\":" << (*metrics)->port() << "}" << std::endl;
  for (auto& hook : ctx.start_hooks_) {
    absl::Status hs = hook();
    if (!hs.ok()) {
      KLOG(ERROR) << name << " start hook failed: " << hs;
      (*host)->Drain();
      for (auto it = ctx.stop_hooks_.rbegin(); it != ctx.stop_hooks_.rend(); ++it) (*it)();
      return 1;
    }
  }
  WaitForTerminationSignal();
  (*host)->Drain();
  for (auto it = ctx.stop_hooks_.rbegin(); it != ctx.stop_hooks_.rend(); ++it) (*it)();
  KLOG(INFO) << name << " stopped";
  return 0;
}

}  // namespace kagent
