#include "services/judge/judge_setup.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/status.h"
#include "engines/llm/llm_brain.h"
#include "engines/llm/llm_narrator.h"
#include "kagent/v1/judge_service.grpc.pb.h"
#include "services/judge/judge_service.h"

namespace kagent {

void JudgeServerOptions::Register(OptionSet& o) {
  o.AddDouble("judge-at-roofline-pct", &rules.at_roofline_pct,
              "efficiency (max SOL, %) at or above which a kernel is at its roofline");
  o.AddDouble("judge-bound-sol-pct", &rules.bound_sol_pct,
              "SOL (%) at or above which a kernel is memory- or compute-bound");
  o.AddDouble("judge-low-occupancy-pct", &rules.low_occupancy_pct,
              "theoretical occupancy (%) below which a kernel can be occupancy-limited");
  o.AddDouble("judge-launch-bound-ns", &rules.launch_bound_ns,
              "mean kernel time per launch (ns) below which a profile is launch-bound");
  o.AddDouble("judge-min-gpu-busy-pct", &rules.min_gpu_busy_pct,
              "kernel time over the wall-clock median (%) below which a profile is overhead-bound");
  o.AddString("llm-config", &llm_config,
              "LLM configuration file (JSON, docs/llm.md): the judge narrates through the LLM");
  o.AddValidator([this] { return Validate(); });
}

absl::Status JudgeServerOptions::Validate() const {
  for (const auto& [name, value] : {std::pair{"judge-at-roofline-pct", rules.at_roofline_pct},
                                    std::pair{"judge-bound-sol-pct", rules.bound_sol_pct},
                                    std::pair{"judge-low-occupancy-pct", rules.low_occupancy_pct},
                                    std::pair{"judge-min-gpu-busy-pct", rules.min_gpu_busy_pct}}) {
    if (!(value > 0 && value <= 100)) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " must be in (0, 100], got ", value));
    }
  }
  if (rules.bound_sol_pct >= rules.at_roofline_pct) {
    return absl::InvalidArgumentError("--judge-bound-sol-pct must be below --judge-at-roofline-pct");
  }
  if (!(rules.launch_bound_ns > 0)) {
    return absl::InvalidArgumentError("--judge-launch-bound-ns must be > 0");
  }
  return absl::OkStatus();
}

absl::Status SetUpJudge(const JudgeServerOptions& options, ServiceContext& ctx, JudgeNarrator* narrator) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (narrator == nullptr && !options.llm_config.empty()) {
    KAGENT_ASSIGN_OR_RETURN(
        ConfiguredLlm llm,
        LoadLlmStack(options.llm_config, options.llm_deps,
                     ctx.metrics != nullptr ? &ctx.metrics->registry() : nullptr, "LLM narrator"));
    narrator = ctx.Keep(std::make_unique<LlmNarrator>(
        llm.stack.client, llm.stack.prompts,
        LlmNarratorOptions{.name = absl::StrCat("llm:", llm.config.provider),
                           .model = options.llm_model}));
    KLOG(INFO).With("narrator", narrator->Name())
            .With("model", options.llm_model.empty() ? llm.config.model : options.llm_model)
        << "judge narrates through the LLM";
  }
  prometheus::Registry* registry = ctx.metrics != nullptr ? &ctx.metrics->registry() : nullptr;
  auto* svc = ctx.Keep(std::make_unique<JudgeServiceImpl>(options.rules, narrator, ctx.auth, registry));
  ctx.host->AddService(svc, kagent::v1::JudgeService::service_full_name());
  return absl::OkStatus();
}

absl::Status SetUpJudge(ServiceContext& ctx) { return SetUpJudge(JudgeServerOptions{}, ctx, nullptr); }

}  // namespace kagent
