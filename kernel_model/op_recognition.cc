#include "kernel_model/op_recognition.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace kagent {
namespace {

using kagent::v1::OpRecord;
using kagent::v1::OpSignature;
using kagent::v1::TensorInfo;

// Ops that move, view or allocate without computing.
const std::set<std::string>& ViewOps() {
  static const auto* ops = new std::set<std::string>{
      "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "as_strided",
      "detach", "alias", "squeeze", "unsqueeze", "slice", "select", "split",
      "split_with_sizes", "chunk", "unbind", "narrow", "flatten", "unflatten", "clone",
      "contiguous", "_to_copy", "to", "copy_", "copy", "empty", "empty_like",
      "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
      "new_empty", "new_zeros", "new_ones", "new_full", "lift_fresh", "lift_fresh_copy",
      "scalar_tensor", "_local_scalar_dense", "fill_", "zero_", "expand_as",
      "_reshape_alias", "numpy_T", "mT", "adjoint", "view_copy", "alias_copy", "resize_",
      "set_", "arange"};
  return *ops;
}

const std::set<std::string>& TransposeOps() {
  static const auto* ops =
      new std::set<std::string>{"t", "transpose", "permute", "numpy_T", "mT", "adjoint"};
  return *ops;
}

// aten activation -> template op name.
const std::map<std::string, std::string>& Activations() {
  static const auto* m = new std::map<std::string, std::string>{
      {"relu", "relu"},           {"relu6", "relu6"},         {"leaky_relu", "leaky_relu"},
      {"gelu", "gelu"},           {"sigmoid", "sigmoid"},     {"tanh", "tanh"},
      {"softplus", "softplus"},   {"elu", "elu"},             {"selu", "selu"},
      {"celu", "celu"},           {"hardtanh", "hardtanh"},   {"hardsigmoid", "hardsigmoid"},
      {"hardswish", "hardswish"}, {"silu", "swish"},          {"mish", "mish"},
      {"exp", "exp"},             {"abs", "abs"},             {"neg", "neg"},
      {"softsign", "softsign"},   {"threshold", "threshold"}, {"log_sigmoid", "log_sigmoid"},
      {"log_sigmoid_forward", "log_sigmoid"}, {"square", "square"}};
  return *m;
}

const std::set<std::string>& Pointwise() {
  static const auto* ops = new std::set<std::string>{
      "add", "sub", "rsub", "mul", "div", "pow", "exp", "log", "sqrt", "rsqrt", "clamp",
      "clamp_min", "clamp_max", "where", "maximum", "minimum", "abs", "neg", "reciprocal",
      "erf", "sign", "gt", "lt", "ge", "le", "eq", "ne", "expm1", "log1p"};
  return *ops;
}

std::vector<int64_t> ShapeOf(const TensorInfo& t) { return {t.shape().begin(), t.shape().end()}; }

int64_t Numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

// True when the last two dims are laid out column-major (a transposed view).
// aten::elu's scalars are SELU's constants: alpha 1.6733, scale 1.0507, input_scale 1.
bool IsSelu(const std::map<std::string, double>& scalars) {
  auto near = [&](const char* name, double want) {
    auto it = scalars.find(name);
    return it != scalars.end() && std::abs(it->second - want) <= 1e-6 * std::abs(want);
  };
  auto input_scale = scalars.find("input_scale");
  return near("alpha", 1.6732632423543772) && near("scale", 1.0507009873554805) &&
         (input_scale == scalars.end() || std::abs(input_scale->second - 1.0) <= 1e-9);
}

bool IsColumnMajor(const TensorInfo& t) {
  int r = t.shape_size();
  if (r < 2 || t.strides_size() != r) return false;
  int64_t rows = t.shape(r - 2), cols = t.shape(r - 1);
  return rows > 1 && cols > 1 && t.strides(r - 2) == 1 && t.strides(r - 1) == rows;
}

struct Op {
  std::string name;
  const OpRecord* record;
};

class Recognizer {
 public:
  explicit Recognizer(const OpSignature& sig) : sig_(sig) {
    for (const OpRecord& r : sig.ops()) {
      std::string name = BaseOpName(r.op());
      all_.insert(name);
      if (ViewOps().count(name)) continue;
      compute_.push_back({name, &r});
      names_.insert(name);
    }
  }

