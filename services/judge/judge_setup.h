// Builds the JudgeService on a ServiceContext. Shared by the kagent-judge binary and
// kagentd (library kagent_judge_server, apart from kagent_judge because the LLM
// narrator of engines/llm builds on kagent_judge).
//
// The narrative: with `llm_config` (--llm-config FILE, the JSON of docs/llm.md) the judge
// narrates through an LlmNarrator over that configuration's LLM stack; the narrator only
// adds prose and extra root causes whose cited metrics the judge checks against the
// profile, and the category and rule evidence never depend on it. A failing LLM call
// (provider down, budget spent, unusable reply) falls back to the heuristic narrative
// for that diagnosis. Without `llm_config`, the heuristic narrative.
#ifndef KAGENT_SERVICES_JUDGE_JUDGE_SETUP_H_
#define KAGENT_SERVICES_JUDGE_JUDGE_SETUP_H_

#include <string>

#include "absl/status/status.h"
#include "common/llm/factory.h"
#include "common/options.h"
#include "common/service_main.h"
#include "services/judge/judge.h"
#include "services/judge/narrator.h"

namespace kagent {

// The judge's options: the rules' main thresholds (docs/judge.md) and the LLM narrator.
struct JudgeServerOptions {
  JudgeOptions rules;
  // LLM configuration file (docs/llm.md); empty: the heuristic narrative.
  std::string llm_config;
  // The narrator's model; empty: the configuration's `model` (kagentd's --llm-agents).
  std::string llm_model;
  // Shared LLM pieces (not options): kagentd passes the Accountant (and breaker
  // registry) it gives the optimization manager, so the narrator's calls count against
  // the same job and tenant budgets as the brain's.
  llm::LlmDeps llm_deps;

  // Registers --judge-at-roofline-pct, --judge-bound-sol-pct, --judge-low-occupancy-pct,
  // --judge-launch-bound-ns, --judge-min-gpu-busy-pct, --llm-config and a validator.
  void Register(OptionSet& o);
  absl::Status Validate() const;
};

// Adds the JudgeService to `ctx.host`. `narrator` may be null: then an LlmNarrator when
// `options.llm_config` is set (owned by `ctx`), else the heuristic narrative. A narrator
// passed in is not owned and must outlive the server. INVALID_ARGUMENT for bad options;
// the configuration's own errors (unreadable file: NOT_FOUND; bad JSON or keys:
// INVALID_ARGUMENT; missing API key: FAILED_PRECONDITION), prefixed with the file.
absl::Status SetUpJudge(const JudgeServerOptions& options, ServiceContext& ctx,
                        JudgeNarrator* narrator = nullptr);

// The same with the default options and the heuristic narrative.
absl::Status SetUpJudge(ServiceContext& ctx);

}  // namespace kagent

#endif  // KAGENT_SERVICES_JUDGE_JUDGE_SETUP_H_
