// Op recognition: convolutions and matrix products (dense, batched, transposed, triangular, diagonal).
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

bool Recognizer::Conv() {
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
      // The weight is (C_in, C_out / groups, *k): the groups come from the scalars
      // (aten::convolution and aten::conv_transpose*d record them), else from the output's
      // channels.
      const double shape_groups =
          y.size() >= 2 && w.size() >= 2 && w[1] > 0 ? static_cast<double>(y[1] / w[1]) : 1.0;
      if (ScalarArg(out_, "groups", shape_groups) > 1) out_.tags.insert("grouped");
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
    // A one-channel first conv (w[1] = 1, groups 1) is depthwise too, untagged.
    if (!transposed && variant == "conv2d" && w.size() == 4 && w[1] == 1) {
      DepthwiseSeparable(*op);
    }
  }
  return true;
}

void Recognizer::DepthwiseSeparable(const Op& first) {
  const Op* second = nullptr;
  int convs = 0;
  for (const Op& o : compute_) {
    if (o.name != first.name && o.name != "convolution" && o.name != "_convolution" &&
        o.name != "conv2d") {
      continue;
    }
    ++convs;
    if (&o != &first) second = &o;
  }
  if (convs != 2 || second == nullptr || second->record->inputs_size() < 2 ||
      second->record->outputs_size() < 1 || first.record->outputs_size() < 1) {
    return;
  }
  const OpRecord& a = *first.record;
  const OpRecord& b = *second->record;
  const TensorInfo& mid = a.outputs(0);
  const std::vector<int64_t> y = ShapeOf(mid), x2 = ShapeOf(b.inputs(0)),
                             w2 = ShapeOf(b.inputs(1)), y2 = ShapeOf(b.outputs(0));
  const bool same_tensor = mid.id() != 0 && b.inputs(0).id() != 0 ? mid.id() == b.inputs(0).id()
                                                                   : x2 == y;
  if (!same_tensor || x2 != y || y.size() != 4 || w2.size() != 4 || w2[1] != y[1] ||
      w2[2] != 1 || w2[3] != 1 || y2.size() != 4 || y2[0] != y[0] || y2[1] != w2[0] ||
      y2[2] != y[2] || y2[3] != y[3]) {
    return;
  }
  // The recorded scalars, where there are any, must say a plain 1x1 conv.
  for (const auto& [name, v] : b.scalars()) {
    const bool unit = absl::StartsWith(name, "stride.") || absl::StartsWith(name, "dilation.") ||
                      name == "groups";
    const bool zero = absl::StartsWith(name, "padding.") ||
                      absl::StartsWith(name, "output_padding.") || name == "transposed";
    if ((unit && v != 1) || (zero && v != 0)) return;
  }
  out_.tags.insert("depthwise_separable");
  out_.pointwise_weight_shape = w2;
  out_.pointwise_has_bias = b.inputs_size() >= 3 && b.inputs(2).shape_size() == 1;
  out_.reason = absl::StrCat(out_.reason, ", then a pointwise 1x1 aten::", second->name,
                             " on its output (depthwise-separable)");
}

// The smallest stride, then padding (dilation 1), that maps every spatial dim of x to
// y's under weight w: out = (in + 2p - (k - 1) - 1) / s + 1.
void Recognizer::InferConvParams(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
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
void Recognizer::ProductTriangle(const Op& op) {
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
void Recognizer::DiagSide(const Op& op) {
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

bool Recognizer::Matmul() {
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
  // One output column is a matvec, unless the product is a diagonal or triangular one
  // (gemm variants diag, triangular: a matvec template would leave the diag / triu out).
  if (out_.n == 1 && out_.batch == 1 && !out_.trans_b &&
      !HasAny({"diag", "diag_embed", "diagonal", "tril", "triu"})) {
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

}  // namespace kagent::op_recognition_internal

namespace kagent {

std::string ConvClass(const RecognizedOp& op) {
  if (op.op_class != "conv" || op.variant.rfind("conv", 0) != 0) return "";
  std::string c = op.variant;
  if (op.tags.count("transposed")) {
    absl::StrAppend(&c, " transposed", op.tags.count("grouped") ? " grouped" : "");
  } else if (op.tags.count("depthwise_separable")) {
    absl::StrAppend(&c, " depthwise-separable");
  } else if (op.tags.count("depthwise")) {
    absl::StrAppend(&c, " depthwise");
  } else if (op.tags.count("grouped")) {
    absl::StrAppend(&c, " grouped");
  } else if (op.weight_shape.size() > 2 &&
             std::all_of(op.weight_shape.begin() + 2, op.weight_shape.end(),
                         [](int64_t k) { return k == 1; })) {
    absl::StrAppend(&c, " pointwise");
  } else if (op.input_shape.size() > 1 && op.input_shape[1] < 4) {
    absl::StrAppend(&c, " stem");
  }
  return c;
}

}  // namespace kagent
