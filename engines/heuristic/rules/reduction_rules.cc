// The sizing rules of row-wise reductions over an (OUTER, R, INNER) view:
// softmax_online, reduce_dim, scan_rows (declared in family_rules.h).
#include "engines/heuristic/rules/family_rules.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/strings/string_view.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

absl::StatusOr<TemplateParams> SoftmaxParams(const TemplateInfo& t, const RecognizedOp& op,
                                             const GpuSpec* /*gpu*/) {
  TemplateParams p;
  const bool half = Is16Bit(op.dtype);
  if (op.input_shape.empty()) return Precondition(t, "input shape unknown");
  RowView v = ViewOf(op);
  // fp32 contiguous rows (INNER == 1) up to 32768 elements in one pass from registers,
  // 16 warps. Measured on an H200 (template_sweep.py, problems/25, softmax over rows of
  // 32768 fp32): one pass of 32768 / 16 warps 1.024 ms, / 8 warps 1.296; two passes of
  // 16384 / 16 warps 1.415, of 8192 / 16 warps 1.521 (the old rule); torch.compile 1.426;
  // through the loop 1.029 ms. 16-bit rows keep chunks of 16384: one pass of 32768 bf16
  // took problems/26 (log-softmax) from 1.183 ms to 1.699 through the loop.
  RowTiles(v, half ? 16384 : v.inner == 1 ? 32768 : 8192, &p);
  p["DIM"] = std::to_string(op.dim);
  p["LOG"] = op.variant == "log_softmax" ? "True" : "False";
  p["num_stages"] = "1";
  return p;
}

absl::StatusOr<TemplateParams> ReduceDimParams(const TemplateInfo& t, const RecognizedOp& op,
                                               const GpuSpec* gpu) {
  TemplateParams p;
  const int sms = SmCount(gpu);
  const bool half = Is16Bit(op.dtype);
  static const std::set<std::string> kOps = {"sum",    "mean",   "max",  "min", "prod",
                                             "argmax", "argmin", "norm", "var", "std"};
  if (!kOps.count(op.variant)) {
    return Precondition(t, absl::StrCat("reduction '", op.variant, "' not supported"));
  }
  if (op.variant == "norm") {
    // linalg_vector_norm's ord / norm's p; the harness leaves non-finite numbers out, so
    // a missing order is +-inf, which the signature cannot tell apart.
    const double ord = ScalarArg(op, op.main_op == "norm" ? "p" : "ord", NAN);
    if (ord != 2.0 && ord != 1.0 && ord != 0.0) {
      return Precondition(t, std::isnan(ord) ? std::string("norm order not recorded (+-inf)")
                                             : absl::StrCat("norm order ", ord,
                                                            " (the template has 2, 1, 0, +-inf)"));
    }
    p["ORD"] = absl::StrCat(static_cast<int>(ord));
  }
  if (op.variant == "var" || op.variant == "std") {
    const double correction = ScalarArg(op, "correction", 1.0);
    if (correction < 0 || correction > 64 || correction != std::floor(correction)) {
      return Precondition(t, absl::StrCat("correction ", correction, " not an integer in [0, 64]"));
    }
    p["CORRECTION"] = absl::StrCat(static_cast<int>(correction));
  }
  if (op.num_dims != 1 && op.input_shape.size() > 1) {
    return Precondition(t, absl::StrCat("reduces ", op.num_dims,
                                        " dims at once; the template reduces one"));
  }
  if (op.input_shape.empty()) return Precondition(t, "input shape unknown");
  RowView v = ViewOf(op);
  // Tiles of 8192 elements with at most 8 warps; 16-bit tiles over a middle dim (INNER >
  // 1) of 2048 elements (BLOCK_I 64 x BLOCK_R 32, 4 warps). Measured on an H200
  // (template_sweep.py, problems/24, min over dim 1 of 96 x 4096 x 4096 bf16): 64 x 32 /
  // 4 warps 0.724 ms, 128 x 32 / 8 0.730, 256 x 16 / 8 0.743, 64 x 128 / 8 0.831 (the
  // 8192 rule); torch.compile 0.754. fp32 over a middle dim (problems/20, 22) already
  // runs at 93% of the roofline with the 8192 rule, so it keeps it.
  RowTiles(v, half && v.inner > 1 ? 2048 : 8192, &p);
  p["num_warps"] = std::to_string(std::min<int64_t>(8, std::stoll(p["num_warps"])));
  SplitRows(v, sms, &p);
  p["OP"] = op.variant;
  p["DIM"] = std::to_string(op.dim);
  p["KEEPDIM"] = op.keepdim ? "True" : "False";
  p["num_stages"] = "1";
  return p;
}

absl::StatusOr<TemplateParams> ScanRowsParams(const TemplateInfo& t, const RecognizedOp& op,
                                              const GpuSpec* gpu) {
  TemplateParams p;
  const int sms = SmCount(gpu);
  // variant: [reverse_|exclusive_|masked_]cumsum|cumprod.
  absl::string_view base = op.variant;
  bool reverse = absl::ConsumePrefix(&base, "reverse_");
  bool exclusive = absl::ConsumePrefix(&base, "exclusive_");
  bool masked = absl::ConsumePrefix(&base, "masked_");
  if (base != "cumsum" && base != "cumprod") {
    return Precondition(t, absl::StrCat("scan '", op.variant, "' not supported (cumsum, cumprod)"));
  }
  if (op.input_shape.empty()) return Precondition(t, "input shape unknown");
  if (op.tags.count("shape_changing")) {
    return Precondition(t, "the reference's exclusive scan changes the input's shape "
                           "(concatenation then a slice); the template keeps it");
  }
  RowView v = ViewOf(op);
  // A chunk of 2048 scans in registers with 4 warps; more only costs registers.
  RowTiles(v, 2048, &p);
  // Few long rows: a blocked two-level scan (totals pass, then slices in parallel).
  SplitRows(v, sms, &p);
  p["OP"] = std::string(base);
  p["DIM"] = std::to_string(op.dim);
  p["REVERSE"] = reverse ? "True" : "False";
  p["EXCLUSIVE"] = exclusive ? "True" : "False";
  p["MASKED"] = masked ? "True" : "False";
  p["num_stages"] = "1";
  return p;
}

}  // namespace kagent::rules
