// Op recognition: losses, normalizations (layer, RMS, batch, group, instance, Lp along a dim) and softmax.
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

bool Recognizer::Loss() {
  static const std::map<std::string, std::string> kDirect = {
      {"mse_loss", "mse"},
      {"cross_entropy_loss", "cross_entropy"},
      {"nll_loss", "cross_entropy"},
      {"nll_loss_forward", "cross_entropy"},
      {"nll_loss2d_forward", "cross_entropy"},
      {"kl_div", "kl_div"},
      {"smooth_l1_loss", "smooth_l1"},
      {"huber_loss", "huber"},
      {"cosine_similarity", "cosine_similarity"},
      {"cosine_embedding_loss", "cosine_similarity"},
      {"triplet_margin_loss", "triplet_margin"},
      {"hinge_embedding_loss", "hinge_embedding"},
      {"margin_ranking_loss", "margin_ranking"},
      {"binary_cross_entropy", "bce"},
      {"binary_cross_entropy_with_logits", "bce"},
      {"soft_margin_loss", "soft_margin"}};
  for (const Op& op : compute_) {
    auto it = kDirect.find(op.name);
    if (it != kDirect.end()) {
      Decide(&op, "loss", it->second, absl::StrCat("aten::", op.name));
      LossReduction();
      return true;
    }
  }
  if (!ScalarOutput() || compute_.empty()) return false;
  const Op* first = &compute_.front();
  auto decide = [&](const char* variant, const char* why) {
    Decide(first, "loss", variant, why);
    LossReduction();
    return true;
  };
  bool mean_or_sum = HasAny({"mean", "sum"});
  if (HasAny({"xlogy"}) || (Has("log") && Has("kl_div"))) return decide("kl_div", "xlogy reduced to a scalar");
  if (HasAny({"linalg_vector_norm", "norm"}) && HasAny({"clamp_min", "clamp", "relu"}) && Has("sub"))
    return decide("triplet_margin", "distance norms, margin clamp, scalar");
  if (HasAny({"linalg_vector_norm", "norm"}) && Has("mul") && Has("sum") && HasAny({"div"}) && mean_or_sum)
    return decide("cosine_similarity", "dot / norms reduced to a scalar");
  // The decomposed patterns' constants, where the signature records them: hinge's
  // 1 - p*t clamped at 0 (no upper bound), MSE's p - t squared. Another constant
  // (mean((p - t)^3), clamp(2 - p*t)) is a different model: left to the other classes,
  // whose extra-ops check then names what the templates do not compute.
  bool hinge_constants = RecordedIs("rsub", "other", 1) && RecordedIs("rsub", "alpha", 1) &&
                         RecordedIs("sub", "alpha", 1) && RecordedIs("clamp", "min", 0) &&
                         !RecordsAny("clamp", "max") && RecordedIs("clamp_min", "min", 0);
  if (HasAny({"clamp", "clamp_min", "relu"}) && Has("mul") && mean_or_sum && hinge_constants)
    return decide("hinge", "clamp(1 - y*p) reduced to a scalar");
  bool mse_constants = RecordedIs("sub", "alpha", 1) && RecordedIs("pow", "exponent", 2);
  if (Has("sub") && HasAny({"pow", "mul", "square"}) && mean_or_sum && mse_constants)
    return decide("mse", "mean of squared differences");
  if (Has("sub") && Has("abs") && Has("where") && mean_or_sum)
    return decide("smooth_l1", "piecewise |diff| reduced to a scalar");
  return false;
}

// The reduction a loss's recorded ops show: mean; kl_div's batchmean (sum / batch);
// sum alone. A fused aten loss (mse_loss, smooth_l1_loss) hides it: torch's default mean.
void Recognizer::LossReduction() {
  if (Has("mean")) {
    out_.reduction = "mean";
  } else if (Has("sum") || Has("div")) {
    out_.reduction = out_.variant == "kl_div" && Has("div") ? "batchmean"
                     : Has("div")                          ? "mean"
                                                           : "sum";
  } else {
    out_.reduction = "mean";
  }
  if (out_.variant == "kl_div" && !compute_.empty() && compute_.front().name == "log") {
    out_.tags.insert("log_input");
  }
}

