// The search-efficiency figures of `kagent bench` (bench_curves.h).
#include "tools/bench_curves.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bench_chart.h"

namespace kagent::cli {
namespace {

// The rules that end a job before its round budget, whose savings are estimated.
constexpr const char* kEarlyRules[] = {"plateau", "roofline"};

nlohmann::json ParseObject(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text.empty() ? "{}" : text, nullptr,
                                           /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json::object();
}

// The rows of `rows` whose name is in `names`.
std::vector<BenchRow> Only(const std::vector<BenchRow>& rows, const std::set<std::string>& names) {
  std::vector<BenchRow> out;
  for (const BenchRow& r : rows) {
    if (names.count(r.name)) out.push_back(r);
  }
  return out;
}

// The problems every arm has.
std::set<std::string> CommonProblems(const std::vector<BenchArm>& arms) {
  std::set<std::string> common;
  for (size_t i = 0; i < arms.size(); ++i) {
    std::set<std::string> names;
    for (const BenchRow& r : arms[i].rows) names.insert(r.name);
    if (i == 0) {
      common = names;
    } else {
      std::set<std::string> both;
      for (const std::string& n : common) {
        if (names.count(n)) both.insert(n);
      }
      common = both;
    }
  }
  return common;
}

std::string X(double v) { return v > 0 ? absl::StrFormat("%.2fx", v) : "-"; }

}  // namespace

double BestSoFarAt(const BenchRow& row, double gpu_seconds) {
  double best = 1.0;
  for (const auto& [x, sp] : row.gpu_trajectory) {
    if (x <= gpu_seconds && sp > best) best = sp;
  }
  return best;
}

double CurveEnd(const BenchRow& row) {
  return row.gpu_trajectory.empty() ? 0 : row.gpu_trajectory.back().first;
}

std::vector<std::pair<double, double>> SuiteGpuCurve(const std::vector<BenchRow>& rows,
                                                     int points) {
  double end = 0;
  for (const BenchRow& r : rows) end = std::max(end, CurveEnd(r));
  std::vector<std::pair<double, double>> out;
  if (end <= 0 || points < 1) return out;
  for (int i = 0; i <= points; ++i) {
    const double x = end * i / points;
    std::vector<double> at;
    for (const BenchRow& r : rows) {
      if (!r.gpu_trajectory.empty()) at.push_back(BestSoFarAt(r, x));
    }
    out.emplace_back(x, GeometricMean(at));
  }
  return out;
}

std::string StopRuleOf(const std::string& reason) {
  if (reason.empty()) return "";
  if (absl::StartsWith(reason, "round budget spent")) return "round budget";
  if (absl::StartsWith(reason, "plateau")) return "plateau";
  if (absl::StartsWith(reason, "at the roofline target")) return "roofline";
  if (absl::StartsWith(reason, "GPU-time budget spent")) return "GPU-time budget";
  if (absl::StartsWith(reason, "wall-time budget spent")) return "wall-time budget";
  if (absl::StartsWith(reason, "LLM ") || absl::StartsWith(reason, "budget spent:")) {
    return "LLM budget";
  }
  return "other";
}

StopRuleAccount AccountStopRules(const std::vector<BenchRow>& rows) {
  StopRuleAccount a;
  for (const char* rule : kEarlyRules) {
    a.saved_gpu_seconds[rule] = 0;
    a.saved_rounds[rule] = 0;
    a.not_estimated[rule] = 0;
  }
  for (const BenchRow& r : rows) {
    const std::string rule = StopRuleOf(r.stop_reason);
    if (rule.empty()) continue;
    ++a.finished;
    ++a.count[rule];
    if (!a.saved_gpu_seconds.count(rule)) continue;
    const int done = static_cast<int>(r.gpu_trajectory.size());
    const int left = r.max_rounds - static_cast<int>(r.trajectory.size());
    if (done == 0 || r.max_rounds <= 0 || done != static_cast<int>(r.trajectory.size())) {
      ++a.not_estimated[rule];
      continue;
    }
    if (left <= 0) continue;
    // Per round: the rounds after the first (round 1 also carries the baseline and the
    // library seed), unless the first is all there is.
    const double per_round =
        done >= 2 ? (r.gpu_trajectory[done - 1].first - r.gpu_trajectory[0].first) / (done - 1)
                  : r.gpu_trajectory[0].first;
    a.saved_gpu_seconds[rule] += left * per_round;
    a.saved_rounds[rule] += left;
  }
  return a;
}

std::string RenderStopRulesMarkdown(const StopRuleAccount& a) {
  std::string o = "\n## Stop rules\n\n";
  if (a.finished == 0) return o + "No job has a stop reason yet.\n";
  o += "| rule | jobs | share |\n|---|---:|---:|\n";
  for (const auto& [rule, n] : a.count) {
    o += absl::StrFormat("| %s | %d | %.0f%% |\n", rule, n, 100.0 * n / a.finished);
  }
  o += "\nGPU-seconds the early rules saved, at most: the rounds left in each stopped job's "
       "budget times its GPU-seconds per round so far (another rule, e.g. the plateau, might "
       "have stopped it sooner):\n\n";
  for (const char* rule : kEarlyRules) {
    o += absl::StrFormat("- %s: %.1f GPU-s over %d rounds not run", rule,
                         a.saved_gpu_seconds.at(rule), a.saved_rounds.at(rule));
    if (a.not_estimated.at(rule) > 0) {
      o += absl::StrFormat(" (%d job(s) not estimated: no GPU-seconds per round or round budget "
                           "recorded)", a.not_estimated.at(rule));
    }
    o += "\n";
  }
  return o;
}

std::string StopRulesJson(const StopRuleAccount& a) {
  nlohmann::json j = {{"finished", a.finished},
                      {"count", a.count},
                      {"saved_gpu_seconds_at_most", a.saved_gpu_seconds},
                      {"saved_rounds", a.saved_rounds},
                      {"not_estimated", a.not_estimated}};
  return j.dump();
}

std::string RenderGpuCurveSvg(const std::vector<BenchRow>& rows) {
  Chart chart;
  chart.title = absl::StrFormat("Best-so-far speedup over the starting kernel against "
                                "GPU-seconds (%d problems)",
                                static_cast<int>(rows.size()));
  chart.x_label = "GPU-seconds used (at the end of each round)";
  for (const BenchRow& r : rows) {
    if (r.gpu_trajectory.empty()) continue;
    ChartLine& l = chart.lines.emplace_back();
    l.name = r.name;
    double v = 1.0;
    l.points.emplace_back(0, 1.0);
    for (const auto& [x, sp] : r.gpu_trajectory) {
      l.points.emplace_back(x, v);  // a step: the gain lands when the round closes
      v = std::max(v, sp);
      l.points.emplace_back(x, v);
    }
  }
  std::vector<std::pair<double, double>> suite = SuiteGpuCurve(rows);
  if (!suite.empty()) {
    ChartLine& l = chart.lines.emplace_back();
    l.bold = true;
    l.name = absl::StrFormat("geometric mean %.2fx", suite.back().second);
    l.points = suite;
  }
  return RenderChartSvg(chart);
}

std::vector<BenchArm> ArmsOf(const std::vector<BenchRunFile>& files) {
  const std::vector<std::string> labels = BenchRunLabels(files);
  std::vector<BenchArm> arms;
  for (size_t i = 0; i < files.size(); ++i) {
    BenchArm a;
    nlohmann::json s = ParseObject(files[i].settings_json);
    a.ablation = s.contains("ablation") && s["ablation"].is_string() &&
                         !s["ablation"].get<std::string>().empty()
                     ? s["ablation"].get<std::string>()
                     : "full";
    a.label = absl::StrCat(a.ablation, " (", labels[i], ")");
    a.rows = files[i].rows;
    arms.push_back(std::move(a));
  }
  return arms;
}

std::vector<EqualBudgetRow> EqualBudgetRows(const std::vector<BenchArm>& arms) {
  std::vector<EqualBudgetRow> out;
  if (arms.empty()) return out;
  for (const std::string& name : CommonProblems(arms)) {
    std::vector<const BenchRow*> per_arm;
    for (const BenchArm& a : arms) {
      for (const BenchRow& r : a.rows) {
        if (r.name == name && !r.gpu_trajectory.empty()) per_arm.push_back(&r);
      }
    }
    if (per_arm.size() != arms.size()) continue;
    EqualBudgetRow e;
    e.problem = name;
    e.gpu_seconds = CurveEnd(*per_arm[0]);
    for (const BenchRow* r : per_arm) e.gpu_seconds = std::min(e.gpu_seconds, CurveEnd(*r));
    for (const BenchRow* r : per_arm) e.best_so_far.push_back(BestSoFarAt(*r, e.gpu_seconds));
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

// Per arm, the geometric mean of its equal-budget best-so-far.
std::vector<double> EqualBudgetMeans(const std::vector<BenchArm>& arms,
                                     const std::vector<EqualBudgetRow>& eq) {
  std::vector<double> out;
  for (size_t i = 0; i < arms.size(); ++i) {
    std::vector<double> v;
    for (const EqualBudgetRow& e : eq) v.push_back(e.best_so_far[i]);
    out.push_back(GeometricMean(v));
  }
  return out;
}

}  // namespace

std::string RenderCompareMarkdown(const std::vector<BenchArm>& arms) {
  std::string o = "# kagent bench: arms compared\n\n";
  o += absl::StrFormat(
      "%d runs (`kagent bench --compare`), one arm each. Speedups are best-so-far over each "
      "job's starting kernel as measured in its rounds (JobResult.trajectory), not the final "
      "runs.\n\n",
      static_cast<int>(arms.size()));
  o += "| arm | problems | done | geomean vs start (final) | rounds | GPU-s | candidates |\n"
       "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const BenchArm& a : arms) {
    const BenchSummary s = Summarize(a.rows);
    int rounds = 0;
    for (const BenchRow& r : a.rows) rounds += static_cast<int>(r.trajectory.size());
    o += absl::StrFormat("| %s | %d | %d | %s | %d | %.1f | %d |\n", a.label, s.problems, s.done,
                         X(s.geomean_vs_start), rounds, s.gpu_seconds, s.candidates_measured);
  }
  const std::vector<EqualBudgetRow> eq = EqualBudgetRows(arms);
  o += "\n## At equal GPU-seconds\n\n";
  o += "Per problem that every arm ran, the budget is the GPU-seconds of the arm that spent "
       "the least on it (at its last round's close); each arm's figure is its best-so-far "
       "speedup once it had used that much.\n\n";
  if (eq.empty()) {
    o += "No problem has GPU-seconds per round in every arm (jobs stored before "
         "RoundSummary.gpu_seconds_used existed, or no common problem).\n";
  } else {
    o += "| problem | budget GPU-s |";
    std::string sep = "|---|---:|";
    for (const BenchArm& a : arms) {
      o += " " + a.ablation + " |";
      sep += "---:|";
    }
    o += "\n" + sep + "\n";
    for (const EqualBudgetRow& e : eq) {
      o += absl::StrFormat("| %s | %.1f |", e.problem, e.gpu_seconds);
      for (double v : e.best_so_far) o += " " + X(v) + " |";
      o += "\n";
    }
    o += "| **geometric mean** | |";
    for (double m : EqualBudgetMeans(arms, eq)) o += " **" + X(m) + "** |";
    o += "\n";
  }
  for (const BenchArm& a : arms) {
    o += absl::StrCat("\n### ", a.label, "\n");
    o += RenderStopRulesMarkdown(AccountStopRules(a.rows)).substr(1);  // under the arm's heading
  }
  o += "\n![suite best-so-far against rounds](compare_rounds.svg)\n"
       "\n![suite best-so-far against GPU-seconds](compare_gpu.svg)\n";
  return o;
}

std::string RenderCompareJson(const std::vector<BenchArm>& arms) {
  const std::vector<EqualBudgetRow> eq = EqualBudgetRows(arms);
  const std::vector<double> means = EqualBudgetMeans(arms, eq);
  nlohmann::json j;
  j["arms"] = nlohmann::json::array();
  for (size_t i = 0; i < arms.size(); ++i) {
    const BenchArm& a = arms[i];
    const BenchSummary s = Summarize(a.rows);
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& [x, y] : SuiteGpuCurve(a.rows)) curve.push_back({x, y});
    j["arms"].push_back({{"label", a.label},
                         {"ablation", a.ablation},
                         {"problems", s.problems},
                         {"done", s.done},
                         {"geomean_speedup_vs_start", s.geomean_vs_start},
                         {"gpu_seconds", s.gpu_seconds},
                         {"candidates_measured", s.candidates_measured},
                         {"equal_budget_geomean", means[i]},
                         {"suite_trajectory", SuiteTrajectory(a.rows)},
                         {"suite_gpu_curve", curve},
                         {"stop_rules", nlohmann::json::parse(StopRulesJson(AccountStopRules(a.rows)))}});
  }
  j["equal_budget"] = nlohmann::json::array();
  for (const EqualBudgetRow& e : eq) {
    j["equal_budget"].push_back(
        {{"problem", e.problem}, {"gpu_seconds", e.gpu_seconds}, {"best_so_far", e.best_so_far}});
  }
  return j.dump(2) + "\n";
}

