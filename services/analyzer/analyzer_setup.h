// Builds the AnalyzerService on a ServiceContext. Shared by the kagent-analyzer binary
// and kagentd.
#ifndef KAGENT_SERVICES_ANALYZER_ANALYZER_SETUP_H_
#define KAGENT_SERVICES_ANALYZER_ANALYZER_SETUP_H_

#include <string>

#include "absl/status/status.h"
#include "common/options.h"
#include "common/service_main.h"
#include "kernel_model/prescriber.h"

namespace kagent {

struct AnalyzerServerOptions {
  std::string optimization_db;  // --optimization-db; empty: DefaultOptimizationDbPath()
  int default_max_results = 8;  // --analyzer-default-results

  void Register(OptionSet& o);
  absl::Status Validate() const;
};

// Loads and validates the database (a malformed file fails start-up with the pattern
// and field named; SharedOptimizationDb: once per process) and adds the AnalyzerService
// to `ctx.host`.
absl::Status SetUpAnalyzer(const AnalyzerServerOptions& options, ServiceContext& ctx);

// The same with the default options and `db_path` (empty: DefaultOptimizationDbPath()).
absl::Status SetUpAnalyzer(const std::string& db_path, ServiceContext& ctx);

}  // namespace kagent

#endif  // KAGENT_SERVICES_ANALYZER_ANALYZER_SETUP_H_