bool Recognizer::Norm() {
  static const std::map<std::string, std::string> kDirect = {
      {"native_layer_norm", "layer"},
      {"layer_norm", "layer"},
      {"rms_norm", "rms"},
      {"_fused_rms_norm", "rms"},
      {"native_batch_norm", "batch"},
      {"_native_batch_norm_legit_no_training", "batch"},
      {"_native_batch_norm_legit", "batch"},
      {"batch_norm", "batch"},
      // On a GPU, F.batch_norm reaches the dispatcher as cudnn_batch_norm (fp32/fp16 with
      // weight and bias) or native_batch_norm; exported graphs use _batch_norm_no_update.
      {"cudnn_batch_norm", "batch"},
      {"miopen_batch_norm", "batch"},
      {"_batch_norm_no_update", "batch"},
      {"_batch_norm_with_update", "batch"},
      {"native_group_norm", "group"},
      {"group_norm", "group"},
      {"instance_norm", "instance"}};
  for (const Op& op : compute_) {
    auto it = kDirect.find(op.name);
    if (it == kDirect.end()) continue;
    Decide(&op, "norm", it->second, absl::StrCat("aten::", op.name));
    const OpRecord& r = *op.record;
    int rank = out_.input_shape.size();
    if (it->second == "layer" || it->second == "rms") {
      out_.has_affine = r.inputs_size() > 1;
      out_.num_dims = out_.has_affine ? std::max(1, r.inputs(1).shape_size()) : 1;
      out_.dim = rank - out_.num_dims;
    } else if (it->second == "batch") {
      // Tensor inputs (None is not recorded): x, weight?, bias?, running_mean?,
      // running_var?. Inference always passes the running statistics: 5 = affine,
      // 3 = neither weight nor bias, 4 = only one of them.
      out_.dim = 1;
      out_.has_affine = r.inputs_size() >= 4;
      if (r.inputs_size() == 4) out_.tags.insert("partial_affine");
    } else {
      // group_norm: x, weight?, bias?; 2 = only one of them.
      out_.dim = 1;
      out_.has_affine = r.inputs_size() > 1;
      if (it->second == "group" && r.inputs_size() == 2) out_.tags.insert("partial_affine");
    }
    // batch_norm over (1, N*C, *) that the model's output views back to (N, C, *). With
    // N = 1 the view changes nothing: a training-mode batch_norm of a batch of one with no
    // running statistics to update (x, weight?, bias? only) is per-(n, c) statistics over
    // the spatial dims, which is instance norm whichever module asked for it.
    const std::vector<int64_t>& y = out_.output_shape;
    auto training = out_.scalars.find("training");
    const bool batch_of_one_stats = training != out_.scalars.end() && training->second != 0 &&
                                    r.inputs_size() <= 3 && y.size() >= 1 && y[0] == 1;
    if (it->second == "batch" && rank >= 2 && out_.input_shape[0] == 1 &&
        static_cast<int>(y.size()) == rank &&
        ((y[0] > 1 && y[0] * y[1] == out_.input_shape[1]) ||
         (batch_of_one_stats && y[1] == out_.input_shape[1]))) {
      out_.variant = "instance";
    }
    if (out_.variant == "instance") InstanceNormArgs(r);
    return true;
  }
  // Decomposed RMSNorm: x / sqrt(mean(x^2, dim, keepdim) + eps).
  const Op* mean = Find({"mean"});
  bool same_shape = mean != nullptr && mean->record->inputs_size() > 0 &&
                    ShapeOf(mean->record->inputs(0)) == out_.output_shape;
  if (mean != nullptr && same_shape && HasAny({"pow", "mul", "square"}) &&
      HasAny({"sqrt", "rsqrt"}) && HasAny({"div", "mul"})) {
    Decide(mean, "norm", "rms", "x / sqrt(mean(x^2) + eps) pattern");
    InferDim(*mean->record);
    return true;
  }
  // Frobenius: x / ||x||_F, the 2-norm over every element (a scalar norm). x / ||x|| along
  // contiguous dims (KernelBench's L2Norm, x / torch.norm(x, p=2, dim=1, keepdim=True))
  // is variant l2, of order 1 l1; another order, or a quotient that is not x / norm(x)
  // alone (F.normalize's clamp_min(eps)), is vector_norm_dim, which has no template.
  const Op* nrm = Find({"linalg_vector_norm", "norm", "frobenius_norm"});
  if (nrm != nullptr && Has("div") && nrm->record->inputs_size() > 0 &&
      ShapeOf(nrm->record->inputs(0)) == out_.output_shape) {
    Decide(nrm, "norm", "frobenius", "x / norm(x) pattern");
    out_.dim = 0;
    out_.num_dims = out_.input_shape.size();
    const bool scalar_norm = nrm->record->outputs_size() > 0 &&
                             Numel(ShapeOf(nrm->record->outputs(0))) == 1;
    const double ord = nrm->name == "frobenius_norm"
                           ? 2.0
                           : ScalarArg(out_, nrm->name == "norm" ? "p" : "ord", 2.0);
    if (scalar_norm && ord == 2.0) return true;
    std::string why;
    // The order must be recorded: the harness leaves +-inf out.
    const bool ord_recorded = nrm->name != "frobenius_norm" &&
                              out_.scalars.count(nrm->name == "norm" ? "p" : "ord") > 0;
    if (!scalar_norm && ord_recorded && (ord == 2.0 || ord == 1.0) &&
        DividesAlongDims(*nrm, {nrm->name, "div"}, &why)) {
      out_.variant = ord == 2.0 ? "l2" : "l1";
      out_.reason = absl::StrCat("x / norm(x, ord ", ord, ") along dims");
      return true;
    }
    out_.variant = "vector_norm_dim";
    out_.reason = absl::StrCat("x / norm(x) with ", scalar_norm ? "" : "a norm along dims",
                               scalar_norm || ord == 2.0 ? "" : " and ",
                               ord == 2.0 ? "" : absl::StrCat("order ", ord),
                               !scalar_norm && !ord_recorded ? " (order not recorded: +-inf)" : "",
                               why.empty() ? "" : absl::StrCat(" (", why, ")"),
                               "; row_norm has orders 1 and 2 along dims");
    return true;
  }
  // L1: x / sum(|x|, dims, keepdim) (KernelBench's L1Norm), nothing else computed.
  const Op* sum = Find({"sum"});
  if (sum != nullptr && Has("abs") && Has("div") && names_.size() == 3 &&
      sum->record->inputs_size() > 0 && ShapeOf(sum->record->inputs(0)) == out_.output_shape) {
    std::string why;
    if (DividesAlongDims(*sum, {"abs", "sum", "div"}, &why)) {
      Decide(sum, "norm", "l1", "x / sum(|x|) along dims");
      return true;  // DividesAlongDims set dim, num_dims and keepdim
    }
  }
  return false;
}

