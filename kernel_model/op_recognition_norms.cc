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
      // LayerNorm(bias=False) records x and the weight only.
      if (it->second == "layer" && r.inputs_size() == 2) out_.tags.insert("partial_affine");
    } else if (it->second == "batch") {
      // Tensor inputs (None is not recorded): x, weight?, bias?, running_mean?,
      // running_var?. Inference always passes the running statistics: 5 = affine,
      // 3 = neither weight nor bias, 4 = only one of them.
      // Training mode with the running statistics: also 5, 3 or 4. An nn.BatchNorm
      // module updating them counts its batches (num_batches_tracked += 1): tagged, so
      // its three tensors are known to be x and the running statistics.
      out_.dim = 1;
      out_.has_affine = r.inputs_size() >= 4;
      if (r.inputs_size() == 4) out_.tags.insert("partial_affine");
      for (const Op& o : compute_) {
        if (IsCounterUpdate(*o.record)) out_.tags.insert("num_batches_tracked");
      }
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
  if (LpNormalization()) return true;
  // Frobenius: x / ||x||_F, the 2-norm over every element (a scalar norm). Along dims,
  // orders 1 and 2 are LpNormalization's; another order, or an x / norm(x) that is not
  // one of its forms, is vector_norm_dim, which has no template.
  const Op* nrm = Find({"linalg_vector_norm", "norm", "frobenius_norm"});
  if (nrm != nullptr && Has("div") && nrm->record->inputs_size() > 0 &&
      ShapeOf(nrm->record->inputs(0)) == out_.output_shape) {
    Decide(nrm, "norm", "frobenius", "x / norm(x) pattern");
    out_.dim = 0;
    out_.num_dims = out_.input_shape.size();
    const bool scalar_norm = nrm->record->outputs_size() > 0 &&
                             Numel(ShapeOf(nrm->record->outputs(0))) == 1;
    const char* ord_name = nrm->name == "norm" ? "p" : "ord";
    const double ord = nrm->name == "frobenius_norm" ? 2.0 : ScalarArg(out_, ord_name, 2.0);
    if (scalar_norm && ord == 2.0) return true;
    // The order must be recorded: the harness leaves +-inf out.
    const bool ord_recorded = nrm->name != "frobenius_norm" && out_.scalars.count(ord_name) > 0;
    out_.variant = "vector_norm_dim";
    out_.reason = absl::StrCat(
        "x / norm(x) with ", scalar_norm ? "" : "a norm along dims",
        scalar_norm || ord == 2.0 ? "" : " and ", ord == 2.0 ? "" : absl::StrCat("order ", ord),
        !scalar_norm && !ord_recorded ? " (order not recorded: +-inf)" : "",
        "; row_norm has orders 1 and 2 along one contiguous range of dims, x / norm(x) "
        "alone or with an eps added or clamped");
    return true;
  }
  return false;
}

