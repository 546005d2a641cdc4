#include "kernel_model/prescriber.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "kernel_model/categories.h"
#include "kernel_model/occupancy.h"

namespace kagent {
namespace {

using kagent::v1::PrescribeRequest;
using kagent::v1::PrescribeResponse;
using kagent::v1::Prescription;

// The harness's fp32 atol and rtol when the problem sets none (Problem.atol / rtol).
constexpr double kFp32DefaultTolerance = 1e-4;

std::string Num(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.4g", v);
}

bool ListHas(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

bool IsAvoided(const std::string& id, const std::vector<std::string>& avoid) {
  for (const std::string& entry : avoid) {
    if (entry == id) return true;
    if (!entry.empty() && entry.back() == '*' &&
        absl::StartsWith(id, absl::string_view(entry).substr(0, entry.size() - 1))) {
      return true;
    }
  }
  return false;
}

Prescriber::Prescriber(std::shared_ptr<const OptimizationDb> db, PrescriberOptions options)
    : db_(std::move(db)), options_(options) {}

absl::StatusOr<std::unique_ptr<Prescriber>> Prescriber::FromFile(const std::string& path,
                                                               PrescriberOptions options) {
  KAGENT_ASSIGN_OR_RETURN(std::shared_ptr<const OptimizationDb> db, SharedOptimizationDb(path));
  return std::make_unique<Prescriber>(std::move(db), options);
}

absl::StatusOr<std::vector<PatternMatch>> Prescriber::Match(const PrescribeRequest& request) const {
  const auto& report = request.report();
  // Without a profile (no hardware counters: a CPU worker, or profiling failed) there is
  // no diagnosis to match; patterns are then matched on the op class and architecture
  // alone, and those whose preconditions need a category or a metric cannot apply.
  const bool unprofiled = report.values().empty() &&
                          report.primary() == kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED;
  if (!unprofiled && report.primary() == kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        "report.primary must be set when report.values are given (run the judge first)");
  }
  if (request.max_results() < 0 || request.max_results() > options_.max_results_limit) {
    return absl::InvalidArgumentError(absl::StrCat("max_results must be in [0, ", options_.max_results_limit,
                                                   "], got ", request.max_results()));
  }
  for (const auto& [name, value] : report.values()) {
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("report.values['", name, "'] is not finite (", value, ")"));
    }
  }

  // The diagnosed kernel's metrics and derived values, as the judge read them.
  auto lookup = [&report](absl::string_view metric) -> std::optional<double> {
    auto it = report.values().find(std::string(metric));
    if (it == report.values().end()) return std::nullopt;
    return it->second;
  };
  std::vector<std::string> limiters;
  if (!report.limiter().empty()) limiters.push_back(report.limiter());
  std::optional<double> theoretical = TheoreticalOccupancy(lookup, nullptr);
  std::optional<std::string> occupancy = OccupancyLimiter(lookup);
  if (theoretical && occupancy && *theoretical < options_.occupancy_limiter_below_pct) {
    limiters.push_back(*occupancy);
  }
  const std::string op_class = request.op_class();
  const std::string arch = request.gpu().arch();
  const double atol = request.has_atol() ? request.atol() : kFp32DefaultTolerance;
  const double rtol = request.has_rtol() ? request.rtol() : kFp32DefaultTolerance;