  RecognizedOp Run() {
    if (!sig_.ops().empty()) {
      const OpRecord& last = sig_.ops(sig_.ops_size() - 1);
      if (last.outputs_size() > 0) out_.output_shape = ShapeOf(last.outputs(0));
    }
    if (Conv() || Matmul() || Loss() || Norm() || Softmax() || Pooling() || Scan() ||
        Reduction() || Elementwise()) {
      if (out_.input_shape.empty() && main_ != nullptr && main_->inputs_size() > 0) {
        out_.input_shape = ShapeOf(main_->inputs(0));
      }
      if (out_.dtype.empty() && main_ != nullptr && main_->inputs_size() > 0) {
        out_.dtype = main_->inputs(0).dtype();
      }
      out_.numel = Numel(out_.input_shape);
      CheckExtraOps();
      return out_;
    }
    std::vector<std::string> seen(names_.begin(), names_.end());
    out_.reason = absl::StrCat("no op class matched ops {", absl::StrJoin(seen, ", "), "}");
    return out_;
  }

 private:
  bool Has(const std::string& n) const { return names_.count(n) > 0; }
  bool HasAny(std::initializer_list<const char*> ns) const {
    for (const char* n : ns) {
      if (Has(n)) return true;
    }
    return false;
  }
  // True when every compute op named `op` that records scalar `arg` recorded `want` (an
  // op that does not record it passes: older signatures carry no scalars).
  bool RecordedIs(const char* op, const char* arg, double want) const {
    for (const Op& o : compute_) {
      if (o.name != op) continue;
      auto it = o.record->scalars().find(arg);
      if (it != o.record->scalars().end() && it->second != want) return false;
    }
    return true;
  }
  // True when some compute op named `op` recorded scalar `arg` within 1e-6 (relative)
  // of `want`.
  bool RecordsNear(const char* op, const char* arg, double want) const {
    for (const Op& o : compute_) {
      if (o.name != op) continue;
      auto it = o.record->scalars().find(arg);
      if (it != o.record->scalars().end() &&
          std::abs(it->second - want) <= 1e-6 * std::max(1.0, std::abs(want))) {
        return true;
      }
    }
    return false;
  }
  size_t Count(const char* name) const {
    return std::count_if(compute_.begin(), compute_.end(),
                         [&](const Op& o) { return o.name == name; });
  }
  // GELU's tanh approximation written out, as MinGPT (KernelBench level 1) does:
  // 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), x^3 by torch.pow. Its ops
  // and constants exactly; nothing else.
  bool WrittenOutGeluTanh() const {
    return compute_.size() == 8 && Count("tanh") == 1 && Count("pow") == 1 &&
           Count("mul") == 4 && Count("add") == 2 && RecordedIs("pow", "exponent", 3) &&
           RecordsAny("pow", "exponent") && RecordsNear("mul", "other", 0.044715) &&
           RecordsNear("mul", "other", 0.7978845608028654) &&
           RecordsNear("mul", "other", 0.5) && RecordsNear("add", "other", 1.0);
  }
  bool RecordsAny(const char* op, const char* arg) const {
    for (const Op& o : compute_) {
      if (o.name == op && o.record->scalars().count(arg)) return true;
    }
    return false;
  }
  const Op* Find(std::initializer_list<const char*> ns) const {
    for (const Op& op : compute_) {
      for (const char* n : ns) {
        if (op.name == n) return &op;
      }
    }
    return nullptr;
  }
  void Decide(const Op* op, std::string cls, std::string variant, std::string reason) {
    main_ = op->record;
    out_.op_class = std::move(cls);
    out_.variant = std::move(variant);
    out_.main_op = op->name;
    out_.reason = std::move(reason);
    out_.scalars = {op->record->scalars().begin(), op->record->scalars().end()};
    out_.strings = {op->record->strings().begin(), op->record->strings().end()};
    if (op->record->inputs_size() > 0) {
      out_.input_shape = ShapeOf(op->record->inputs(0));
      out_.dtype = op->record->inputs(0).dtype();
    }
  }
  // True when a transpose-like view produced a tensor of exactly this shape.
  bool TransposedByModel(const TensorInfo& t) const {
    if (!IsColumnMajor(t)) return false;
    for (const OpRecord& r : sig_.ops()) {
      if (!TransposeOps().count(BaseOpName(r.op()))) continue;
      for (const TensorInfo& o : r.outputs()) {
        if (ShapeOf(o) == ShapeOf(t) && IsColumnMajor(o)) return true;
      }
    }
    return false;
  }

