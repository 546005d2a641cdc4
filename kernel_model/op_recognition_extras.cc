// Op recognition: the ops a recognized pattern does not cover (CheckExtraOps).
// Methods of op_recognition_internal::Recognizer (op_recognition_internal.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernel_model/op_recognition_internal.h"

namespace kagent::op_recognition_internal {

// The compute ops the class's templates perform for the recognized variant, the main op
// included; false when the class is not checked (no template for it, elementwise
// "fused", vector_norm_dim: those are refused already). *whole: the allowance is the
// whole model's (a decomposed loss), not the main op's plus helpers.
bool Recognizer::Performed(Allowance* a, bool* whole) const {
  *whole = false;
  const std::string& c = out_.op_class;
  const std::string& v = out_.variant;
  const std::string& m = out_.main_op;
  auto main_and = [&](Allowance helpers) {
    helpers.insert(helpers.begin(), {{m}, 1});
    *a = std::move(helpers);
    return true;
  };
  // A depthwise-separable chain performs its second (pointwise) convolution too.
  if (c == "conv" && out_.tags.count("depthwise_separable")) return main_and({{{m}, 1}});
  if (c == "conv" || c == "matvec" || c == "pooling" || c == "softmax" || c == "reduction") {
    return main_and({});
  }
  if (c == "attention") {
    if (v == "written_out") {  // the whole pattern (WrittenOutAttention matched it exactly)
      *whole = true;
      *a = {{{"bmm", "mm", "matmul"}, 2}, {{"mul", "div"}, 2},
            {{"_softmax", "softmax", "_safe_softmax"}, 1}, {{"tril"}, 1}, {{"where"}, 1},
            {{"add"}, 1}};
      return true;
    }
    // SDPA pads the head dims of Q, K, V to a multiple of 8 for the flash kernel (the
    // template reads the real ones at run time); a fused op may show its forward kernel.
    return main_and({{{"constant_pad_nd", "pad"}, 3},
                     {{"_flash_attention_forward", "_efficient_attention_forward"}, 1}});
  }
  if (c == "gemm") {
    if (v == "diag") return main_and({{{"diag", "diag_embed", "diagonal"}, 2}});
    if (v == "triangular") return main_and({{{"tril", "triu"}, 2}});
    return main_and({});
  }
  if (c == "elementwise") {
    if (v == "fused") return false;
    if (v == "swish" && m == "sigmoid") return main_and({{{"mul"}, 1}});  // x * sigmoid(x)
    if (v == "softsign" && m == "abs") return main_and({{{"add"}, 1}, {{"div"}, 1}});
    if (v == "mish" && m == "softplus") return main_and({{{"tanh"}, 1}, {{"mul"}, 1}});
    if (v == "gelu_tanh" && m == "tanh") {  // written out (WrittenOutGeluTanh)
      return main_and({{{"pow"}, 1}, {{"mul"}, 4}, {{"add"}, 2}});
    }
    return main_and({});
  }
  if (c == "norm") {
    if (v == "vector_norm_dim") return false;
    if (v == "rms" && m == "mean") {  // x / sqrt(mean(x^2) + eps), x * rsqrt(...)
      return main_and({{{"pow", "mul", "square"}, 1}, {{"add"}, 1}, {{"sqrt", "rsqrt"}, 1},
                       {{"div", "mul"}, 1}});
    }
    if (v == "l1" || v == "l2" || v == "max") {  // LpNormalization's forms
      return main_and({{{"abs", "pow", "square", "mul"}, 1}, {{"sqrt"}, 1},
                       {{"add", "clamp_min", "clamp"}, 1}, {{"div"}, 1}});
    }
    if (v == "frobenius") return main_and({{{"div"}, 1}});
    // F.instance_norm repeats weight, bias and the running statistics per sample and
    // averages the updated statistics back.
    if (v == "instance") return main_and({{{"repeat"}, 4}, {{"mean"}, 2}});
    return main_and({});
  }
  if (c == "scan") {
    if (absl::StartsWith(v, "reverse_")) return main_and({{{"flip"}, 2}});
    if (absl::StartsWith(v, "exclusive_")) {
      return main_and({{{"cat", "constant_pad_nd", "pad"}, 1}});
    }
    if (absl::StartsWith(v, "masked_")) return main_and({{{"mul"}, 1}});  // x * mask
    return main_and({});
  }
  if (c == "loss") {
    static const std::set<std::string> kFused = {"mse_loss", "smooth_l1_loss", "huber_loss"};
    if (kFused.count(m)) return main_and({});
    *whole = true;
    if (v == "cross_entropy") {
      *a = {{{"_log_softmax", "log_softmax"}, 1},
            {{"nll_loss_forward", "nll_loss", "nll_loss2d_forward", "cross_entropy_loss"}, 1}};
      return true;
    }
    // Decomposed losses: the whole model's ops (the main op is its first).
    if (v == "mse") {  // mean((p - t)^2)
      *a = {{{"sub"}, 1}, {{"pow", "mul", "square"}, 1}, {{"mean", "sum"}, 1}, {{"div"}, 1}};
      return true;
    }
    if (v == "hinge") {  // mean(clamp(1 - p * t, min=0))
      *a = {{{"mul"}, 1}, {{"rsub", "sub"}, 1}, {{"clamp", "clamp_min", "relu"}, 1},
            {{"mean", "sum"}, 1}, {{"div"}, 1}};
      return true;
    }
    if (v == "kl_div") {  // kl_div(log(p), t): log, then xlogy(t, t) - t * log(p), reduced
      *a = {{{"log"}, 1}, {{"kl_div"}, 1}, {{"mul"}, 1}, {{"xlogy"}, 1}, {{"sub"}, 1},
            {{"sum", "mean"}, 1}, {{"div"}, 1}};
      return true;
    }
    // Losses whose decomposition varies with the torch version: their vocabulary.
    if (v == "smooth_l1" || v == "huber") {
      *a = {{{"sub", "rsub", "abs", "where", "lt", "le", "gt", "ge", "mul", "pow", "square",
              "div", "add", "mean", "sum"}, 16}};
      return true;
    }
    if (v == "cosine_similarity") {
      *a = {{{"cosine_similarity", "cosine_embedding_loss", "linalg_vector_norm", "norm",
              "clamp_min", "clamp", "maximum", "div", "mul", "sum", "rsub", "sub", "mean",
              "sqrt", "rsqrt", "reciprocal", "pow"}, 16}};
      return true;
    }
    if (v == "triplet_margin") {
      *a = {{{"triplet_margin_loss", "pairwise_distance", "sub", "add", "norm",
              "linalg_vector_norm", "abs", "pow", "sqrt", "clamp_min", "clamp", "relu",
              "mean", "sum"}, 16}};
      return true;
    }
  }
  return false;
}

// An integer counter of one element updated in place (BatchNorm's num_batches_tracked).
bool Recognizer::IsCounterUpdate(const OpRecord& r) {
  static const std::set<std::string> kInts = {"int64", "int32", "int16", "int8", "uint8"};
  if (r.outputs_size() == 0) return false;
  for (const auto* ts : {&r.inputs(), &r.outputs()}) {
    for (const TensorInfo& t : *ts) {
      if (Numel(ShapeOf(t)) > 1 || !kInts.count(t.dtype())) return false;
    }
  }
  return true;
}

// Sets extra_ops / extra_ops_why / tag extra_ops when the model computes more than the
// recognized class's templates do (see the header).
void Recognizer::CheckExtraOps() {
  Allowance allowed;
  bool whole = false;
  if (main_ == nullptr || !Performed(&allowed, &whole)) return;
  auto consume = [&](const std::string& name) {
    for (auto& [names, left] : allowed) {
      if (left > 0 && names.count(name)) {
        --left;
        return true;
      }
    }
    return false;
  };
  const std::string main_name = BaseOpName(main_->op());
  consume(main_name);
  std::vector<std::string> before, after;
  bool past_main = false;
  for (const Op& op : compute_) {
    if (op.record == main_) {
      past_main = true;
      continue;
    }
    if (IsCounterUpdate(*op.record) || consume(op.name)) continue;
    std::string name = absl::StrCat("aten::", op.name);
    out_.extra_ops.push_back(name);
    std::vector<std::string>& side = past_main ? after : before;
    if (std::find(side.begin(), side.end(), name) == side.end()) side.push_back(name);
  }
  if (out_.extra_ops.empty()) return;
  out_.tags.insert("extra_ops");
  const std::string main_text = absl::StrCat("aten::", main_name);
  const std::string pre = absl::StrJoin(before, ", "), post = absl::StrJoin(after, ", ");
  if (whole) {  // the main op is merely the pattern's first: name the whole model
    std::vector<std::string> all;
    for (const Op& op : compute_) all.push_back(absl::StrCat("aten::", op.name));
    out_.extra_ops_why = absl::StrCat(
        "the model computes ", absl::StrJoin(all, ", "), ", more than the ", out_.op_class,
        "/", out_.variant, " pattern: ", absl::StrJoin(out_.extra_ops, ", "), " left over");
    return;
  }
  out_.extra_ops_why =
      before.empty()  ? absl::StrCat("the model also computes ", post, " after ", main_text)
      : after.empty() ? absl::StrCat("the model also computes ", pre, " before ", main_text)
                      : absl::StrCat("the model also computes ", pre, " before ", main_text,
                                     " and ", post, " after it");
}

}  // namespace kagent::op_recognition_internal
