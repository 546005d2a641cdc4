#include "services/analyzer/analyzer_setup.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "kagent/v1/analyzer_service.grpc.pb.h"
#include "services/analyzer/analyzer_service.h"
#if __has_include("common/install_paths.h")
#include "common/install_paths.h"
#define KAGENT_HAVE_INSTALL_PATHS 1
#endif

namespace kagent {

std::string DefaultOptimizationDbPath() {
#ifdef KAGENT_HAVE_INSTALL_PATHS
  std::string found = FindInstallFile(kDefaultOptimizationDbPath);
  if (!found.empty()) return found;
#endif
  return kDefaultOptimizationDbPath;
}

void AnalyzerServerOptions::Register(OptionSet& o) {
  o.AddString("optimization-db", &optimization_db,
              "the optimization database (JSON); empty: data/optimization_db.json of the install");
  o.AddInt("analyzer-default-results", &default_max_results,
           "prescriptions returned when a request leaves max_results at 0 (1..64)");
  o.AddValidator([this] { return Validate(); });
}

absl::Status AnalyzerServerOptions::Validate() const {
  if (default_max_results < 1 || default_max_results > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--analyzer-default-results must be in [1, 64], got ", default_max_results));
  }
  return absl::OkStatus();
}

absl::Status SetUpAnalyzer(const AnalyzerServerOptions& options, ServiceContext& ctx,
                           const Analyzer** analyzer_out) {
  KAGENT_RETURN_IF_ERROR(options.Validate());
  const std::string path = options.optimization_db.empty() ? DefaultOptimizationDbPath() : options.optimization_db;
  AnalyzerOptions analyzer_options;
  analyzer_options.default_max_results = options.default_max_results;
  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<Analyzer> analyzer, Analyzer::FromFile(path, analyzer_options));
  KLOG(INFO).With("version", static_cast<double>(analyzer->db().version()))
          .With("patterns", static_cast<double>(analyzer->db().patterns().size()))
      << "optimization database loaded from " << path;
  std::shared_ptr<const Analyzer> shared(std::move(analyzer));
  if (analyzer_out != nullptr) *analyzer_out = shared.get();
  prometheus::Registry* registry = ctx.metrics != nullptr ? &ctx.metrics->registry() : nullptr;
  auto* svc = ctx.Keep(std::make_unique<AnalyzerServiceImpl>(shared, ctx.auth, registry));
  ctx.host->AddService(svc, kagent::v1::AnalyzerService::service_full_name());
  return absl::OkStatus();
}

absl::Status SetUpAnalyzer(const std::string& db_path, ServiceContext& ctx) {
  AnalyzerServerOptions options;
  options.optimization_db = db_path;
  return SetUpAnalyzer(options, ctx, nullptr);
}

}  // namespace kagent