  bool Conv() {
    const Op* op = Find({"convolution", "_convolution", "conv1d", "conv2d", "conv3d",
                         "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                         "cudnn_convolution", "mkldnn_convolution",
                         "convolution_overrideable", "cudnn_convolution_transpose"});
    if (op == nullptr) return false;
    const OpRecord& r = *op->record;
    int rank = r.inputs_size() > 0 ? r.inputs(0).shape_size() : 0;
    std::string variant = absl::StrCat("conv", std::max(1, rank - 2), "d");
    Decide(op, "conv", variant, absl::StrCat("aten::", op->name, " on a rank-", rank, " input"));
    if (r.inputs_size() >= 2 && r.outputs_size() >= 1 && rank >= 3) {
      std::vector<int64_t> x = ShapeOf(r.inputs(0)), w = ShapeOf(r.inputs(1)),
                           y = ShapeOf(r.outputs(0));
      // aten::convolution records `transposed` (and `groups`); without scalars (an older
      // harness) the op's name or a growing output tells.
      bool grows = y.size() == x.size();
      for (size_t i = 2; grows && i < x.size(); ++i) grows = y[i] > x[i];
      auto flag = out_.scalars.find("transposed");
      const bool transposed = flag != out_.scalars.end()
                                  ? flag->second != 0
                                  : op->name.find("transpose") != std::string::npos || grows;
      if (transposed) {
        out_.tags.insert("transposed");
        // The weight is (C_in, C_out / groups, *k): the groups come from the scalars.
        if (ScalarArg(out_, "groups", 1) > 1) out_.tags.insert("grouped");
      } else {
        bool depthwise = w.size() >= 2 && w[1] == 1 && w[0] % x[1] == 0 && x[1] > 1;
        if (depthwise) out_.tags.insert("depthwise");
        if (!depthwise && w.size() >= 2 && w[1] > 0 && x[1] / w[1] > 1) {
          out_.tags.insert("grouped");
        }
      }
      out_.batch = x[0];
      out_.weight_shape = w;
      out_.has_bias = r.inputs_size() >= 3 && r.inputs(2).shape_size() == 1;
      if (!out_.tags.count("transposed")) InferConvParams(x, w, y);
    }
    return true;
  }

  // The smallest stride, then padding (dilation 1), that maps every spatial dim of x to
  // y's under weight w: out = (in + 2p - (k - 1) - 1) / s + 1.
  void InferConvParams(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                       const std::vector<int64_t>& y) {
    if (x.size() < 3 || w.size() != x.size() || y.size() != x.size()) return;
    int64_t kmax = 1;
    for (size_t i = 2; i < w.size(); ++i) kmax = std::max(kmax, w[i]);
    for (int64_t s = 1; s <= 8; ++s) {
      for (int64_t p = 0; p <= kmax; ++p) {
        bool fits = true;
        for (size_t i = 2; fits && i < x.size(); ++i) {
          int64_t span = x[i] + 2 * p - (w[i] - 1) - 1;
          fits = span >= 0 && span / s + 1 == y[i];
        }
        if (fits) {
          out_.stride = s;
          out_.padding = p;
          out_.dilation = 1;
          out_.tags.insert("conv_params_inferred");
          return;
        }
      }
    }
  }

