// The optimization database: curated fix patterns the analyzer prescribes (prescriber.h).
//
// The data lives in a versioned JSON file (data/optimization_db.json; format in
// docs/optimization-db.md, generated from the file by scripts/gen_optimization_db_doc.py):
//
//   {"version": 1, "description": "...",
//    "knobs": {"BLOCK_M": "what it is", ...},          // the knob vocabulary
//    "templates": {"gemm_split_k": "what it is", ...}, // template ids a fix may switch to
//    "patterns": [{"id": "gemm-split-k", "title": ..., "preconditions": {...}, "fix": ...,
//                  "rationale": ..., "expected_effect": ..., "expected_speedup": 1.6,
//                  "knob_changes": {...}, "template_switch": "...",
//                  "target": {"metric": ..., "direction": "up"}, "risks": [...],
//                  "conflicts_with": [...]}, ...]}
//
// Loading validates the whole schema and reports the first error precisely (which
// pattern, which field, what was expected). An OptimizationDb is immutable after loading
// and safe to share between threads; SharedOptimizationDb loads each file once per
// process, so the analyzer and the orchestrator in one kagentd share one copy.
#ifndef KAGENT_KERNEL_MODEL_OPTIMIZATION_DB_H_
#define KAGENT_KERNEL_MODEL_OPTIMIZATION_DB_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// A threshold on one metric of the diagnosed kernel (an ncu name or a kagent__ value).
struct MetricCondition {
  std::string metric;
  std::string op;  // ">", ">=", "<", "<=", "==", "!="
  double value = 0;
  // When true the pattern does not match if the metric is missing; when false a missing
  // metric neither matches nor rejects (the condition just adds no score).
  bool required = false;

  // Whether `measured` satisfies the condition.
  bool Holds(double measured) const;
};

struct Preconditions {
  // Categories the report's primary or secondary must be one of; empty means "*".
  std::vector<kagent::v1::BottleneckCategory> categories;
  bool any_category = false;
  // When non-empty, the report's limiter (or the kernel's occupancy limiter) must be one.
  std::vector<std::string> limiters;
  std::vector<MetricCondition> metrics;
  std::vector<std::string> op_classes;  // "*" matches any, including unknown
  std::vector<std::string> archs;       // "*", "sm_90", or "sm_80+" (that or newer)
  // When > 0 ("min_tolerance"): the fix lowers precision, so it matches only when the
  // problem's atol and rtol (fp32 defaults 1e-4 when the request has none) are both at
  // least this (e.g. 1e-3 for TF32, whose 10-bit mantissa gives ~1e-3 relative error).
  double min_tolerance = 0;
};

struct PatternTarget {
  std::string metric;
  bool up = true;  // the direction the fix should move the metric
};

struct Pattern {
  std::string id;
  std::string title;
  Preconditions preconditions;
  std::string fix;
  std::string rationale;
  std::string expected_effect;
  double expected_speedup = 1.0;
  std::map<std::string, std::string> knob_changes;
  std::string template_switch;
  std::optional<PatternTarget> target;
  std::vector<std::string> risks;
  std::vector<std::string> conflicts_with;
  // Code constructs a kernel that applies the fix contains, one of them at least (e.g.
  // "tl.max_contiguous", "tl.multiple_of"); empty when the pattern states none. Optional
  // in the file; when given, a non-empty list of one-line tokens without '#'.
  std::vector<std::string> code_markers;
};

class OptimizationDb {
 public:
  // Reads and validates the file at `path`. NOT_FOUND when it cannot be read,
  // INVALID_ARGUMENT with "<path>: <where>: <what>" when it is malformed.
  static absl::StatusOr<OptimizationDb> LoadFromFile(const std::string& path);
  // Parses and validates JSON text; `origin` prefixes error messages.
  static absl::StatusOr<OptimizationDb> Parse(absl::string_view json_text, absl::string_view origin);

  int version() const { return version_; }
  const std::vector<Pattern>& patterns() const { return patterns_; }
  const std::map<std::string, std::string>& knobs() const { return knobs_; }
  const std::map<std::string, std::string>& templates() const { return templates_; }
  // The pattern with `id`, or null.
  const Pattern* Find(absl::string_view id) const;
  // Whether `a` and `b` are declared to conflict (in either direction).
  bool Conflict(const Pattern& a, const Pattern& b) const;

 private:
  int version_ = 0;
  std::vector<Pattern> patterns_;
  std::map<std::string, std::string> knobs_;
  std::map<std::string, std::string> templates_;
};

// How a knob change moves its knob: "x2", "+1" up; "/2", "x0.5", "-1" down; a literal
// ("8", "true", "tf32", "sm_count") sets it.
enum class KnobDirection { kUp, kDown, kSet };

// Parses a knob change value; INVALID_ARGUMENT for malformed ones ("x0", "/0", "+").
absl::StatusOr<KnobDirection> ParseKnobChange(absl::string_view value);

// Whether two changes of the same knob contradict: opposite directions, or two different
// literals. Malformed values never contradict (they cannot be loaded anyway).
bool KnobChangesContradict(absl::string_view a, absl::string_view b);

// Whether a pattern's arch entry ("*", "sm_90", "sm_80+") accepts `gpu_arch` ("sm_90",
// "sm_90a"). An unknown (empty) gpu_arch only matches "*".
bool ArchMatches(absl::string_view pattern_arch, absl::string_view gpu_arch);

// The op classes the database may name ("gemm", "matvec", ...).
const std::vector<std::string>& KnownOpClasses();

// The install's data/optimization_db.json (found next to the binary or above it, then in
// the current directory); "data/optimization_db.json" when none exists.
std::string DefaultOptimizationDbPath();

// The database at `path`, loaded on the first call for that path and shared by every
// later caller in the process (a file changed after its first load is not read again);
// errors as LoadFromFile, and a failed load is not kept: the next call tries again.
// Thread-safe.
absl::StatusOr<std::shared_ptr<const OptimizationDb>> SharedOptimizationDb(const std::string& path);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_OPTIMIZATION_DB_H_