  std::vector<PatternMatch> matches;
  for (const Pattern& p : db_->patterns()) {
    const Preconditions& pre = p.preconditions;
    PatternMatch m;
    m.pattern = &p;

    // Category.
    double category_score = 0;
    if (unprofiled) {
      // Only op-class-specific patterns: a generic one has nothing to go on.
      if (ListHas(pre.op_classes, "*")) continue;
      category_score = options_.any_category_weight;
      m.reasons.push_back("no profile: matched on the op class");
    } else if (std::find(pre.categories.begin(), pre.categories.end(), report.primary()) != pre.categories.end()) {
      category_score = options_.primary_weight;
      m.reasons.push_back(absl::StrCat("primary ", CategoryName(report.primary())));
    } else if (report.secondary() != kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED &&
               std::find(pre.categories.begin(), pre.categories.end(), report.secondary()) !=
                   pre.categories.end()) {
      category_score = options_.secondary_weight;
      m.reasons.push_back(absl::StrCat("secondary ", CategoryName(report.secondary())));
    } else if (pre.any_category) {
      category_score = options_.any_category_weight;
    } else {
      continue;
    }

    // Limiter.
    double limiter_score = 0;
    if (!pre.limiters.empty()) {
      std::string hit;
      for (const std::string& l : limiters) {
        if (ListHas(pre.limiters, l)) {
          hit = l;
          break;
        }
      }
      if (hit.empty()) continue;
      limiter_score = options_.limiter_bonus;
      m.reasons.push_back(absl::StrCat("limiter ", hit));
    }

    // Op class and arch.
    const bool any_op = ListHas(pre.op_classes, "*");
    if (!any_op && (op_class.empty() || !ListHas(pre.op_classes, op_class))) continue;
    bool arch_ok = false;
    bool any_arch = false;
    for (const std::string& a : pre.archs) {
      any_arch = any_arch || a == "*";
      arch_ok = arch_ok || ArchMatches(a, arch);
    }
    if (!arch_ok) continue;
    // Precision: a fix that lowers it needs a tolerance at least as loose as it costs.
    if (pre.min_tolerance > 0 && (atol < pre.min_tolerance || rtol < pre.min_tolerance)) continue;
    if (pre.min_tolerance > 0) {
      m.reasons.push_back(absl::StrCat("tolerance atol ", Num(atol), " rtol ", Num(rtol), " >= ",
                                       Num(pre.min_tolerance)));
    }
    if (!any_op) m.reasons.push_back(absl::StrCat("op class ", op_class));
    if (!any_arch) m.reasons.push_back(absl::StrCat("arch ", arch));

    // Metric thresholds.
    bool rejected = false;
    double strength = 0;
    for (const MetricCondition& cond : pre.metrics) {
      std::optional<double> value = lookup(cond.metric);
      if (!value) {
        if (cond.required) {
          rejected = true;
          break;
        }
        continue;
      }
      if (!cond.Holds(*value)) {
        rejected = true;
        break;
      }
      strength += std::min(1.0, std::fabs(*value - cond.value) / std::max(std::fabs(cond.value), 1.0));
      m.reasons.push_back(absl::StrCat(cond.metric, " ", Num(*value), " ", cond.op, " ", Num(cond.value)));
    }
    if (rejected) continue;
    const double metric_score =
        pre.metrics.empty() ? 0 : strength / static_cast<double>(pre.metrics.size());

    m.score = category_score + limiter_score + options_.metric_weight * metric_score +
              options_.speedup_weight * std::min(1.0, std::log(p.expected_speedup)) +
              (any_op ? 0 : options_.op_class_bonus) + (any_arch ? 0 : options_.arch_bonus);
    matches.push_back(std::move(m));
  }
  std::sort(matches.begin(), matches.end(), [](const PatternMatch& a, const PatternMatch& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.pattern->id < b.pattern->id;
  });
  return matches;
}

bool Prescriber::Contradict(const Pattern& a, const Pattern& b) const {
  if (db_->Conflict(a, b)) return true;
  for (const auto& [knob, change] : a.knob_changes) {
    auto it = b.knob_changes.find(knob);
    if (it != b.knob_changes.end() && KnobChangesContradict(change, it->second)) return true;
  }
  return false;
}

std::vector<PatternMatch> Prescriber::Filter(const std::vector<PatternMatch>& ranked,
                                           const std::vector<std::string>& avoid, int limit) const {
  std::vector<PatternMatch> kept;
  for (const PatternMatch& m : ranked) {
    if (static_cast<int>(kept.size()) >= limit) break;
    if (IsAvoided(m.pattern->id, avoid)) continue;
    bool contradicts = false;
    for (const PatternMatch& k : kept) contradicts = contradicts || Contradict(*m.pattern, *k.pattern);
    if (contradicts) continue;
    kept.push_back(m);
  }
  return kept;
}

Prescription Prescriber::ToPrescription(const PatternMatch& match) {
  const Pattern& p = *match.pattern;
  Prescription out;
  out.set_pattern_id(p.id);
  out.set_title(p.title);
  out.set_fix(p.fix);
  out.set_rationale(absl::StrCat(p.rationale, " Matched on: ", absl::StrJoin(match.reasons, "; "), "."));
  out.set_expected_effect(p.expected_effect);
  out.set_expected_speedup(p.expected_speedup);
  out.set_score(match.score);
  for (const auto& [knob, change] : p.knob_changes) (*out.mutable_knob_changes())[knob] = change;
  out.set_template_switch(p.template_switch);
  for (const std::string& risk : p.risks) out.add_risks(risk);
  for (const std::string& marker : p.code_markers) out.add_code_markers(marker);
  return out;
}

absl::StatusOr<PrescribeResponse> Prescriber::Prescribe(const PrescribeRequest& request) const {
  KAGENT_ASSIGN_OR_RETURN(std::vector<PatternMatch> ranked, Match(request));
  const int limit = request.max_results() == 0 ? options_.default_max_results : request.max_results();
  std::vector<std::string> avoid(request.avoid_patterns().begin(), request.avoid_patterns().end());
  PrescribeResponse response;
  for (const PatternMatch& m : Filter(ranked, avoid, limit)) {
    *response.add_prescriptions() = ToPrescription(m);
  }
  response.set_database_version(absl::StrCat(db_->version()));
  return response;
}

}  // namespace kagent
