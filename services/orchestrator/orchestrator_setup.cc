#include "services/orchestrator/orchestrator_setup.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/status.h"
#include "engines/llm/llm_agents.h"
#include "engines/llm/llm_brain.h"
#include "engines/llm/llm_planner.h"
#include "engines/llm/llm_reflector.h"
#include "kagent/v1/orchestrator_service.grpc.pb.h"
#include "kernel_model/optimization_db.h"
#include "kernel_model/prescriber.h"
#include "services/orchestrator/reflect_agent.h"
#include "services/orchestrator/orchestrator_service.h"

namespace kagent {

void OrchestratorOptions::Register(OptionSet& o) {
  o.AddString("optimization-db", &optimization_db,
              "optimization database file (default: data/optimization_db.json of the install)");
  o.AddString("llm-config", &llm_config,
              "LLM configuration file (JSON, docs/llm.md): an LLM writes the reflexions "
              "and plans the rounds (as --llm-agents says)");
  o.AddString("llm-agents", &llm_agents,
              "which of the orchestrator's agents ask the LLM of --llm-config: reflect, plan "
              "(each optionally agent=model; other agents are ignored)");
}

absl::Status SetUpOrchestrator(const OrchestratorOptions& o, ServiceContext& ctx) {
  std::string path = o.optimization_db.empty() ? DefaultOptimizationDbPath() : o.optimization_db;
  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<Prescriber> prescriber, Prescriber::FromFile(path));
  ReflexionWriter* writer = nullptr;
  RoundPlanWriter* plan_writer = nullptr;
  absl::StatusOr<LlmAgents> agents = ParseLlmAgents(o.llm_agents);
  if (!agents.ok()) return agents.status();
  if (!o.llm_config.empty() && (agents->Uses("reflect") || agents->Uses("plan"))) {
    KAGENT_ASSIGN_OR_RETURN(
        ConfiguredLlm llm,
        LoadLlmStack(o.llm_config, o.llm_deps,
                     ctx.metrics != nullptr ? &ctx.metrics->registry() : nullptr,
                     "LLM orchestrator agents"));
    const std::string name = absl::StrCat("llm:", llm.config.provider);
    auto model_of = [&](const std::string& agent) {
      return agents->Model(agent).empty() ? llm.config.model : agents->Model(agent);
    };
    if (agents->Uses("reflect")) {
      writer = ctx.Keep(std::make_unique<LlmReflexionWriter>(
          llm.stack.client, llm.stack.prompts,
          llm_engine::AgentOptions{.name = name, .model = agents->Model("reflect")}));
      KLOG(INFO).With("agent", name).With("model", model_of("reflect"))
          << "the orchestrator reflects through the LLM";
    }
    if (agents->Uses("plan")) {
      plan_writer = ctx.Keep(std::make_unique<LlmRoundPlanner>(
          llm.stack.client, llm.stack.prompts,
          llm_engine::AgentOptions{.name = name, .model = agents->Model("plan")}));
      KLOG(INFO).With("agent", name).With("model", model_of("plan"))
          << "the orchestrator plans rounds through the LLM";
    }
  }
  auto* reflector = ctx.Keep(std::make_unique<ReflectAgent>(
      std::shared_ptr<const Prescriber>(std::move(prescriber)), writer));
  auto* svc = ctx.Keep(std::make_unique<OrchestratorServiceImpl>(reflector, ctx.auth, plan_writer));
  ctx.host->AddService(svc, v1::OrchestratorService::service_full_name());
  return absl::OkStatus();
}

}  // namespace kagent
