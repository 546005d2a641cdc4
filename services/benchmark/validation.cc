#include "services/benchmark/validation.h"

#include "absl/strings/str_cat.h"

namespace kagent {
namespace {

absl::Status ValidateTaskId(const std::string& id) {
  if (id.empty() || id.size() > 256) {
    return absl::InvalidArgumentError("task_id is required (1-256 characters)");
  }
  return absl::OkStatus();
}

absl::Status ValidateProblemSource(const v1::Problem& p, int64_t max_source_bytes) {
  if (p.source().empty()) return absl::InvalidArgumentError("problem.source is empty");
  if (static_cast<int64_t>(p.source().size()) > max_source_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("problem.source exceeds ", max_source_bytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateKernel(const v1::KernelSource& k, const std::string& field,
                            int64_t max_source_bytes) {
  if (k.language() != v1::KERNEL_LANGUAGE_TRITON && k.language() != v1::KERNEL_LANGUAGE_CUDA) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".language must be TRITON or CUDA"));
  }
  if (static_cast<int64_t>(k.source().size()) > max_source_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, ".source exceeds ", max_source_bytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateTimeout(double seconds) {
  if (!(seconds >= 0 && seconds <= 3600)) {
    return absl::InvalidArgumentError("timeout_seconds must be in [0, 3600]");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateMeasureRequest(const v1::MeasureRequest& r, int64_t max_source_bytes) {
  if (absl::Status s = ValidateTaskId(r.task_id()); !s.ok()) return s;
  if (absl::Status s = ValidateProblemSource(r.problem(), max_source_bytes); !s.ok()) return s;
  for (const auto& [k, field] : {std::pair{&r.kernel(), "kernel"},
                                 std::pair{&r.reference_kernel(), "reference_kernel"}}) {
    if (k->source().empty()) continue;
    if (absl::Status s = ValidateKernel(*k, field, max_source_bytes); !s.ok()) return s;
  }
  if (r.kernel().source().empty() && !r.measure_baselines()) {
    return absl::InvalidArgumentError("nothing to measure: give kernel or set measure_baselines");
  }
  if (!r.shape_set().empty()) {
    bool known = false;
    for (const v1::ShapeSet& set : r.problem().extra_shapes()) known = known || set.name() == r.shape_set();
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape_set '", r.shape_set(), "' is not in problem.extra_shapes"));
    }
  }
  if (r.trials() < 0 || r.trials() > 100) return absl::InvalidArgumentError("trials must be in [0, 100]");
  if (r.timing_reps() < 0 || r.timing_reps() > 100000) {
    return absl::InvalidArgumentError("timing_reps must be in [0, 100000]");
  }
  if (!(r.timing_budget_ms() <= 1e6)) {  // NaN included; negative: no budget
    return absl::InvalidArgumentError("timing_budget_ms must be at most 1e6 (negative: none)");
  }
  return ValidateTimeout(r.timeout_seconds());
}

absl::Status ValidateScreenRequest(const v1::ScreenRequest& r, int64_t max_source_bytes) {
  if (absl::Status s = ValidateTaskId(r.task_id()); !s.ok()) return s;
  if (absl::Status s = ValidateProblemSource(r.problem(), max_source_bytes); !s.ok()) return s;
  if (r.kernels().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernels is empty: a screen takes 1 to ", kMaxScreenKernels, " variants"));
  }
  if (r.kernels_size() > kMaxScreenKernels) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "kernels holds ", r.kernels_size(), " variants; a screen takes at most ", kMaxScreenKernels));
  }
  for (int i = 0; i < r.kernels_size(); ++i) {
    std::string field = absl::StrCat("kernels[", i, "]");
    if (r.kernels(i).source().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".source is empty"));
    }
    if (r.kernels(i).language() != v1::KERNEL_LANGUAGE_TRITON) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".language must be TRITON (a screen takes Triton kernels only)"));
    }
    if (absl::Status s = ValidateKernel(r.kernels(i), field, max_source_bytes); !s.ok()) return s;
  }
  if (r.timing_reps() < 0 || r.timing_reps() > 1000) {
    return absl::InvalidArgumentError("timing_reps must be in [0, 1000]");
  }
  return ValidateTimeout(r.timeout_seconds());
}

}  // namespace kagent
