#include "services/orchestrator/reflexion.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "kernel_model/categories.h"
#include "kernel_model/profile_view.h"

namespace kagent {
namespace {

using kagent::v1::Candidate;
using kagent::v1::Reflexion;
using kagent::v1::TimingStats;

std::string X(double speedup) { return absl::StrFormat("%.2fx", speedup); }
std::string Ms(double ms) { return absl::StrFormat("%.4g ms", ms); }
std::string Num(double v) { return absl::StrFormat("%.4g", v); }

// Half the p10-p90 spread relative to the median, when known.
std::optional<double> RelativeSpread(const TimingStats& t) {
  if (t.median_ms() <= 0 || t.p90_ms() <= 0 || t.p10_ms() <= 0 || t.p90_ms() < t.p10_ms()) return std::nullopt;
  return (t.p90_ms() - t.p10_ms()) / (2.0 * t.median_ms());
}

std::optional<double> MetricOf(const Candidate& c, const std::string& metric) {
  if (c.metrics().kernels().empty()) return std::nullopt;
  auto view = ProfileView::Build(c.metrics(), kagent::v1::GpuSpec(), nullptr, nullptr);
  if (!view.ok()) return std::nullopt;
  return view->Get(metric);
}

std::string VerdictName(kagent::v1::Verdict v) {
  std::string name = kagent::v1::Verdict_Name(v);
  if (name.rfind("VERDICT_", 0) == 0) name = name.substr(8);
  return name;
}

}  // namespace

absl::StatusOr<Reflexion> HeuristicReflect(const Candidate& parent, const Candidate& attempt,
                                           const ReflectContext& context) {
  const auto& pm = parent.measurement();
  if (pm.verdict() != kagent::v1::VERDICT_CORRECT || pm.candidate().median_ms() <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parent '", parent.id(), "' needs a correct measurement with candidate.median_ms > 0"));
  }
  const auto& am = attempt.measurement();
  const auto& rx = attempt.prescription();
  const std::string pattern_id = rx.pattern_id();
  // A fallback: the brain made another move than the pattern's, so the pattern (its
  // target metric, its expected speedup, its place on the avoid-list) is not at stake.
  const bool fallback = !rx.fallback().empty();
  const Pattern* pattern = context.prescriber != nullptr && !pattern_id.empty() && !fallback
                               ? context.prescriber->db().Find(pattern_id)
                               : nullptr;
  const double expected = rx.expected_speedup() > 0 ? rx.expected_speedup()
                                                     : (pattern ? pattern->expected_speedup : 1.0);
  std::string what = pattern_id.empty()
                         ? std::string("the rewrite")
                         : absl::StrCat(pattern_id, rx.title().empty() ? "" : " (" + rx.title() + ")");
  if (fallback) {
    std::vector<std::string> moves = absl::StrSplit(rx.fix(), '\n', absl::SkipWhitespace());
    what = absl::StrCat(moves.empty() ? std::string("another move") : absl::StrJoin(moves, "; "),
                        " (fallback: ", rx.fallback(),
                        pattern_id.empty() ? "" : absl::StrCat(" for ", pattern_id), ")");
  }
  // Only a pattern that was applied goes on the avoid-list.
  const std::string avoidable = fallback ? std::string() : pattern_id;

  Reflexion out;
  out.set_candidate_id(attempt.id());
  out.set_round(attempt.round());
  out.set_worker_index(attempt.worker_index());
  out.set_parent_id(attempt.parent_id().empty() ? parent.id() : attempt.parent_id());
  out.set_pattern_id(pattern_id);
  out.set_expected_speedup(expected);

  // Try-patterns: from the prescriber, for `report` (with the values the judge read).
  auto suggest = [&](const kagent::v1::BottleneckReport& report, bool exclude_contradicting) {
    if (context.prescriber == nullptr || report.primary() == kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED) return;
    kagent::v1::PrescribeRequest request;
    *request.mutable_report() = report;
    if (context.gpu != nullptr) *request.mutable_gpu() = *context.gpu;
    request.set_op_class(am.op_signature().op_class().empty() ? pm.op_signature().op_class()
                                                               : am.op_signature().op_class());
    auto ranked = context.prescriber->Match(request);
    if (!ranked.ok()) return;
    std::vector<std::string> avoid = context.avoid_patterns;
    avoid.insert(avoid.end(), out.avoid_patterns().begin(), out.avoid_patterns().end());
    if (!pattern_id.empty()) avoid.push_back(pattern_id);
    std::vector<PatternMatch> candidates;
    for (const PatternMatch& m : *ranked) {
      if (exclude_contradicting && pattern != nullptr && context.prescriber->Contradict(*pattern, *m.pattern)) continue;
      candidates.push_back(m);
    }
    for (const PatternMatch& m : context.prescriber->Filter(candidates, avoid, context.max_try_patterns)) {
      out.add_try_patterns(m.pattern->id);
    }
  };

  // A failed attempt: ineffective, with the verdict as the lesson.
  if (am.verdict() != kagent::v1::VERDICT_CORRECT) {
    out.set_fix_effective(false);
    out.set_diagnosis_correct(false);
    out.set_actual_speedup(0);
    std::string reason = am.correctness().reason();
    if (reason.empty()) {
      std::string log = am.log();
      size_t nl = log.find_last_of('\n', log.size() > 1 ? log.size() - 2 : 0);
      reason = nl == std::string::npos ? log : log.substr(nl + 1);
      if (reason.size() > 300) reason = reason.substr(reason.size() - 300);
    }
    const bool infra = am.verdict() == kagent::v1::VERDICT_INFRA_ERROR;
    const bool duplicate = am.verdict() == kagent::v1::VERDICT_DUPLICATE;
    // The coordinator writes no reflexion for GENERATION_FAILED (the LLM endpoint failed);
    // should one come here anyway, it is not held against the pattern either.
    const bool generation_failed = am.verdict() == kagent::v1::VERDICT_GENERATION_FAILED;
    out.set_lesson(absl::StrCat(
        "Applied ", what, " to ", out.parent_id(), ": ", VerdictName(am.verdict()),
        reason.empty() ? "" : absl::StrCat(" (", reason, ")"), "; expected ", X(expected),
        ", no valid measurement. ",
        infra       ? "An infrastructure failure says nothing about the fix: retry it."
        : duplicate ? "The move made no new kernel, so nothing was measured; the pattern is "
                      "neither confirmed nor refuted."
        : generation_failed
            ? "The LLM endpoint failed, so no kernel was made; the pattern is neither "
              "confirmed nor refuted."
            : "The diagnosis could not be tested; do not repeat this change on this "
                      "kernel without fixing the failure."));
    if (!infra && !duplicate && !generation_failed && !avoidable.empty()) {
      out.add_avoid_patterns(avoidable);
    }
    suggest(parent.report(), /*exclude_contradicting=*/false);
    return out;
  }

  if (am.candidate().median_ms() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("attempt '", attempt.id(), "' is correct but has no candidate.median_ms > 0"));
  }
  const double before = pm.candidate().median_ms();
  const double after = am.candidate().median_ms();
  const double actual = before / after;
  out.set_actual_speedup(actual);
  double noise = 0.01;
  for (const auto& t : {pm.candidate(), am.candidate()}) {
    if (auto s = RelativeSpread(t)) noise = std::max(noise, *s);
  }
  noise = std::min(noise, 0.05);
  const bool effective = actual >= 1.0 + noise;
  const bool regressed = actual <= 1.0 - noise;
  out.set_fix_effective(effective);