  // Sets triangle / diagonal when the model's only triangle op comes after the matmul `op`
  // and takes a tensor of the product's shape (torch.triu(A @ B)).
  void ProductTriangle(const Op& op) {
    const Op* tri = nullptr;
    int count = 0;
    bool after = false;
    for (const Op& o : compute_) {
      if (&o == &op) after = true;
      if (o.name != "tril" && o.name != "triu") continue;
      ++count;
      if (after) tri = &o;
    }
    if (count != 1 || tri == nullptr || tri->record->inputs_size() < 1 ||
        op.record->outputs_size() < 1 ||
        ShapeOf(tri->record->inputs(0)) != ShapeOf(op.record->outputs(0))) {
      return;
    }
    out_.triangle = tri->name == "triu" ? "upper" : "lower";
    auto d = tri->record->scalars().find("diagonal");
    out_.diagonal = d != tri->record->scalars().end() ? static_cast<int64_t>(d->second) : 0;
  }

  // Sets diag_side when the model's only diag op makes a matrix of a 1-D tensor and that
  // matrix is one operand of the matmul `op`: by tensor id, else by shape when only one
  // operand has the diagonal matrix's shape.
  void DiagSide(const Op& op) {
    const Op* diag = nullptr;
    int count = 0;
    for (const Op& o : compute_) {
      if (o.name != "diag" && o.name != "diag_embed" && o.name != "diagonal") continue;
      ++count;
      diag = &o;
    }
    const OpRecord& r = *op.record;
    if (count != 1 || diag->name == "diagonal" || diag->record->inputs_size() != 1 ||
        diag->record->outputs_size() != 1 || diag->record->inputs(0).shape_size() != 1 ||
        (op.name != "mm" && op.name != "matmul") || r.inputs_size() != 2 ||
        r.inputs(0).shape_size() != 2 || r.inputs(1).shape_size() != 2) {
      return;
    }
    const TensorInfo& made = diag->record->outputs(0);
    if (made.id() != 0) {
      if (r.inputs(0).id() == made.id()) out_.diag_side = "left";
      if (r.inputs(1).id() == made.id()) out_.diag_side = "right";
      return;
    }
    const bool left = ShapeOf(r.inputs(0)) == ShapeOf(made);
    const bool right = ShapeOf(r.inputs(1)) == ShapeOf(made);
    if (left != right) out_.diag_side = left ? "left" : "right";
  }

