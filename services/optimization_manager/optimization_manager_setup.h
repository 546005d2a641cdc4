// Builds the OptimizationManagerService on a ServiceContext (kagent-optimization-manager
// and kagentd): the heuristic brain always, plus an LLM brain when `--llm-config FILE`
// names an LLM configuration (the JSON of docs/llm.md).
//
// GenerateRequest.brain selects the brain: empty means "heuristic"; the LLM brain answers
// to `--llm-brain-name` (default "llm") and to its provider's name ("openai",
// "anthropic") unless another brain has that name. Any other name is INVALID_ARGUMENT
// naming the brains served.
#ifndef KAGENT_SERVICES_OPTIMIZATION_MANAGER_OPTIMIZATION_MANAGER_SETUP_H_
#define KAGENT_SERVICES_OPTIMIZATION_MANAGER_OPTIMIZATION_MANAGER_SETUP_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/auth.h"
#include "common/llm/factory.h"
#include "common/service_main.h"
#include "kagent/v1/optimization_manager_service.grpc.pb.h"
#include "services/optimization_manager/optimization_manager_service.h"

namespace kagent {

struct OptimizationManagerSetupOptions {
  std::string python;         // for the source checker; default .venv/bin/python or python3
  std::string templates_dir;  // empty: the templates built into the binary
  int max_parallel_workers = 4;
  // LLM configuration file (docs/llm.md); empty: the heuristic brain only.
  std::string llm_config;
  // The name the LLM brain answers to in GenerateRequest.brain / JobConfig.brain.
  std::string llm_brain_name = "llm";
  // The LLM brain's model, or several separated by '|' over which a round's candidates
  // are spread (LlmBrainOptions.models); empty: the configuration's `model` (kagentd's
  // --llm-agents). Each is probed.
  std::string llm_model;
  // Shared LLM pieces (not options): kagentd passes one Accountant (and breaker
  // registry) to every LLM stack of the process so a job's budget covers all of them.
  llm::LlmDeps llm_deps;

  // Every option above (kagent-optimization-manager).
  void Register(OptionSet& o);
  // Only --llm-config and --llm-brain-name (kagentd, which has its own --python).
  void RegisterLlm(OptionSet& o);
};

absl::Status SetUpOptimizationManager(const OptimizationManagerSetupOptions& options,
                                      ServiceContext& ctx);

// The OptimizationManagerService over several brains: one OptimizationManagerServiceImpl
// per brain, chosen by GenerateRequest.brain. Thread-safe after the Add() calls, which
// must all happen before the service is registered.
class BrainRouter final : public kagent::v1::OptimizationManagerService::Service {
 public:
  // `default_brain` serves requests with an empty brain. `auth` may be null (auth off).
  BrainRouter(std::string default_brain, const Authenticator* auth);

  // Serves brain `name` (and each of `aliases` not yet taken) with `impl`, whose brain's
  // name() must be `name`. The router owns `impl`. A name already taken is a crash.
  void Add(const std::string& name, std::unique_ptr<OptimizationManagerServiceImpl> impl,
           const std::vector<std::string>& aliases = {});

  grpc::Status Generate(grpc::ServerContext* context, const kagent::v1::GenerateRequest* request,
                        kagent::v1::GenerateResponse* response) override;
  // The logic behind Generate, without the gRPC edge. INVALID_ARGUMENT for an unknown
  // brain (the message lists the brains served); otherwise the brain's DoGenerate.
  absl::Status DoGenerate(const kagent::v1::GenerateRequest& request,
                          kagent::v1::GenerateResponse* response);

  // Every name served (aliases included), sorted.
  std::vector<std::string> Names() const;

 private:
  struct Route {
    std::string brain;  // the impl's brain name
    OptimizationManagerServiceImpl* impl;
  };
  const std::string default_brain_;
  const Authenticator* auth_;
  std::vector<std::unique_ptr<OptimizationManagerServiceImpl>> impls_;
  std::map<std::string, Route> routes_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_OPTIMIZATION_MANAGER_OPTIMIZATION_MANAGER_SETUP_H_
