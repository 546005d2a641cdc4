#include "services/judge/judge.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/llm/transcript_status.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm_agent_choice.h"
#include "kernel_model/categories.h"
#include "services/judge/classification.h"
#include "services/judge/report_text.h"
#include "services/judge/root_causes.h"

namespace kagent {
namespace {

using kagent::v1::BottleneckCategory;
using kagent::v1::BottleneckReport;
using kagent::v1::DiagnoseRequest;
using judge_text::Pct;
using kagent::v1::RootCause;

}  // namespace

absl::Status ValidateDiagnoseRequest(const DiagnoseRequest& request) {
  if (request.metrics().kernels().empty()) {
    if (request.no_profile_reason().empty()) {
      return absl::InvalidArgumentError(
          "metrics.kernels is empty: the judge needs at least one profiled kernel (or, for a "
          "diagnosis without hardware counters, no_profile_reason and the measurement)");
    }
    if (!(request.measurement().candidate().median_ms() > 0)) {
      return absl::InvalidArgumentError(
          "a diagnosis without hardware counters (no_profile_reason) needs the kernel's "
          "measurement with candidate.median_ms > 0");
    }
    return absl::OkStatus();
  }
  if (!request.has_gpu()) {
    return absl::InvalidArgumentError("gpu is required: the judge needs the GPU's spec");
  }
  if (request.gpu().sm_count() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu.sm_count must be > 0, got ", request.gpu().sm_count(), " (gpu '",
        request.gpu().name(), "')"));
  }
  return absl::OkStatus();
}

Judge::Judge(JudgeOptions options, JudgeNarrator* narrator)
    : options_(options), narrator_(narrator) {}

absl::StatusOr<BottleneckReport> Judge::Diagnose(const DiagnoseRequest& request,
                                                 v1::AgentExchange* exchange) const {
  KAGENT_RETURN_IF_ERROR(ValidateDiagnoseRequest(request));
  if (request.metrics().kernels().empty()) return DiagnoseWithoutProfile(request, exchange);
  KAGENT_ASSIGN_OR_RETURN(
      ProfileView view,
      ProfileView::Build(request.metrics(), request.gpu(),
                         request.has_op_signature() ? &request.op_signature() : nullptr,
                         request.has_timing() ? &request.timing() : nullptr));
  KAGENT_ASSIGN_OR_RETURN(BottleneckReport report, DiagnoseByRules(request, view));
  KAGENT_RETURN_IF_ERROR(AddNarrative(
      request,
      [&](JudgeNarrator& narrator) {
        return narrator.Narrate(report, request.metrics(), &request.gpu());
      },
      [&](const NarrativeResult& narrative, const std::string& source) {
        return ValidateNarrative(narrative, request.metrics(), view, source);
      },
      report, exchange));
  return report;
}

absl::StatusOr<BottleneckReport> Judge::DiagnoseWithoutProfile(const DiagnoseRequest& request,
                                                               v1::AgentExchange* exchange) const {
  UnprofiledKernel kernel;
  kernel.reason = request.no_profile_reason();
  kernel.op_class = request.op_signature().op_class();
  kernel.facts = UnprofiledFacts(request.measurement());
  kernel.measurement = &request.measurement();
  kernel.gpu = request.has_gpu() ? &request.gpu() : nullptr;
  // No category, limiter, efficiency or metric values: nothing the rules could read.
  BottleneckReport report;
  report.set_summary(absl::StrCat("no hardware counters (", kernel.reason,
                                  "): the bottleneck is not classified"));
  KAGENT_RETURN_IF_ERROR(AddNarrative(
      request,
      [&](JudgeNarrator& narrator) { return narrator.NarrateWithoutProfile(report, kernel); },
      [&](const NarrativeResult& narrative, const std::string& source) {
        return ValidateNarrativeWithoutProfile(narrative, kernel.facts, source);
      },
      report, exchange));
  return report;
}