  bool Matmul() {
    const Op* op = Find({"mm", "bmm", "addmm", "baddbmm", "mv", "addmv", "matmul", "linear",
                         "dot", "_scaled_mm"});
    if (op == nullptr) return false;
    const OpRecord& r = *op->record;
    bool bias_first = op->name == "addmm" || op->name == "baddbmm" || op->name == "addmv";
    int ia = bias_first ? 1 : 0;
    if (r.inputs_size() < ia + 2) {
      Decide(op, "gemm", op->name, "matmul op with too few recorded inputs");
      return true;
    }
    const TensorInfo& a = r.inputs(ia);
    const TensorInfo& b = r.inputs(ia + 1);
    std::vector<int64_t> as = ShapeOf(a), bs = ShapeOf(b);
    Decide(op, "gemm", op->name, "");
    out_.input_shape = as;
    out_.dtype = a.dtype();
    out_.trans_a = TransposedByModel(a);
    out_.trans_b = TransposedByModel(b);
    if (op->name == "mv" || op->name == "addmv" || (bs.size() == 1 && as.size() == 2)) {
      out_.op_class = "matvec";
      out_.variant = "mv";
      out_.m = as[0];
      out_.k = as.size() > 1 ? as[1] : 0;
      out_.n = 1;
      out_.reason = absl::StrCat("aten::", op->name, " with a vector operand");
      return true;
    }
    if (as.size() >= 3 || bs.size() >= 3) {
      out_.variant = "bmm";
      out_.tags.insert("batched");
      out_.batch = as.size() >= 3 ? as[0] : bs[0];
    }
    out_.m = as.size() >= 2 ? as[as.size() - 2] : 1;
    out_.k = as.empty() ? 0 : as.back();
    out_.n = bs.empty() ? 0 : bs.back();
    if (op->name == "addmm") out_.variant = "addmm";
    if (out_.n == 1 && out_.batch == 1 && !out_.trans_b) {
      out_.op_class = "matvec";
      out_.variant = "mm_n1";
      out_.reason = absl::StrCat("aten::", op->name, " [", out_.m, "x", out_.k, "] @ [",
                                 out_.k, "x1]: one output column");
      return true;
    }
    if (HasAny({"diag", "diag_embed", "diagonal"})) {
      out_.variant = "diag";
      DiagSide(*op);
    }
    if (HasAny({"tril", "triu", "tril_", "triu_"})) {
      out_.variant = "triangular";
      ProductTriangle(*op);
    }
    int64_t lo = std::min(out_.m, out_.n), hi = std::max(out_.m, out_.n);
    if (lo > 0 && hi >= 16 * lo) out_.tags.insert("tall_skinny");
    if (out_.k > 0 && out_.k <= 64 && lo >= 256) out_.tags.insert("small_k");
    if (hi > 0 && out_.k >= 8 * hi) out_.tags.insert("large_k");
    if (out_.m % 16 || out_.n % 16 || out_.k % 16) out_.tags.insert("irregular");
    if (out_.trans_a) out_.tags.insert("transposed_a");
    if (out_.trans_b) out_.tags.insert("transposed_b");
    if (out_.m == 1) out_.tags.insert("vecmat");
    out_.reason = absl::StrCat("aten::", op->name, " M=", out_.m, " N=", out_.n, " K=", out_.k,
                               out_.batch > 1 ? absl::StrCat(" batch=", out_.batch) : "");
    return true;
  }

  bool ScalarOutput() const { return !out_.output_shape.empty() ? Numel(out_.output_shape) == 1 : true; }