  std::string lesson = absl::StrCat(
      "Applied ", what, " to ", out.parent_id(), ": expected ", X(expected), ", measured ", X(actual), " (",
      Ms(before), " -> ", Ms(after), ", noise +/-", absl::StrFormat("%.1f%%", 100 * noise), "): ",
      effective ? (actual >= expected ? "effective, at or above expectation"
                                      : "effective, below expectation")
                : (regressed ? "a regression" : "no measurable effect"),
      ".");

  // Did the targeted metric move the intended way?
  std::optional<bool> target_moved_right;
  if (pattern != nullptr && pattern->target) {
    const std::string& metric = pattern->target->metric;
    std::optional<double> m0 = MetricOf(parent, metric);
    std::optional<double> m1 = MetricOf(attempt, metric);
    if (m0 && m1) {
      const double tolerance = 0.01 * std::max(std::fabs(*m0), 1e-9);
      const bool up = *m1 > *m0 + tolerance;
      const bool down = *m1 < *m0 - tolerance;
      target_moved_right = pattern->target->up ? up : down;
      absl::StrAppend(&lesson, " Target ", metric, " moved ", Num(*m0), " -> ", Num(*m1), " (wanted ",
                      pattern->target->up ? "up" : "down", "): ",
                      *target_moved_right
                          ? (effective ? "the diagnosis is confirmed."
                                       : "the fix did what it meant to, but time did not follow: the "
                                         "diagnosed bottleneck was not the limiter.")
                          : (effective ? "the gain came from elsewhere; the diagnosis is not confirmed."
                                       : "the fix did not change what it targeted."));
    }
  }
  out.set_diagnosis_correct(target_moved_right.value_or(effective));
  if (fallback) {
    absl::StrAppend(&lesson, " ", pattern_id.empty() ? std::string("The prescription") : pattern_id,
                    " was not applied: this measures the fallback move only and neither confirms nor "
                    "refutes that prescription.");
  } else if (!target_moved_right) {
    absl::StrAppend(&lesson, effective ? " Without target metrics, the speedup is taken to confirm the diagnosis."
                                       : " Without target metrics, the lack of speedup is taken to refute the diagnosis.");
  }
  // Both classified: a report without counters (no category) says nothing of a move.
  if (parent.has_report() && attempt.has_report() &&
      parent.report().primary() != kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED &&
      attempt.report().primary() != kagent::v1::BOTTLENECK_CATEGORY_UNSPECIFIED &&
      parent.report().primary() != attempt.report().primary()) {
    absl::StrAppend(&lesson, " The bottleneck moved: ", CategoryName(parent.report().primary()), " -> ",
                    CategoryName(attempt.report().primary()), ".");
  }
  if (regressed && !avoidable.empty()) out.add_avoid_patterns(avoidable);
  out.set_lesson(lesson);

  if (effective && attempt.has_report()) {
    suggest(attempt.report(), /*exclude_contradicting=*/true);
  } else if (effective) {
    suggest(parent.report(), /*exclude_contradicting=*/true);
  } else {
    suggest(parent.report(), /*exclude_contradicting=*/false);
  }
  return out;
}

}  // namespace kagent
