// The search-efficiency figures of `kagent bench` (docs/benchmarks.md, "Does the guidance
// pay?"): the best-so-far curve against GPU-seconds (the curve against rounds is
// SuiteTrajectory, bench.h), the stop-rule account, and the comparison of several runs, one
// per arm (`kagent bench --compare`). All derived from the rows' stored trajectories (each
// round's best-so-far speedup over the starting kernel, and the GPU-seconds the job had
// used when the round closed), stop reasons and round budgets.
//
// Pure functions (no I/O); thread-compatible.
#ifndef KAGENT_TOOLS_BENCH_CURVES_H_
#define KAGENT_TOOLS_BENCH_CURVES_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tools/bench.h"

namespace kagent::cli {

// A row's best-so-far speedup over its starting kernel once it had used `gpu_seconds`: the
// best of the rounds that closed at or before it (BenchRow::gpu_trajectory), 1.0 before
// the first.
double BestSoFarAt(const BenchRow& row, double gpu_seconds);

// The GPU-seconds of a row's last closed round (0 without a GPU trajectory).
double CurveEnd(const BenchRow& row);

// The suite's best-so-far against GPU-seconds: `points` + 1 evenly spaced x from 0 to the
// largest CurveEnd of `rows`, each with the geometric mean of BestSoFarAt over the rows
// that have a GPU trajectory. Empty when none has one.
std::vector<std::pair<double, double>> SuiteGpuCurve(const std::vector<BenchRow>& rows,
                                                     int points = 50);

// The stop rule a job's stop reason names (job_run.cc, BudgetStopReason and the roofline
// check): "round budget", "plateau", "roofline", "GPU-time budget", "wall-time budget",
// "LLM budget"; "" for none (an unfinished or failed job), "other" for any other text.
std::string StopRuleOf(const std::string& stop_reason);

struct StopRuleAccount {
  int finished = 0;                  // rows with a stop reason
  std::map<std::string, int> count;  // StopRuleOf -> rows, for the rows with one
  // For the rules that stop a job before its round budget ("plateau", "roofline"): an
  // upper bound on the GPU-seconds they saved, the rounds left in each such job's budget
  // times its GPU-seconds per round so far (the rounds after the first, whose cost
  // includes the baseline and round 1's library seed, unless round 1 is all there is);
  // and how many of its rows could not be estimated (no GPU trajectory or round budget).
  std::map<std::string, double> saved_gpu_seconds;
  std::map<std::string, int> saved_rounds;
  std::map<std::string, int> not_estimated;
};

StopRuleAccount AccountStopRules(const std::vector<BenchRow>& rows);

// results.md's "Stop rules" section.
std::string RenderStopRulesMarkdown(const StopRuleAccount& account);
// results.json's "stop_rules" object.
std::string StopRulesJson(const StopRuleAccount& account);

// gpu_curve.svg: best-so-far speedup (y, log scale) against GPU-seconds (x), a thin step
// line per problem and a bold one for the suite (SuiteGpuCurve).
std::string RenderGpuCurveSvg(const std::vector<BenchRow>& rows);

// One arm of a comparison: a run's rows and its label (its settings' ablation, else
// "full", with its run id or path: BenchRunLabels).
struct BenchArm {
  std::string label;
  std::string ablation;  // settings.ablation; "full" when absent
  std::vector<BenchRow> rows;
};

// The arms of `files`, in order.
std::vector<BenchArm> ArmsOf(const std::vector<BenchRunFile>& files);

// Per problem that every arm has with a GPU trajectory: the equal budget, the smallest
// CurveEnd over the arms, and each arm's BestSoFarAt it (in arm order).
struct EqualBudgetRow {
  std::string problem;
  double gpu_seconds = 0;
  std::vector<double> best_so_far;
};
std::vector<EqualBudgetRow> EqualBudgetRows(const std::vector<BenchArm>& arms);

// compare.md: per arm its settings and summary figures, the equal-budget table and its
// geometric means, each arm's stop rules, and the two charts.
std::string RenderCompareMarkdown(const std::vector<BenchArm>& arms);
// compare.json: the same figures.
std::string RenderCompareJson(const std::vector<BenchArm>& arms);
// compare_rounds.svg and compare_gpu.svg: one bold line per arm, the suite's geometric
// mean against rounds (SuiteTrajectory) and against GPU-seconds (SuiteGpuCurve) over the
// problems every arm has.
std::string RenderCompareRoundsSvg(const std::vector<BenchArm>& arms);
std::string RenderCompareGpuSvg(const std::vector<BenchArm>& arms);

}  // namespace kagent::cli

#endif  // KAGENT_TOOLS_BENCH_CURVES_H_
