#include "engines/llm/llm_narrator.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm/agent_call.h"
#include "engines/llm/prompt_values.h"
#include "kernel_model/categories.h"
#include "kernel_model/gpu_spec.h"
#include "kernel_model/metric_names.h"

namespace kagent {
namespace {

using kagent::v1::BottleneckReport;
using kagent::v1::HardwareMetrics;
using kagent::v1::KernelMetrics;

const KernelMetrics* DiagnosedKernel(const BottleneckReport& report,
                                     const HardwareMetrics& metrics) {
  for (const KernelMetrics& k : metrics.kernels()) {
    if (!report.dominant_kernel().empty() && k.kernel_name() == report.dominant_kernel()) {
      return &k;
    }
  }
  if (metrics.has_aggregate()) return &metrics.aggregate();
  if (metrics.kernels_size() == 1) return &metrics.kernels(0);
  return nullptr;
}

// A cited value: a JSON number, or a string holding one ("87.5", "87.5%").
std::optional<double> CitedValue(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    while (!s.empty() && (s.back() == '%' || s.back() == ' ')) s.pop_back();
    double d = 0;
    if (absl::SimpleAtod(s, &d)) return d;
  }
  return std::nullopt;
}

}  // namespace

std::string FormatMetricsForPrompt(const BottleneckReport& report, const HardwareMetrics& metrics,
                                   int max_metrics) {
  std::string out;
  if (const KernelMetrics* k = DiagnosedKernel(report, metrics); k != nullptr) {
    // values() is a protobuf map (unordered): sort for a stable prompt and cassette hash.
    std::map<std::string, double> sorted(k->values().begin(), k->values().end());
    if (k->duration_ns() > 0) sorted.emplace(metric::kDuration, k->duration_ns());
    int n = 0;
    for (const auto& [name, value] : sorted) {
      if (n++ == max_metrics) break;
      absl::StrAppend(&out, name, " = ", llm_engine::FormatNumber(value), "\n");
    }
  }
  if (metrics.compute_sol_pct() > 0) {
    absl::StrAppend(&out, metric::kComputeSol, " = ",
                    llm_engine::FormatNumber(metrics.compute_sol_pct()), " (profile)\n");
  }
  if (metrics.memory_sol_pct() > 0) {
    absl::StrAppend(&out, metric::kMemorySol, " = ",
                    llm_engine::FormatNumber(metrics.memory_sol_pct()), " (profile)\n");
  }
  if (out.empty()) return "(no metrics)";
  out.pop_back();
  return out;
}

LlmNarrator::LlmNarrator(std::shared_ptr<llm::LlmClient> client,
                         std::shared_ptr<const llm::PromptLibrary> prompts,
                         LlmNarratorOptions options)
    : client_(std::move(client)), prompts_(std::move(prompts)), options_(std::move(options)) {
  KAGENT_CHECK(client_ != nullptr) << "LlmNarrator needs a client";
  KAGENT_CHECK(prompts_ != nullptr) << "LlmNarrator needs a prompt library";
}

absl::StatusOr<NarrativeResult> LlmNarrator::Narrate(const BottleneckReport& report,
                                                     const HardwareMetrics& metrics,
                                                     const kagent::v1::GpuSpec* gpu) {
  const KernelMetrics* k = DiagnosedKernel(report, metrics);
  std::string kernel_name = !report.dominant_kernel().empty() ? report.dominant_kernel()
                            : k != nullptr && !k->kernel_name().empty() ? k->kernel_name()
                                                                        : "the kernel";
  llm::PromptValues values = {
      {"gpu", gpu != nullptr && !gpu->name().empty() ? llm_engine::DescribeGpu(gpu) : options_.gpu},
      {"kernel_name", kernel_name},
      {"category", CategoryName(report.primary())},
      {"diagnosis", llm_engine::DescribeReport(&report)},
      {"profile", "Measured metrics, from its profile (name = value):"},
      {"metrics", FormatMetricsForPrompt(report, metrics, options_.max_metrics)},
  };
  return Ask(values);
}