// True when the model computes x / n, n the reduction `red` of x along one contiguous
// range of dims, broadcast back over them (keepdim, or leading dims dropped), and the
// compute ops are exactly `ops`: then sets dim, num_dims and keepdim. Else false, with
// why.
bool Recognizer::DividesAlongDims(const Op& red, std::set<std::string> ops, std::string* why) {
  const OpRecord& r = *red.record;
  const Op* div = Find({"div"});
  if (names_ != ops) {
    *why = "other ops computed";
    return false;
  }
  if (r.outputs_size() == 0 || div->record->inputs_size() != 2) {
    *why = "not a tensor quotient";
    return false;
  }
  const std::vector<int64_t> in = ShapeOf(r.inputs(0)), out = ShapeOf(r.outputs(0));
  const int rank = in.size();
  std::vector<int> dims = RecordedDims(r, in.size());
  if (dims.empty() && out.size() == in.size()) {  // no dims recorded: a keepdim shape
    for (int i = 0; i < rank; ++i) {
      if (out[i] == 1 && in[i] != 1) dims.push_back(i);
    }
  }
  if (dims.empty() || dims.back() - dims.front() + 1 != static_cast<int>(dims.size())) {
    *why = "reduced dims not one contiguous range";
    return false;
  }
  std::vector<int64_t> kept = in;
  for (int d : dims) kept[d] = 1;
  std::vector<int64_t> den = ShapeOf(div->record->inputs(1));
  if (static_cast<int>(den.size()) <= rank) den.insert(den.begin(), rank - den.size(), 1);
  if (ShapeOf(div->record->inputs(0)) != in || den != kept) {
    *why = "the quotient does not divide each slice by its own norm";
    return false;
  }
  out_.dim = dims.front();
  out_.num_dims = static_cast<int>(dims.size());
  out_.keepdim = static_cast<int>(out.size()) == rank;
  return true;
}

// F.instance_norm runs as batch_norm on x viewed as (1, N*C, *) (or as
// aten::instance_norm undecomposed): the model's shape is the final output's; the tensor
// inputs are x, weight?, bias?, then running_mean and running_var when the running
// statistics are used (an InstanceNorm tracking them, in eval mode: training /
// use_input_stats 0, tag running_stats).
void Recognizer::InstanceNormArgs(const OpRecord& r) {
  if (out_.output_shape.size() >= 3) out_.input_shape = out_.output_shape;
  out_.dim = 1;
  const bool direct = out_.main_op == "instance_norm";
  auto flag = out_.scalars.find(direct ? "use_input_stats" : "training");
  const bool running = flag != out_.scalars.end() && flag->second == 0;
  if (running) out_.tags.insert("running_stats");
  const int affine_inputs = r.inputs_size() - 1 - (running ? 2 : 0);
  out_.has_affine = affine_inputs >= 2;
  out_.tags.erase("partial_affine");
  if (affine_inputs == 1) out_.tags.insert("partial_affine");
}

bool Recognizer::Softmax() {
  const Op* op = Find({"_softmax", "softmax", "_log_softmax", "log_softmax", "_safe_softmax"});
  if (op == nullptr) return false;
  bool log = op->name.find("log") != std::string::npos;
  Decide(op, "softmax", log ? "log_softmax" : "softmax", absl::StrCat("aten::", op->name));
  // The recorded dim (aten::_softmax's `dim`); signatures without scalars: the last dim.
  std::vector<int> dims = RecordedDims(*op->record, out_.input_shape.size());
  out_.dim = dims.size() == 1 ? dims[0] : static_cast<int>(out_.input_shape.size()) - 1;
  return true;
}

}  // namespace kagent::op_recognition_internal
