// Builds the AnalyzerService on a ServiceContext. Shared by the kagent-analyzer binary
// and kagentd.
//
// The prescribe agent: with `llm_config` (--llm-config FILE, the JSON of docs/llm.md) an
// LlmPrescriber over that configuration's stack ranks the prescriber's candidates; any
// failure of it (the endpoint, a spent budget, a refused reply) returns the prescriber's
// own ranking for that request. Without it, the prescriber's ranking.
#ifndef KAGENT_SERVICES_ANALYZER_ANALYZER_SETUP_H_
#define KAGENT_SERVICES_ANALYZER_ANALYZER_SETUP_H_

#include <string>

#include "absl/status/status.h"
#include "common/llm/factory.h"
#include "common/options.h"
#include "common/service_main.h"
#include "kernel_model/prescriber.h"

namespace kagent {

struct AnalyzerServerOptions {
  std::string optimization_db;  // --optimization-db; empty: DefaultOptimizationDbPath()
  int default_max_results = 8;  // --analyzer-default-results
  // LLM configuration file (docs/llm.md); empty: the prescriber's ranking alone.
  std::string llm_config;
  // The prescribe agent's model; empty: the configuration's `model`.
  std::string llm_model;
  // Shared LLM pieces (not options): kagentd passes its Accountant, breaker registry and
  // metrics, so these calls count against the same budgets as the other agents'.
  llm::LlmDeps llm_deps;

  void Register(OptionSet& o);
  absl::Status Validate() const;
};

// Loads and validates the database (a malformed file fails start-up with the pattern
// and field named; SharedOptimizationDb: once per process), builds the LLM prescribe
// agent when `llm_config` is set (the configuration's errors prefixed with "LLM
// prescriber from FILE: "; the endpoint is not probed) and adds the AnalyzerService to
// `ctx.host`.
absl::Status SetUpAnalyzer(const AnalyzerServerOptions& options, ServiceContext& ctx);

// The same with the default options and `db_path` (empty: DefaultOptimizationDbPath()).
absl::Status SetUpAnalyzer(const std::string& db_path, ServiceContext& ctx);

}  // namespace kagent

#endif  // KAGENT_SERVICES_ANALYZER_ANALYZER_SETUP_H_