absl::StatusOr<NarrativeResult> LlmNarrator::NarrateWithoutProfile(const BottleneckReport& report,
                                                                   const UnprofiledKernel& kernel) {
  std::string gpu = options_.gpu;
  if (kernel.gpu != nullptr && !kernel.gpu->name().empty()) {
    gpu = llm_engine::DescribeGpu(kernel.gpu);
  } else if (kernel.measurement != nullptr && MeasuredOnCpuWorker(*kernel.measurement)) {
    const kagent::v1::GpuSpec cpu = CpuWorkerGpuSpec();  // DescribeGpu's words for a CPU worker
    gpu = llm_engine::DescribeGpu(&cpu);
  }
  std::string known = absl::StrCat(
      "op class: ", kernel.op_class.empty() ? "not recognized" : kernel.op_class, "\n");
  for (const auto& [name, value] : kernel.facts) {
    absl::StrAppend(&known, name, " = ", llm_engine::FormatNumber(value), "\n");
  }
  known.pop_back();
  llm::PromptValues values = {
      {"gpu", gpu},
      {"kernel_name", kernel.op_class.empty() ? "the kernel" : absl::StrCat("the ", kernel.op_class, " kernel")},
      {"category", "none: without hardware counters the rules classify no bottleneck"},
      {"diagnosis", report.summary()},
      {"profile",
       absl::StrCat("No hardware counters exist for this kernel: ", kernel.reason,
                    ". Nothing here comes from a profiler, so do not cite or guess counter "
                    "values (DRAM throughput, occupancy, warp stalls, speed of light); reason "
                    "from the op class and the measured times alone. What is known (the "
                    "speedups are eager's or torch.compile's median over the kernel's: above 1, "
                    "the kernel is faster):")},
      {"metrics", known},
  };
  return Ask(values);
}

absl::StatusOr<NarrativeResult> LlmNarrator::Ask(const llm::PromptValues& values) {
  KAGENT_ASSIGN_OR_RETURN(
      llm_engine::AgentAnswer answer,
      llm_engine::AskAgent(*client_, *prompts_, "narrate", "judge_narrative", values, {"narrative"},
                           {.name = options_.name,
                            .model = options_.model,
                            .max_tokens = options_.max_tokens,
                            .temperature = options_.temperature,
                            .max_json_attempts = options_.max_json_attempts}));
  const nlohmann::json& value = answer.value;
  if (!value.at("narrative").is_string()) {
    return llm_engine::RefuseReply(answer, "narrate",
                                   {.name = options_.name, .model = options_.model},
                                   "\"narrative\" is not a string");
  }
  NarrativeResult result;
  result.narrative = value.at("narrative").get<std::string>();
  result.model = options_.model;
  result.prompt = std::move(answer.prompt);
  result.reply = std::move(answer.reply);
  auto causes = value.find("additional_causes");
  if (causes != value.end() && causes->is_array()) {
    for (const nlohmann::json& c : *causes) {
      if (!c.is_object()) continue;
      auto metric = c.find("metric");
      auto cited = c.find("value");
      if (metric == c.end() || !metric->is_string() || cited == c.end()) continue;
      std::optional<double> number = CitedValue(*cited);
      if (!number.has_value()) continue;
      std::string explanation;
      if (auto e = c.find("explanation"); e != c.end() && e->is_string()) {
        explanation = e->get<std::string>();
      }
      kagent::v1::RootCause rc;
      rc.set_cause(explanation.empty()
                       ? absl::StrCat(metric->get<std::string>(), " = ",
                                      llm_engine::FormatNumber(*number))
                       : explanation);
      rc.set_source("llm");
      kagent::v1::Evidence* ev = rc.add_evidence();
      ev->set_metric(metric->get<std::string>());
      ev->set_value(*number);
      ev->set_meaning(explanation);
      result.extra_root_causes.push_back(std::move(rc));
    }
  }
  return result;
}

}  // namespace kagent
