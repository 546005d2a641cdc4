// The sizing rules of elementwise activations and broadcasting binary ops: elementwise
// (declared in family_rules.h).
#include "engines/heuristic/rules/family_rules.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

namespace {

// The elementwise template's scalar params for the activation: the values the signature
// recorded for the op (OpRecord.scalars, by aten's argument names), else torch's defaults
// (signatures from older harnesses carry none). The *_NAME params are the constructor
// keywords ModelNew reads them from when the problem passes them.
std::string OpArgs(const RecognizedOp& op, std::map<std::string, std::string>* p) {
  auto value = [&](const char* name, double fallback) {
    return FloatText(ScalarArg(op, name, fallback));
  };
  const std::string& variant = op.variant;
  if (variant == "leaky_relu") {
    (*p)["ALPHA_NAME"] = "negative_slope";
    (*p)["ALPHA"] = value("negative_slope", 0.01);
  } else if (variant == "elu") {
    (*p)["ALPHA_NAME"] = "alpha";
    (*p)["ALPHA"] = value("alpha", 1.0);
    (*p)["SCALE"] = value("scale", 1.0);
    (*p)["INPUT_SCALE"] = value("input_scale", 1.0);
  } else if (variant == "celu") {
    (*p)["ALPHA_NAME"] = "alpha";
    (*p)["ALPHA"] = value("alpha", 1.0);
  } else if (variant == "softplus") {
    (*p)["ALPHA_NAME"] = "beta";
    (*p)["ALPHA"] = value("beta", 1.0);
    (*p)["BETA_NAME"] = "threshold";
    (*p)["BETA"] = value("threshold", 20.0);
  } else if (variant == "scale") {
    (*p)["SCALE"] = value("other", 1.0);
  } else if (variant == "mul" || variant == "add" || variant == "sub" || variant == "div" ||
             variant == "maximum" || variant == "minimum") {
    (*p)["A_RANK"] = std::to_string(op.operand_rank[0]);
    (*p)["B_RANK"] = std::to_string(op.operand_rank[1]);
    (*p)["A_UNSQ"] = std::to_string(op.operand_unsqueeze[0]);
    (*p)["B_UNSQ"] = std::to_string(op.operand_unsqueeze[1]);
  } else if (variant == "hardtanh") {
    (*p)["ALPHA_NAME"] = "min_val";
    (*p)["ALPHA"] = value("min_val", -1.0);
    (*p)["BETA_NAME"] = "max_val";
    (*p)["BETA"] = value("max_val", 1.0);
  }
  return variant;
}

}  // namespace

absl::StatusOr<TemplateParams> ElementwiseParams(const TemplateInfo& t, const RecognizedOp& op,
                                                 const GpuSpec* /*gpu*/) {
  TemplateParams p;
  const TemplateParam* ops = t.FindParam("OP");
  if (ops == nullptr ||
      std::find(ops->allowed.begin(), ops->allowed.end(), op.variant) == ops->allowed.end()) {
    return Precondition(t, absl::StrCat("activation '", op.variant, "' not in its OP list"));
  }
  p["OP"] = OpArgs(op, &p);
  p["BLOCK"] = op.numel >= (1 << 20) ? "4096" : "1024";
  p["num_warps"] = op.numel >= (1 << 20) ? "8" : "4";
  return p;
}

}  // namespace kagent::rules
