// The sizing rules of losses: loss_rows, loss_reduce (declared in family_rules.h).
#include "engines/heuristic/rules/family_rules.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

absl::StatusOr<TemplateParams> LossRowsParams(const TemplateInfo& t, const RecognizedOp& op,
                                              const GpuSpec* /*gpu*/) {
  TemplateParams p;
  const bool half = Is16Bit(op.dtype);
  if (op.variant != "cross_entropy" && op.variant != "cosine_similarity" &&
      op.variant != "triplet_margin") {
    return Precondition(t, absl::StrCat("loss '", op.variant,
                                        "' is not a row loss (cross_entropy, cosine_similarity, "
                                        "triplet_margin)"));
  }
  if (op.input_shape.size() != 2 || op.input_shape[1] <= 0) {
    return Precondition(t, "row losses take (B, C) inputs");
  }
  if (!op.reduction.empty() && op.reduction != "mean") {
    return Precondition(t, absl::StrCat("reduction ", op.reduction, " (the template takes the mean)"));
  }
  int64_t block = Clamp(NextPow2(op.input_shape[1]), 16, half ? 8192 : 4096);
  p["LOSS"] = op.variant;
  p["BLOCK"] = std::to_string(block);
  p["num_warps"] = block >= 4096 ? "8" : block >= 1024 ? "4" : "2";
  p["num_stages"] = "2";
  return p;
}

absl::StatusOr<TemplateParams> LossReduceParams(const TemplateInfo& t, const RecognizedOp& op,
                                                const GpuSpec* gpu) {
  TemplateParams p;
  const int sms = SmCount(gpu);
  static const std::set<std::string> kLosses = {"mse", "smooth_l1", "huber", "hinge", "kl_div"};
  if (!kLosses.count(op.variant)) {
    return Precondition(t, absl::StrCat("loss '", op.variant,
                                        "' is not an elementwise loss (mse, smooth_l1, huber, "
                                        "hinge, kl_div)"));
  }
  if (op.numel <= 0) return Precondition(t, "input shape unknown");
  // A few programs per SM, each streaming >= 4 chunks of BLOCK; the final pass adds at
  // most 4 x SMs partials.
  int64_t block = op.numel >= (1 << 22) ? 4096 : Clamp(NextPow2(op.numel), 64, 1024);
  int64_t split = Clamp(CeilDiv(op.numel, 4 * block), 1, 4LL * sms);
  p["LOSS"] = op.variant;
  p["REDUCTION"] = op.reduction.empty() ? "mean" : op.reduction;
  p["LOG_INPUT"] = op.tags.count("log_input") ? "True" : "False";
  p["BLOCK"] = std::to_string(block);
  p["SPLIT_N"] = std::to_string(split);
  p["num_warps"] = block >= 4096 ? "8" : "4";
  p["num_stages"] = "2";
  return p;
}

}  // namespace kagent::rules
