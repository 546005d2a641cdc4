#include "services/judge/narrator.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "kernel_model/categories.h"
#include "kernel_model/metric_names.h"

namespace kagent {
namespace {

using kagent::v1::BottleneckReport;
using kagent::v1::HardwareMetrics;
using kagent::v1::KernelMetrics;
using kagent::v1::RootCause;

// What to do next, by primary category (deterministic, from the rules' reading).
std::string Advice(kagent::v1::BottleneckCategory category) {
  switch (category) {
    case kagent::v1::BOTTLENECK_MEMORY_BOUND:
      return "Gains come from moving fewer bytes (fusion, reuse, narrower intermediates) or "
             "from reaching the bandwidth ceiling with wide, coalesced accesses.";
    case kagent::v1::BOTTLENECK_COMPUTE_BOUND:
      return "Gains come from cheaper math (tensor cores, lower precision where allowed) or "
             "from overlapping the remaining memory traffic with the math.";
    case kagent::v1::BOTTLENECK_LATENCY_BOUND:
      return "Neither unit is busy: expose more parallelism or hide latency with more warps in "
             "flight, deeper pipelining and more independent loads.";
    case kagent::v1::BOTTLENECK_OCCUPANCY_LIMITED:
      return "Freeing the limiting resource lets more warps reside and hide latency.";
    case kagent::v1::BOTTLENECK_LAUNCH_BOUND:
      return "Fewer, larger launches (fusion, CUDA graphs) remove the fixed per-launch cost.";
    case kagent::v1::BOTTLENECK_GRID_UNDERFILLED:
      return "Split the work into more CTAs so that every SM has some.";
    case kagent::v1::BOTTLENECK_AT_ROOFLINE:
      return "The kernel is at its roofline: only doing less work makes it faster.";
    default:
      return "";
  }
}

// Citable values: metric name -> every measured value of it in the profile.
using Citable = std::map<std::string, std::vector<double>, std::less<>>;

void AddKernel(const KernelMetrics& k, Citable* out) {
  for (const auto& [name, value] : k.values()) (*out)[name].push_back(value);
  if (k.duration_ns() > 0) (*out)[metric::kDuration].push_back(k.duration_ns());
  auto product = [](const auto& dims) {
    double p = 1;
    for (auto d : dims) p *= static_cast<double>(d);
    return p;
  };
  if (!k.grid().empty()) (*out)[metric::kGridSize].push_back(product(k.grid()));
  if (!k.block().empty()) (*out)[metric::kBlockSize].push_back(product(k.block()));
}

Citable CollectCitable(const HardwareMetrics& metrics, const ProfileView& view) {
  Citable out;
  for (const KernelMetrics& k : metrics.kernels()) AddKernel(k, &out);
  if (metrics.has_aggregate()) AddKernel(metrics.aggregate(), &out);
  if (metrics.compute_sol_pct() > 0) out[metric::kComputeSol].push_back(metrics.compute_sol_pct());
  if (metrics.memory_sol_pct() > 0) out[metric::kMemorySol].push_back(metrics.memory_sol_pct());
  for (const auto& [name, value] : view.values()) out[name].push_back(value);
  return out;
}

bool Matches(const Citable& citable, const std::string& metric, double value) {
  auto it = citable.find(metric);
  if (it == citable.end()) return false;
  for (double measured : it->second) {
    if (WithinOnePercent(value, measured)) return true;
  }
  return false;
}

bool IsMetricChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

// Metric-name tokens of `sentence` (runs of [A-Za-z0-9_.] containing "__"), with
// trailing dots removed. `rest` receives the sentence with those tokens blanked.
// Tokens that are (parts of) kernel names in the profile are not metrics: Triton names
// such as "triton__0d1d" contain "__" too.
std::vector<std::string> MetricTokens(absl::string_view sentence,
                                      const std::vector<std::string>& kernel_names,
                                      std::string* rest) {
  std::vector<std::string> tokens;
  rest->assign(sentence.data(), sentence.size());
  size_t i = 0;
  while (i < sentence.size()) {
    if (!IsMetricChar(sentence[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < sentence.size() && IsMetricChar(sentence[j])) ++j;
    std::string token(sentence.substr(i, j - i));
    while (!token.empty() && token.back() == '.') token.pop_back();
    bool kernel_name = false;
    for (const std::string& k : kernel_names) {
      kernel_name = kernel_name || (!token.empty() && k.find(token) != std::string::npos);
    }
    if (token.find("__") != std::string::npos && !kernel_name) {
      tokens.push_back(token);
      for (size_t k = i; k < j; ++k) (*rest)[k] = ' ';
    }
    i = j;
  }
  return tokens;
}

// Numbers in `text` ("1,234.5", "91.2%", "3e6"); thousands separators are ignored.
std::vector<double> Numbers(const std::string& text) {
  std::string clean;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ',' && i > 0 && i + 1 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      continue;
    }
    clean.push_back(text[i]);
  }
  std::vector<double> out;
  const char* p = clean.c_str();
  while (*p) {
    bool starts = std::isdigit(static_cast<unsigned char>(*p)) ||
                  (*p == '.' && std::isdigit(static_cast<unsigned char>(p[1])));
    // Skip digits glued to letters (e.g. "sm_90", "x2"): not quantities.
    if (starts && p != clean.c_str() &&
        (std::isalpha(static_cast<unsigned char>(p[-1])) || p[-1] == '_')) {
      while (*p && (std::isalnum(static_cast<unsigned char>(*p)) || *p == '_')) ++p;
      continue;
    }
    if (starts) {
      char* end = nullptr;
      double v = std::strtod(p, &end);
      if (end != p) {
        out.push_back(v);
        p = end;
        continue;
      }
    }
    ++p;
  }
  return out;
}

// Splits prose into sentences at ". ", "! ", "? " and newlines, keeping the punctuation.
std::vector<std::string> Sentences(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  for (size_t i = 0; i < text.size(); ++i) {
    current.push_back(text[i]);
    bool end = text[i] == '\n' ||
               ((text[i] == '.' || text[i] == '!' || text[i] == '?') &&
                (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n'));
    if (end) {
      out.push_back(current);
      current.clear();
    }
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

}  // namespace

bool WithinOnePercent(double cited, double measured) {
  if (!std::isfinite(cited) || !std::isfinite(measured)) return false;
  if (measured == 0) return cited == 0;
  return std::fabs(cited - measured) <= 0.01 * std::fabs(measured);
}

absl::StatusOr<NarrativeResult> HeuristicNarrator::Narrate(const BottleneckReport& report,
                                                           const HardwareMetrics& metrics,
                                                           const kagent::v1::GpuSpec* /*gpu*/) {
  NarrativeResult result;
  std::vector<std::string> parts;
  parts.push_back(absl::StrCat("Diagnosis: ", report.summary(), "."));
  for (const RootCause& cause : report.root_causes()) {
    if (cause.source() != "rules") continue;
    parts.push_back(absl::StrCat(cause.cause(), "."));
  }
  std::string advice = Advice(report.primary());
  if (!advice.empty()) parts.push_back(advice);
  result.narrative = absl::StrJoin(parts, " ");
  return result;
}

std::map<std::string, double> UnprofiledFacts(const kagent::v1::Measurement& m) {
  std::map<std::string, double> facts;
  const double mine = m.candidate().median_ms();
  if (mine > 0) facts[kFactMedianMs] = mine;
  if (m.eager().median_ms() > 0) facts[kFactEagerMedianMs] = m.eager().median_ms();
  if (m.compiled().median_ms() > 0) facts[kFactCompileMedianMs] = m.compiled().median_ms();
  if (mine > 0 && m.eager().median_ms() > 0) facts[kFactSpeedupVsEager] = m.eager().median_ms() / mine;
  if (mine > 0 && m.compiled().median_ms() > 0) {
    facts[kFactSpeedupVsCompile] = m.compiled().median_ms() / mine;
  }
  return facts;
}

absl::StatusOr<NarrativeResult> HeuristicNarrator::NarrateWithoutProfile(
    const BottleneckReport& /*report*/, const UnprofiledKernel& kernel) {
  std::vector<std::string> parts;
  parts.push_back(absl::StrCat("No hardware counters: ", kernel.reason,
                               "; without a profile the bottleneck is not classified."));
  auto fact = [&](const char* name) {
    auto it = kernel.facts.find(name);
    return it == kernel.facts.end() ? std::optional<double>() : std::optional<double>(it->second);
  };
  std::string what = kernel.op_class.empty() ? "The kernel" : absl::StrCat("The ", kernel.op_class, " kernel");
  if (std::optional<double> mine = fact(kFactMedianMs)) {
    std::string sentence = absl::StrFormat("%s takes %.4g ms (median)", what, *mine);
    auto compare = [&](const char* ratio, const char* name) {
      if (std::optional<double> r = fact(ratio)) {
        absl::StrAppend(&sentence, absl::StrFormat(", %.2fx %s %s", *r >= 1 ? *r : 1 / *r,
                                                   *r >= 1 ? "faster than" : "slower than", name));
      }
    };
    compare(kFactSpeedupVsEager, "eager PyTorch");
    compare(kFactSpeedupVsCompile, "torch.compile");
    parts.push_back(sentence + ".");
  }
  parts.push_back("Profile it on a GPU to learn what limits it.");
  NarrativeResult result;
  result.narrative = absl::StrJoin(parts, " ");
  return result;
}

namespace {

// ValidateNarrative's rules over `citable`; `where` names what is cited against ("the
// profile").
NarrativeValidation Validate(const NarrativeResult& result, const Citable& citable,
                             const std::vector<std::string>& kernel_names,
                             absl::string_view where, const std::string& source) {
  NarrativeValidation out;

  // Extra root causes: evidence by evidence.
  for (const RootCause& cause : result.extra_root_causes) {
    RootCause kept = cause;
    kept.clear_evidence();
    kept.set_source(source);
    for (const auto& e : cause.evidence()) {
      if (citable.find(e.metric()) == citable.end()) {
        out.drops.push_back(absl::StrCat("root cause '", cause.cause(), "': metric ", e.metric(),
                                         " is not in ", where));
      } else if (!Matches(citable, e.metric(), e.value())) {
        out.drops.push_back(absl::StrCat("root cause '", cause.cause(), "': ", e.metric(), " = ",
                                         e.value(), " does not match ", where, " within 1%"));
      } else {
        *kept.add_evidence() = e;
      }
    }
    if (kept.evidence().empty()) {
      out.drops.push_back(absl::StrCat("root cause '", cause.cause(), "' dropped: no valid evidence"));
      continue;
    }
    out.kept.extra_root_causes.push_back(std::move(kept));
  }

  // Narrative: sentence by sentence.
  std::string narrative;
  for (const std::string& sentence : Sentences(result.narrative)) {
    std::string rest;
    std::vector<std::string> names = MetricTokens(sentence, kernel_names, &rest);
    std::vector<double> numbers = Numbers(rest);
    std::string problem;
    for (const std::string& name : names) {
      if (citable.find(name) == citable.end()) {
        problem = absl::StrCat("metric ", name, " is not in ", where);
        break;
      }
      if (numbers.empty()) continue;
      bool any = false;
      for (double n : numbers) any = any || Matches(citable, name, n);
      if (!any) {
        problem = absl::StrCat("no number in the sentence matches ", name, " within 1%");
        break;
      }
    }
    if (!problem.empty()) {
      out.drops.push_back(absl::StrCat("narrative sentence '", sentence, "': ", problem));
      continue;
    }
    narrative += sentence;
  }
  // Trim leading/trailing spaces left by dropped sentences.
  size_t b = narrative.find_first_not_of(" \n");
  size_t e = narrative.find_last_not_of(" \n");
  out.kept.narrative = b == std::string::npos ? "" : narrative.substr(b, e - b + 1);
  return out;
}

}  // namespace

NarrativeValidation ValidateNarrative(const NarrativeResult& result, const HardwareMetrics& metrics,
                                      const ProfileView& view, const std::string& source) {
  std::vector<std::string> kernel_names;
  for (const KernelMetrics& k : metrics.kernels()) kernel_names.push_back(k.kernel_name());
  return Validate(result, CollectCitable(metrics, view), kernel_names, "the profile", source);
}

NarrativeValidation ValidateNarrativeWithoutProfile(const NarrativeResult& result,
                                                    const std::map<std::string, double>& facts,
                                                    const std::string& source) {
  Citable citable;
  for (const auto& [name, value] : facts) citable[name].push_back(value);
  return Validate(result, citable, {},
                  "what was measured (no hardware counters)", source);
}

}  // namespace kagent
