// The prescriber: ranked prescriptions from the optimization database for a diagnosis.
// The analyzer service (services/analyzer) is its gRPC face; the orchestrator's
// reflexion asks it what to try next.
//
// Prescriber::Prescribe matches every pattern's preconditions against the request
// (the judge's report with the values it read, the op class and the GPU's
// architecture), scores the matches, drops the job's avoid-list, removes contradictory
// prescriptions and returns the top N with their rationale and expected effect.
//
// Matching (a pattern matches when all hold):
//   - category: the report's primary or secondary is in the pattern's categories ("*"
//     matches any);
//   - limiters (when listed): the report's limiter, or the kernel's occupancy limiter when
//     theoretical occupancy is under 50%, is one of them;
//   - metric thresholds: every condition on a present metric holds; a missing metric
//     rejects the pattern only when the condition is "required". Values come from the
//     report (BottleneckReport.values: the diagnosed kernel's metrics and the values the
//     judge derived, kagent__gpu_busy_pct from the timing and kagent__dram_bytes_over_min
//     from the op signature among them), so nothing is computed twice;
//   - op class: the pattern lists the request's op class or "*" (an unknown op class
//     matches "*" only);
//   - arch: one of the pattern's archs accepts the GPU's ("*", "sm_90", "sm_80+"); an
//     unknown arch matches "*" only.
//   - tolerance: a pattern with min_tolerance (one that lowers precision, e.g. TF32)
//     matches only when the request's atol and rtol are both at least that; a request
//     without them has the fp32 defaults (1e-4), under any precision-lowering pattern.
// Score = category (3.0 primary, 1.5 secondary, 0.5 "*") + 1.0 for a listed limiter that
// matched + 1.0 x mean threshold strength (min(1, |value - threshold| / max(|threshold|, 1))
// per condition, 0 for a missing metric) + min(1, ln expected_speedup) + 1.0 for a
// specific op class + 0.25 for a specific arch. Ties break by id.
// Without a profile (a report with no values and no category: a CPU-only worker, or
// profiling failed) only op-class-specific patterns can match, on the op class and arch alone,
// scored as a "*" category; patterns that require a metric drop out.
// Contradictions: walking the ranking, a pattern is dropped when it conflicts
// (conflicts_with, either way) with one already kept, or changes a knob that a kept one
// changes in the opposite direction (or sets to another value).
//
// Thread-safety: immutable after construction; Prescribe may be called concurrently.
#ifndef KAGENT_KERNEL_MODEL_PRESCRIBER_H_
#define KAGENT_KERNEL_MODEL_PRESCRIBER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/analyzer_service.pb.h"
#include "kagent/v1/common.pb.h"
#include "kernel_model/optimization_db.h"

namespace kagent {

struct PrescriberOptions {
  int default_max_results = 8;
  int max_results_limit = 64;
  double primary_weight = 3.0;
  double secondary_weight = 1.5;
  double any_category_weight = 0.5;
  double limiter_bonus = 1.0;
  double metric_weight = 1.0;
  double speedup_weight = 1.0;
  double op_class_bonus = 1.0;
  double arch_bonus = 0.25;
  // Theoretical occupancy under which the kernel's occupancy limiter counts for the
  // "limiters" precondition even when the report names another limiter.
  double occupancy_limiter_below_pct = 50.0;
};

// One matched pattern with its score and the reasons it matched.
struct PatternMatch {
  const Pattern* pattern = nullptr;  // points into the analyzer's database
  double score = 0;
  std::vector<std::string> reasons;  // e.g. "primary memory-bound", "lts__t_sector_hit_rate.pct 2.9 < 50"
};

class Prescriber {
 public:
  explicit Prescriber(std::shared_ptr<const OptimizationDb> db, PrescriberOptions options = {});

  // A prescriber over the database at `path` (validated; loaded once per process:
  // SharedOptimizationDb).
  static absl::StatusOr<std::unique_ptr<Prescriber>> FromFile(const std::string& path,
                                                            PrescriberOptions options = {});

  // The ranked, filtered, contradiction-free top N. INVALID_ARGUMENT when the report has
  // values but no category (primary unspecified), max_results is outside [0, 64], or a
  // value is not finite.
  absl::StatusOr<kagent::v1::PrescribeResponse> Prescribe(
      const kagent::v1::PrescribeRequest& request) const;

  // Every matching pattern, best first, before the avoid-list and contradiction filters.
  // Same errors as Prescribe.
  absl::StatusOr<std::vector<PatternMatch>> Match(const kagent::v1::PrescribeRequest& request) const;

  // Keeps `ranked` in order minus avoided ids (exact, or a prefix ending in '*') and
  // patterns contradicting an earlier kept one; at most `limit` results.
  std::vector<PatternMatch> Filter(const std::vector<PatternMatch>& ranked,
                                   const std::vector<std::string>& avoid, int limit) const;

  // Whether two patterns contradict (declared conflict or opposite knob changes).
  bool Contradict(const Pattern& a, const Pattern& b) const;

  // The prescription for one match.
  static kagent::v1::Prescription ToPrescription(const PatternMatch& match);

  const OptimizationDb& db() const { return *db_; }

 private:
  std::shared_ptr<const OptimizationDb> db_;
  PrescriberOptions options_;
};

// Whether `id` is on the avoid-list (exact match, or an entry "prefix*").
bool IsAvoided(const std::string& id, const std::vector<std::string>& avoid);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_PRESCRIBER_H_