  bool Loss() {
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
  void LossReduction() {
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

  bool Norm() {
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
  bool DividesAlongDims(const Op& red, std::set<std::string> ops, std::string* why) {
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
  void InstanceNormArgs(const OpRecord& r) {
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

  bool Softmax() {
    const Op* op = Find({"_softmax", "softmax", "_log_softmax", "log_softmax", "_safe_softmax"});
    if (op == nullptr) return false;
    bool log = op->name.find("log") != std::string::npos;
    Decide(op, "softmax", log ? "log_softmax" : "softmax", absl::StrCat("aten::", op->name));
    // The recorded dim (aten::_softmax's `dim`); signatures without scalars: the last dim.
    std::vector<int> dims = RecordedDims(*op->record, out_.input_shape.size());
    out_.dim = dims.size() == 1 ? dims[0] : static_cast<int>(out_.input_shape.size()) - 1;
    return true;
  }

  bool Pooling() {
    for (const Op& op : compute_) {
      const std::string& n = op.name;
      bool max = n.rfind("max_pool", 0) == 0 || n.rfind("adaptive_max_pool", 0) == 0;
      bool avg = n.rfind("avg_pool", 0) == 0 || n.rfind("adaptive_avg_pool", 0) == 0;
      if (!max && !avg) continue;
      size_t d = n.find("pool");
      std::string dims = d != std::string::npos && d + 4 < n.size() ? n.substr(d + 4, 2) : "";
      // nn.MaxPool1d / AvgPool1d run the 2-D op on x.unsqueeze(-2) and squeeze the result.
      std::vector<int64_t> in = op.record->inputs_size() > 0 ? ShapeOf(op.record->inputs(0))
                                                              : std::vector<int64_t>{};
      bool one_d = dims == "2d" && in.size() == 4 && in[2] == 1 && all_.count("unsqueeze") &&
                   out_.output_shape.size() == 3;
      if (one_d) dims = "1d";
      Decide(&op, "pooling", absl::StrCat(max ? "max" : "avg", dims), absl::StrCat("aten::", n));
      if (one_d) out_.input_shape = {in[0], in[1], in[3]};
      if (n.rfind("adaptive", 0) == 0) out_.tags.insert("adaptive");
      return true;
    }
    return false;
  }

  bool Scan() {
    const Op* op = Find({"cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"});
    if (op == nullptr) return false;
    std::string variant = op->name;
    if (Has("flip")) {
      variant = absl::StrCat("reverse_", op->name);
    } else if (HasAny({"cat", "constant_pad_nd", "pad"})) {
      variant = absl::StrCat("exclusive_", op->name);
    } else {
      for (const Op& o : compute_) {
        for (const TensorInfo& t : o.record->inputs()) {
          if (t.dtype() == "bool") variant = absl::StrCat("masked_", op->name);
        }
      }
    }
    Decide(op, "scan", variant, absl::StrCat("aten::", op->name));
    out_.dim = static_cast<int>(out_.input_shape.size()) - 1;
    // An exclusive scan built by concatenation keeps the model input's shape; KernelBench's
    // cat((0, x), dim)[:-1] slices the wrong dim and changes it (tag shape_changing).
    const OpRecord& first = sig_.ops(0);
    if (absl::StartsWith(variant, "exclusive_") && first.inputs_size() > 0 &&
        ShapeOf(first.inputs(0)) != out_.output_shape) {
      out_.tags.insert("shape_changing");
    }
    return true;
  }

  // The reduced dims the op was called with, from the recorded scalars (`dim`, or the
  // list `dim.0`, `dim.1`, ...), made non-negative and sorted; empty when none were
  // recorded (older harnesses, or no dim argument) or one is out of range.
  static std::vector<int> RecordedDims(const OpRecord& r, size_t rank) {
    std::vector<double> raw;
    auto one = r.scalars().find("dim");
    if (one != r.scalars().end()) {
      raw.push_back(one->second);
    } else {
      for (int j = 0;; ++j) {
        auto it = r.scalars().find(absl::StrCat("dim.", j));
        if (it == r.scalars().end()) break;
        raw.push_back(it->second);
      }
    }
    std::vector<int> dims;
    const int n = static_cast<int>(rank);
    for (double v : raw) {
      int d = static_cast<int>(v);
      if (d != v || n == 0) return {};
      if (d < 0) d += n;
      if (d < 0 || d >= n) return {};
      dims.push_back(d);
    }
    std::sort(dims.begin(), dims.end());
    dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
    return dims;
  }

  void InferDim(const OpRecord& r) {
    if (r.inputs_size() == 0 || r.outputs_size() == 0) return;
    std::vector<int64_t> in = ShapeOf(r.inputs(0)), out = ShapeOf(r.outputs(0));
    out_.input_shape = in;
    int rank = in.size();
    // The recorded dims decide when they are one contiguous range: the shapes alone are
    // ambiguous (min over dim 1 or dim 2 of 96 x 4096 x 4096 both give 96 x 4096).
    std::vector<int> dims = RecordedDims(r, in.size());
    if (!dims.empty() && dims.back() - dims.front() + 1 == static_cast<int>(dims.size())) {
      out_.keepdim = out.size() == in.size();
      out_.dim = dims.front();
      out_.num_dims = static_cast<int>(dims.size());
      if (!out_.keepdim && (out.empty() || Numel(out) == 1)) out_.tags.insert("full");
      return;
    }
    if (out.size() == in.size()) {
      out_.keepdim = true;
      int first = -1, count = 0;
      for (int i = 0; i < rank; ++i) {
        if (out[i] == 1 && in[i] != 1) {
          if (first < 0) first = i;
          ++count;
        }
      }
      out_.dim = first >= 0 ? first : rank - 1;
      out_.num_dims = std::max(1, count);
      return;
    }
    out_.keepdim = false;
    int removed = rank - static_cast<int>(out.size());
    int i = 0;
    while (i < static_cast<int>(out.size()) && out[i] == in[i]) ++i;
    out_.dim = i;
    out_.num_dims = std::max(1, removed);
    if (out.empty() || Numel(out) == 1) out_.tags.insert("full");
  }

  bool Reduction() {
    static const std::map<std::string, std::string> kOps = {
        {"sum", "sum"},       {"mean", "mean"},     {"amax", "max"},       {"amin", "min"},
        {"max", "max"},       {"min", "min"},       {"prod", "prod"},      {"argmax", "argmax"},
        {"argmin", "argmin"}, {"linalg_vector_norm", "norm"}, {"norm", "norm"},
        {"frobenius_norm", "norm"}, {"std", "std"}, {"var", "var"}, {"logsumexp", "logsumexp"},
        {"all", "all"},       {"any", "any"},       {"var_mean", "var"},   {"std_mean", "std"}};
    for (const Op& op : compute_) {
      auto it = kOps.find(op.name);
      if (it == kOps.end()) continue;
      // max/min with one tensor input and no dim reduce everything; with a second
      // input they are elementwise (maximum/minimum).
      if ((op.name == "max" || op.name == "min") && op.record->inputs_size() > 1) continue;
      Decide(&op, "reduction", it->second, absl::StrCat("aten::", op.name));
      InferDim(*op.record);
      return true;
    }
    return false;
  }

  bool Elementwise() {
    if (compute_.empty()) return false;
    // Composite activations first.
    if (Has("sigmoid") && Has("mul") && !Has("tanh")) {
      Decide(Find({"sigmoid"}), "elementwise", "swish", "x * sigmoid(x)");
      return true;
    }
    if (Has("abs") && Has("add") && Has("div")) {
      Decide(Find({"abs"}), "elementwise", "softsign", "x / (1 + |x|)");
      return true;
    }
    if (Has("tanh") && Has("softplus")) {
      Decide(Find({"softplus"}), "elementwise", "mish", "x * tanh(softplus(x))");
      return true;
    }
    if (WrittenOutGeluTanh()) {
      Decide(Find({"tanh"}), "elementwise", "gelu_tanh",
             "0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) written out");
      return true;
    }
    for (const Op& op : compute_) {
      auto it = Activations().find(op.name);
      if (it == Activations().end()) continue;
      std::string variant = it->second;
      if (variant == "hardtanh" || variant == "relu6") variant = op.name;
      Decide(&op, "elementwise", variant, absl::StrCat("aten::", op.name));
      // torch.selu and nn.SELU dispatch to aten::elu(x, alpha=1.6733, scale=1.0507).
      if (op.name == "elu" && IsSelu(out_.scalars)) {
        out_.variant = "selu";
        out_.reason = "aten::elu with SELU's alpha and scale";
      }
      if (op.name == "gelu") {
        auto approx = out_.strings.find("approximate");
        if (approx != out_.strings.end() && approx->second == "tanh") {
          out_.variant = "gelu_tanh";
          out_.reason = "aten::gelu with approximate='tanh'";
        }
      }
      return true;
    }
    // A tensor times one number (x * 3.5, or A * s with s a forward argument): aten::mul
    // with its scalar operand recorded as `other`.
    if (compute_.size() == 1 && compute_.front().name == "mul" &&
        compute_.front().record->inputs_size() == 1 &&
        compute_.front().record->scalars().count("other")) {
      Decide(&compute_.front(), "elementwise", "scale", "aten::mul by a scalar");
      return true;
    }
    bool all_pointwise = true;
    for (const Op& op : compute_) all_pointwise &= Pointwise().count(op.name) > 0;
    if (all_pointwise) {
      Decide(&compute_.front(), "elementwise", "fused",
             absl::StrCat(compute_.size(), " pointwise ops"));
      out_.tags.insert("no_template_op");
      return true;
    }
    return false;
  }

  // Groups of op names, each with how many ops of the group the recognized pattern runs.
  using Allowance = std::vector<std::pair<std::set<std::string>, int>>;

  // The compute ops the class's templates perform for the recognized variant, the main op
  // included; false when the class is not checked (no template for it, elementwise
  // "fused", vector_norm_dim: those are refused already). *whole: the allowance is the
  // whole model's (a decomposed loss), not the main op's plus helpers.
  bool Performed(Allowance* a, bool* whole) const {
    *whole = false;
    const std::string& c = out_.op_class;
    const std::string& v = out_.variant;
    const std::string& m = out_.main_op;
    auto main_and = [&](Allowance helpers) {
      helpers.insert(helpers.begin(), {{m}, 1});
      *a = std::move(helpers);
      return true;
    };
    if (c == "conv" || c == "matvec" || c == "pooling" || c == "softmax" || c == "reduction") {
      return main_and({});
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
      if (v == "l1" && m == "sum") return main_and({{{"abs"}, 1}, {{"div"}, 1}});
      if (v == "frobenius" || v == "l1" || v == "l2") return main_and({{{"div"}, 1}});
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
  static bool IsCounterUpdate(const OpRecord& r) {
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
  void CheckExtraOps() {
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

  const OpSignature& sig_;
  std::vector<Op> compute_;
  std::set<std::string> names_;
  std::set<std::string> all_;
  const OpRecord* main_ = nullptr;
  RecognizedOp out_;
};

}  // namespace

std::string BaseOpName(absl::string_view op) {
  absl::ConsumePrefix(&op, "aten::");
  size_t dot = op.find('.');
  if (dot != absl::string_view::npos) op = op.substr(0, dot);
  std::string name(op);
  // In-place variants ("relu_") classify like their functional form.
  if (name.size() > 1 && name.back() == '_' && name.front() != '_') name.pop_back();
  return name;
}

absl::StatusOr<RecognizedOp> RecognizeOp(const OpSignature& signature) {
  if (signature.ops().empty()) {
    return absl::InvalidArgumentError("op signature has no ops: nothing to recognize");
  }
  return Recognizer(signature).Run();
}

double ScalarArg(const RecognizedOp& op, const std::string& name, double fallback) {
  auto it = op.scalars.find(name);
  return it != op.scalars.end() ? it->second : fallback;
}

std::string DescribeOp(const RecognizedOp& op) {
  std::string s = op.op_class;
  if (!op.variant.empty()) absl::StrAppend(&s, "/", op.variant);
  if (op.op_class == "matvec") {
    absl::StrAppend(&s, " M=", op.m, " K=", op.k);
  } else if (op.op_class == "gemm") {
    absl::StrAppend(&s, " M=", op.m, " N=", op.n, " K=", op.k);
    if (op.batch > 1) absl::StrAppend(&s, " batch=", op.batch);
  } else if (!op.input_shape.empty()) {
    absl::StrAppend(&s, " shape=[", absl::StrJoin(op.input_shape, ","), "]");
    if (op.op_class == "reduction" || op.op_class == "softmax" || op.op_class == "norm" ||
        op.op_class == "scan") {
      absl::StrAppend(&s, " dim=", op.dim);
    }
    if (op.op_class == "conv" && op.weight_shape.size() >= 3) {
      absl::StrAppend(&s, " weight=[", absl::StrJoin(op.weight_shape, ","), "] stride=", op.stride,
                      " padding=", op.padding, op.has_bias ? " bias" : "");
    }
    if (op.op_class == "loss" && !op.reduction.empty()) {
      absl::StrAppend(&s, " reduction=", op.reduction);
    }
    if (op.op_class == "elementwise" && !op.scalars.empty()) {
      std::vector<std::string> kv;
      for (const auto& [k, v] : op.scalars) kv.push_back(absl::StrFormat("%s=%g", k, v));
      absl::StrAppend(&s, " {", absl::StrJoin(kv, ", "), "}");
    }
  }
  if (!op.dtype.empty()) absl::StrAppend(&s, " ", op.dtype);
  if (!op.tags.empty()) {
    absl::StrAppend(&s, " [", absl::StrJoin(op.tags, ","), "]");
  }
  return s;
}

}  // namespace kagent
