#include "services/analyzer/analyzer_setup.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm/llm_brain.h"
#include "engines/llm/llm_prescriber.h"
#include "kagent/v1/analyzer_service.grpc.pb.h"
#include "kernel_model/optimization_db.h"
#include "services/analyzer/analyzer_service.h"

namespace kagent {

void AnalyzerServerOptions::Register(OptionSet& o) {
  o.AddString("optimization-db", &optimization_db,
              "the optimization database (JSON); empty: data/optimization_db.json of the install");
  o.AddInt("analyzer-default-results", &default_max_results,
           "prescriptions returned when a request leaves max_results at 0 (1..64)");
  o.AddString("llm-config", &llm_config,
              "LLM configuration file (JSON, docs/llm.md): an LLM ranks the database's candidates");
  o.AddValidator([this] { return Validate(); });
}

absl::Status AnalyzerServerOptions::Validate() const {
  if (default_max_results < 1 || default_max_results > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--analyzer-default-results must be in [1, 64], got ", default_max_results));
  }
  return absl::OkStatus();
}

absl::Status SetUpAnalyzer(const AnalyzerServerOptions& options, ServiceContext& ctx) {
  KAGENT_RETURN_IF_ERROR(options.Validate());
  const std::string path = options.optimization_db.empty() ? DefaultOptimizationDbPath() : options.optimization_db;
  PrescriberOptions prescriber_options;
  prescriber_options.default_max_results = options.default_max_results;
  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<Prescriber> prescriber,
                          Prescriber::FromFile(path, prescriber_options));
  KLOG(INFO).With("version", static_cast<double>(prescriber->db().version()))
          .With("patterns", static_cast<double>(prescriber->db().patterns().size()))
      << "optimization database loaded from " << path;
  std::shared_ptr<const Prescriber> shared(std::move(prescriber));
  prometheus::Registry* registry = ctx.metrics != nullptr ? &ctx.metrics->registry() : nullptr;
  PrescriptionRanker* ranker = nullptr;
  if (!options.llm_config.empty()) {
    KAGENT_ASSIGN_OR_RETURN(
        ConfiguredLlm llm,
        LoadLlmStack(options.llm_config, options.llm_deps, registry, "LLM prescriber"));
    ranker = ctx.Keep(std::make_unique<LlmPrescriber>(
        llm.stack.client, llm.stack.prompts,
        llm_engine::AgentOptions{.name = absl::StrCat("llm:", llm.config.provider),
                                 .model = options.llm_model}));
    KLOG(INFO).With("agent", ranker->Name())
            .With("model", options.llm_model.empty() ? llm.config.model : options.llm_model)
        << "the analyzer prescribes through the LLM";
  }
  auto* svc = ctx.Keep(std::make_unique<AnalyzerServiceImpl>(shared, ctx.auth, registry, ranker));
  ctx.host->AddService(svc, kagent::v1::AnalyzerService::service_full_name());
  return absl::OkStatus();
}

absl::Status SetUpAnalyzer(const std::string& db_path, ServiceContext& ctx) {
  AnalyzerServerOptions options;
  options.optimization_db = db_path;
  return SetUpAnalyzer(options, ctx);
}

}  // namespace kagent
