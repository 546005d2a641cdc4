// Builds the JudgeService on a ServiceContext. Shared by the kagent-judge binary and
// kagentd.
#ifndef KAGENT_SERVICES_JUDGE_JUDGE_SETUP_H_
#define KAGENT_SERVICES_JUDGE_JUDGE_SETUP_H_

#include "absl/status/status.h"
#include "common/options.h"
#include "common/service_main.h"
#include "services/judge/judge.h"
#include "services/judge/narrator.h"

namespace kagent {

// The judge's options: the rules' main thresholds (docs/judge.md).
struct JudgeServerOptions {
  JudgeOptions rules;

  // Registers --judge-at-roofline-pct, --judge-bound-sol-pct, --judge-low-occupancy-pct,
  // --judge-launch-bound-ns, --judge-min-gpu-busy-pct and a validator.
  void Register(OptionSet& o);
  absl::Status Validate() const;
};

// Adds the JudgeService to `ctx.host`. `narrator` may be null (heuristic narrative); when
// set it is not owned and must outlive the server. INVALID_ARGUMENT for bad options.
absl::Status SetUpJudge(const JudgeServerOptions& options, ServiceContext& ctx,
                        JudgeNarrator* narrator = nullptr);

// The same with the default options and the heuristic narrative.
absl::Status SetUpJudge(ServiceContext& ctx);

}  // namespace kagent

#endif  // KAGENT_SERVICES_JUDGE_JUDGE_SETUP_H_