absl::Status Judge::AddNarrative(
    const DiagnoseRequest& request,
    const std::function<absl::StatusOr<NarrativeResult>(JudgeNarrator&)>& narrate,
    const std::function<NarrativeValidation(const NarrativeResult&, const std::string&)>& validate,
    BottleneckReport& report, v1::AgentExchange* exchange) const {
  // Narrative: the configured narrator, else (or on its failure, or for a job that chose
  // its LLM agents without "narrate") the heuristic one.
  JudgeNarrator* narrator = narrator_ != nullptr && JobWantsLlmAgent(request.llm_agents(), "narrate")
                                ? narrator_
                                : &heuristic_narrator_;
  absl::StatusOr<NarrativeResult> narrative = narrate(*narrator);
  std::string source = narrator == &heuristic_narrator_ ? "rules" : "llm";
  if (source == "llm" && exchange != nullptr) {
    exchange->set_agent("narrate");
    exchange->set_brain(narrator->Name());
    if (narrative.ok()) {
      exchange->set_model(narrative->model);
      exchange->set_prompt(narrative->prompt);
      exchange->set_reply(narrative->reply);
    } else {
      llm::RecordAgentFallback(narrative.status(), exchange);
    }
  }
  if (!narrative.ok()) {
    KLOG(WARNING).With("narrator", narrator->Name())
        << "narrator failed, using the heuristic narrative: " << narrative.status().ToString();
    narrative = narrate(heuristic_narrator_);
    source = "rules";
    if (!narrative.ok()) return narrative.status();
  }
  NarrativeValidation checked = validate(*narrative, source);
  for (const std::string& drop : checked.drops) {
    KLOG(WARNING).With("narrator", narrator->Name()) << "dropped narrator citation: " << drop;
  }
  report.set_narrative(checked.kept.narrative);
  for (RootCause& cause : checked.kept.extra_root_causes) {
    *report.add_root_causes() = std::move(cause);
  }
  return absl::OkStatus();
}

absl::StatusOr<BottleneckReport> Judge::DiagnoseByRules(const DiagnoseRequest& request,
                                                        const ProfileView& view) const {
  KAGENT_ASSIGN_OR_RETURN(Classification k, Classify(request, view, options_));
  std::vector<RootCause> causes = WriteRootCauses(request, view, k, options_);
  const BottleneckCategory primary = k.primary;
  const BottleneckCategory secondary = k.secondary;
  const std::string& limiter = k.limiter;
  const std::optional<double>& efficiency = k.efficiency;

  // --- The report.
  BottleneckReport report;
  report.set_primary(primary);
  report.set_secondary(secondary);
  report.set_limiter(limiter);
  report.set_efficiency_pct(efficiency.value_or(0));
  report.set_headroom_pct(std::clamp(100.0 - efficiency.value_or(0), 0.0, 100.0));
  report.set_dominant_kernel(view.dominant_kernel());
  report.set_dominant_kernel_share(view.dominant_share());
  for (RootCause& c : causes) *report.add_root_causes() = std::move(c);
  // What the rules read, for the analyzer's preconditions (nothing recomputed there).
  for (const auto& [name, value] : view.values()) (*report.mutable_values())[name] = value;

  std::string summary = absl::StrCat(view.dominant_kernel(), ": ", CategoryName(primary));
  if (secondary != kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED) {
    absl::StrAppend(&summary, " (secondary: ", CategoryName(secondary), ")");
  }
  if (!limiter.empty()) absl::StrAppend(&summary, ", limiter ", limiter);
  if (efficiency) {
    absl::StrAppend(&summary, "; efficiency ", Pct(*efficiency), ", headroom ", Pct(100.0 - std::min(100.0, *efficiency)));
  } else {
    absl::StrAppend(&summary, "; efficiency unknown (no SOL metrics)");
  }
  if (view.groups().size() > 1) {
    absl::StrAppend(&summary, "; dominant kernel of ", view.groups().size(), ", ",
                    Pct(100.0 * view.dominant_share()), " of GPU time");
  }
  report.set_summary(summary);
  return report;
}

}  // namespace kagent