std::string RenderCompareRoundsSvg(const std::vector<BenchArm>& arms) {
  const std::set<std::string> common = CommonProblems(arms);
  Chart chart;
  chart.title = absl::StrFormat("Suite best-so-far against rounds (%d problems every arm ran)",
                                static_cast<int>(common.size()));
  chart.x_label = "round";
  chart.integer_x = true;
  for (const BenchArm& a : arms) {
    std::vector<double> suite = SuiteTrajectory(Only(a.rows, common));
    ChartLine& l = chart.lines.emplace_back();
    l.bold = true;
    l.name = absl::StrFormat("%s %s", a.ablation, X(suite.empty() ? 0 : suite.back()));
    for (size_t i = 0; i < suite.size(); ++i) l.points.emplace_back(static_cast<double>(i), suite[i]);
  }
  return RenderChartSvg(chart);
}

std::string RenderCompareGpuSvg(const std::vector<BenchArm>& arms) {
  const std::set<std::string> common = CommonProblems(arms);
  Chart chart;
  chart.title = absl::StrFormat("Suite best-so-far against GPU-seconds (%d problems every arm ran)",
                                static_cast<int>(common.size()));
  chart.x_label = "GPU-seconds used per problem";
  for (const BenchArm& a : arms) {
    ChartLine& l = chart.lines.emplace_back();
    l.bold = true;
    l.points = SuiteGpuCurve(Only(a.rows, common));
    l.name = absl::StrFormat("%s %s", a.ablation, X(l.points.empty() ? 0 : l.points.back().second));
  }
  return RenderChartSvg(chart);
}

}  // namespace kagent::cli
