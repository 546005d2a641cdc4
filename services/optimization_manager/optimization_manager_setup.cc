#include "services/optimization_manager/optimization_manager_setup.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/grpc_status.h"
#include "common/install_paths.h"
#include "common/llm/endpoint_probe.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/status.h"
#include "engines/heuristic/heuristic_brain.h"
#include "engines/heuristic/template_library.h"
#include "engines/llm/llm_brain.h"

namespace kagent {

namespace {
constexpr char kHeuristic[] = "heuristic";
}  // namespace

void OptimizationManagerSetupOptions::Register(OptionSet& o) {
  o.AddString("python", &python, "Python for the generated-source checks");
  o.AddString("templates-dir", &templates_dir, "Triton template folder (default: built in)");
  o.AddInt("max-parallel-workers", &max_parallel_workers, "generation workers per round");
  o.AddValidator([this] {
    return max_parallel_workers >= 1 && max_parallel_workers <= 64
               ? absl::OkStatus()
               : absl::InvalidArgumentError("--max-parallel-workers must be in [1, 64]");
  });
  RegisterLlm(o);
}

void OptimizationManagerSetupOptions::RegisterLlm(OptionSet& o) {
  o.AddString("llm-config", &llm_config,
              "LLM configuration file (JSON, docs/llm.md): adds the LLM brain");
  o.AddString("llm-brain-name", &llm_brain_name,
              "name of the LLM brain in JobConfig.brain / GenerateRequest.brain");
  o.AddValidator([this] {
    if (llm_brain_name.empty() || llm_brain_name == kHeuristic) {
      return absl::InvalidArgumentError(
          "--llm-brain-name must be non-empty and not \"heuristic\"");
    }
    return absl::OkStatus();
  });
}

absl::Status SetUpOptimizationManager(const OptimizationManagerSetupOptions& o,
                                      ServiceContext& ctx) {
  std::shared_ptr<const TemplateLibrary> library;
  if (o.templates_dir.empty()) {
    KAGENT_ASSIGN_OR_RETURN(library, TemplateLibrary::Embedded());
  } else {
    KAGENT_ASSIGN_OR_RETURN(library, TemplateLibrary::FromDirectory(o.templates_dir));
  }
  OptimizationManagerOptions mo;
  mo.max_parallel_workers = o.max_parallel_workers;
  mo.python = o.python.empty() ? DefaultPython() : o.python;

  auto router = std::make_unique<BrainRouter>(kHeuristic, ctx.auth);
  auto* heuristic = ctx.Keep(std::make_unique<HeuristicBrain>(library));
  router->Add(kHeuristic,
              std::make_unique<OptimizationManagerServiceImpl>(mo, heuristic, ctx.auth));

  if (!o.llm_config.empty()) {
    KAGENT_ASSIGN_OR_RETURN(
        ConfiguredLlm llm,
        LoadLlmStack(o.llm_config, o.llm_deps,
                     ctx.metrics != nullptr ? &ctx.metrics->registry() : nullptr, "LLM brain"));
    llm::LlmConfig& config = llm.config;
    const llm::LlmStack* stack = &llm.stack;
    // One model, or several separated by '|' that a round's candidates spread over.
    std::vector<std::string> models;
    if (!o.llm_model.empty()) models = absl::StrSplit(o.llm_model, '|');
    for (const std::string& m : models) {
      if (m.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("the LLM brain's models '", o.llm_model, "' hold an empty name"));
      }
    }
    if (o.llm_brain_name == kHeuristic) {
      return absl::InvalidArgumentError("the LLM brain cannot be named \"heuristic\"");
    }
    // A wrong model, a refused key or a dead endpoint is a refusal to start, not a
    // failure of every job (a replayed cassette needs no endpoint). Each model is probed.
    if (!models.empty()) config.model = models.front();
    if (config.probe && config.cassette_mode != llm::CassetteMode::kReplay) {
      std::vector<std::string> probed = models.empty() ? std::vector<std::string>{config.model} : models;
      for (const std::string& m : probed) {
        llm::LlmConfig c = config;
        c.model = m;
        if (absl::Status probe = llm::ProbeLlmEndpoint(c, o.llm_deps.transport); !probe.ok()) {
          return absl::Status(probe.code(), absl::StrCat("LLM brain from ", o.llm_config, ": ",
                                                         probe.message()));
        }
      }
    }
    auto* brain = ctx.Keep(std::make_unique<LlmKernelBrain>(
        stack->client, stack->prompts, LlmBrainOptions{.name = o.llm_brain_name, .models = models}));
    router->Add(o.llm_brain_name,
                std::make_unique<OptimizationManagerServiceImpl>(mo, brain, ctx.auth),
                {config.provider});
    KLOG(INFO).With("brain", o.llm_brain_name).With("provider", config.provider)
            .With("model", config.model)
            .With("cassette", config.cassette_mode == llm::CassetteMode::kReplay   ? "replay"
                              : config.cassette_mode == llm::CassetteMode::kRecord ? "record"
                                                                                   : "off")
        << "LLM brain configured";
  }
  KLOG(INFO).With("brains", absl::StrJoin(router->Names(), ","))
      << "optimization manager brains";
  auto* svc = ctx.Keep(std::move(router));
  ctx.host->AddService(svc, v1::OptimizationManagerService::service_full_name());
  return absl::OkStatus();
}

BrainRouter::BrainRouter(std::string default_brain, const Authenticator* auth)
    : default_brain_(std::move(default_brain)), auth_(auth) {}

void BrainRouter::Add(const std::string& name,
                      std::unique_ptr<OptimizationManagerServiceImpl> impl,
                      const std::vector<std::string>& aliases) {
  KAGENT_CHECK(impl != nullptr) << "brain " << name << " has no service";
  KAGENT_CHECK(routes_.count(name) == 0) << "brain " << name << " is served twice";
  routes_[name] = {name, impl.get()};
  for (const std::string& alias : aliases) {
    if (!alias.empty()) routes_.emplace(alias, Route{name, impl.get()});
  }
  impls_.push_back(std::move(impl));
}

std::vector<std::string> BrainRouter::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, route] : routes_) names.push_back(name);
  return names;
}

grpc::Status BrainRouter::Generate(grpc::ServerContext* context,
                                   const kagent::v1::GenerateRequest* request,
                                   kagent::v1::GenerateResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id,
                  .tenant = caller.tenant});
  absl::Status status = DoGenerate(*request, response);
  llm::AddLlmUsageTrailer(status, context);
  return ToGrpcStatus(status);
}

absl::Status BrainRouter::DoGenerate(const kagent::v1::GenerateRequest& request,
                                     kagent::v1::GenerateResponse* response) {
  const std::string& wanted = request.brain().empty() ? default_brain_ : request.brain();
  auto it = routes_.find(wanted);
  if (it == routes_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown brain '", wanted,
                                                   "'; this optimization manager serves: ",
                                                   absl::StrJoin(Names(), ", ")));
  }
  const Route& route = it->second;
  // The impl accepts an empty brain or its brain's own name; an alias is renamed.
  if (request.brain().empty() || request.brain() == route.brain) {
    return route.impl->DoGenerate(request, response);
  }
  kagent::v1::GenerateRequest copy = request;
  copy.set_brain(route.brain);
  return route.impl->DoGenerate(copy, response);
}

}  // namespace kagent