// x / d along one contiguous range of dims, d one of (the compute ops exactly, in order):
//   [abs] sum|mean [add eps | clamp_min eps] div                      l1 (mean: tag mean_stat)
//   [pow 2 | square | mul x x] sum|mean [add eps] sqrt [add | clamp] div   l2
//   linalg_vector_norm|norm (ord 1 or 2, recorded) [add | clamp] div   l1, l2
//   abs amax|max(dim) [add | clamp] div                                max
// each op taking the previous one's output (by tensor id through views, else by shape)
// and the division's numerator the same x. The mean of squares under a root is RMSNorm,
// decided before this. Sets the class, dims, eps_mode and eps.
bool Recognizer::LpNormalization() {
  if (compute_.size() < 2 || compute_.size() > 6 || compute_.back().name != "div") return false;
  const Op& div = compute_.back();
  if (div.record->inputs_size() != 2 || div.record->outputs_size() == 0) return false;
  size_t i = 0;
  const Op* pre = nullptr;
  if (std::set<std::string>{"abs", "pow", "square", "mul"}.count(compute_[0].name)) {
    pre = &compute_[0];
    i = 1;
  }
  const Op& red = compute_[i];
  const OpRecord& r = *red.record;
  if (r.inputs_size() == 0 || r.outputs_size() == 0) return false;
  const TensorInfo& x = pre != nullptr ? pre->record->inputs(0) : r.inputs(0);
  bool squares = false;
  if (pre != nullptr) {
    const OpRecord& p = *pre->record;
    if (p.inputs_size() == 0 || p.outputs_size() == 0 || !Consumes(r, 0, p.outputs(0))) {
      return false;
    }
    squares = pre->name == "square" ||
              (pre->name == "pow" && RecordsAny("pow", "exponent") &&
               RecordedIs("pow", "exponent", 2)) ||
              (pre->name == "mul" && p.inputs_size() == 2 && Consumes(p, 1, p.inputs(0)));
    if (pre->name != "abs" && !squares) return false;
  }
  std::string variant;
  bool root = false;  // a sqrt must follow (a written-out l2)
  if (red.name == "linalg_vector_norm" || red.name == "norm") {
    const char* ord_name = red.name == "norm" ? "p" : "ord";
    auto ord = r.scalars().find(ord_name);
    if (pre != nullptr || ord == r.scalars().end()) return false;
    if (ord->second != 1.0 && ord->second != 2.0) return false;
    variant = ord->second == 1.0 ? "l1" : "l2";
  } else if ((red.name == "sum" || red.name == "mean") && pre != nullptr) {
    variant = squares ? "l2" : "l1";
    root = squares;
  } else if ((red.name == "amax" || red.name == "max") && pre != nullptr && !squares) {
    variant = "max";
  } else {
    return false;
  }
  std::string eps_mode;
  double eps = 0;
  bool rooted = false;
  const TensorInfo* made = &r.outputs(0);
  for (size_t j = i + 1; j + 1 < compute_.size(); ++j) {
    const Op& op = compute_[j];
    const OpRecord& o = *op.record;
    if (o.inputs_size() != 1 || o.outputs_size() == 0 || !Consumes(o, 0, *made)) return false;
    auto scalar = [&](const char* name, double* v) {
      auto it = o.scalars().find(name);
      if (it == o.scalars().end()) return false;
      *v = it->second;
      return true;
    };
    double alpha = 1, unused = 0;
    if (op.name == "sqrt" && root && !rooted) {
      rooted = true;
    } else if (op.name == "add" && eps_mode.empty() && scalar("other", &eps) &&
               (!scalar("alpha", &alpha) || alpha == 1)) {
      eps_mode = root && !rooted ? "add_inside" : "add";
    } else if ((op.name == "clamp_min" || (op.name == "clamp" && !scalar("max", &unused))) &&
               eps_mode.empty() && (!root || rooted) && scalar("min", &eps)) {
      eps_mode = "clamp";
    } else {
      return false;
    }
    made = &o.outputs(0);
  }
  if (root != rooted) return false;
  if (!Consumes(*div.record, 0, x) ||
      (div.record->inputs(1).id() != 0 && made->id() != 0 && !Consumes(*div.record, 1, *made))) {
    return false;
  }
  std::string why;
  if (!AlongDims(r, *div.record, *made, &why)) return false;
  const int dim = out_.dim, num_dims = out_.num_dims;
  const bool keepdim = out_.keepdim;
  Decide(&red, "norm", variant,
         absl::StrCat("x / ", variant == "max" ? "max |x|" : variant, red.name == "mean" ? " mean" : "",
                      " along dims", eps_mode.empty() ? "" : absl::StrCat(", eps ", eps_mode)));
  out_.dim = dim;
  out_.num_dims = num_dims;
  out_.keepdim = keepdim;
  out_.input_shape = ShapeOf(x);
  if (red.name == "mean") out_.tags.insert("mean_stat");
  out_.eps_mode = eps_mode;
  out_.eps = eps;
  return true;
}

// The tensor `id` comes from, through view ops only (unsqueeze, expand, view, ...): the
// first tensor upstream that a view op did not make (id itself when none did).
int64_t Recognizer::ThroughViews(int64_t id) const {
  for (int hops = 0; id != 0 && hops < 64; ++hops) {
    const OpRecord* maker = ViewMaker(id);
    if (maker == nullptr) return id;
    id = maker->inputs(0).id();
  }
  return id;
}

// The view op that made tensor `id` (the last one recorded), or null.
const OpRecord* Recognizer::ViewMaker(int64_t id) const {
  const OpRecord* maker = nullptr;
  for (const OpRecord& r : sig_.ops()) {
    if (id == 0 || !ViewOps().count(BaseOpName(r.op())) || r.inputs_size() == 0) continue;
    for (const TensorInfo& o : r.outputs()) {
      if (o.id() == id && r.inputs(0).id() != id) maker = &r;
    }
  }
  return maker;
}

// True when input `i` of `to` is the tensor `t`, or a view of it: by tensor ids when both
// have one, else (older signatures) when the shapes are equal.
bool Recognizer::Consumes(const OpRecord& to, int i, const TensorInfo& t) const {
  if (to.inputs_size() <= i) return false;
  const TensorInfo& in = to.inputs(i);
  if (in.id() != 0 && t.id() != 0) return ThroughViews(in.id()) == ThroughViews(t.id());
  return ShapeOf(in) == ShapeOf(t);
}

// True when the reduction `r` of x runs along one contiguous range of dims and the
// quotient `div` divides x by its result `den` (r's output or what the eps ops made of
// it) broadcast back over them: keepdim, leading dims dropped, or expanded to x's shape.
// Then sets dim, num_dims and keepdim; else false, with why.
bool Recognizer::AlongDims(const OpRecord& r, const OpRecord& div, const TensorInfo& den_made,
                           std::string* why) {
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
  auto padded = [&](std::vector<int64_t> s) {
    if (static_cast<int>(s.size()) <= rank) s.insert(s.begin(), rank - s.size(), 1);
    return s;
  };
  std::vector<int64_t> den = padded(ShapeOf(div.inputs(1)));
  if (den == in && den != padded(ShapeOf(den_made))) {
    // Expanded back (F.normalize's expand_as): an expand op made x's shape of den's.
    for (const OpRecord& e : sig_.ops()) {
      const std::string name = BaseOpName(e.op());
      if ((name == "expand" || name == "expand_as") && e.inputs_size() > 0 &&
          e.outputs_size() > 0 && ShapeOf(e.inputs(0)) == ShapeOf(den_made) &&
          ShapeOf(e.outputs(0)) == in) {
        den = padded(ShapeOf(den_made));
      }
    }
  }
  if (ShapeOf(div.inputs(0)) != in || den != kept) {
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
