// Op recognition: pooling, scans, reductions along dims and elementwise chains.
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

bool Recognizer::Pooling() {
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

bool Recognizer::Scan() {
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
std::vector<int> Recognizer::RecordedDims(const OpRecord& r, size_t rank) {
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

void Recognizer::InferDim(const OpRecord& r) {
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

bool Recognizer::Reduction() {
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

bool Recognizer::Elementwise() {
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
  if (BroadcastBinary()) return true;
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

std::vector<int64_t> Recognizer::ShapeOfId(int64_t id) const {
  for (const OpRecord& r : sig_.ops()) {
    for (const auto* ts : {&r.inputs(), &r.outputs()}) {
      for (const TensorInfo& t : *ts) {
        if (t.id() == id) return ShapeOf(t);
      }
    }
  }
  return {};
}

bool Recognizer::BroadcastBinary() {
  static const std::set<std::string> kOps = {"mul", "add", "sub", "div", "maximum", "minimum"};
  static const std::set<std::string> kFloat = {"float32", "float16", "bfloat16"};
  if (compute_.size() != 1 || !kOps.count(compute_[0].name)) return false;
  const Op& op = compute_[0];
  const OpRecord& r = *op.record;
  if (r.inputs_size() != 2 || r.outputs_size() == 0 || !kFloat.count(r.outputs(0).dtype())) {
    return false;
  }
  auto alpha = r.scalars().find("alpha");
  if (alpha != r.scalars().end() && alpha->second != 1) return false;
  std::vector<int64_t> roots[2];
  int64_t masks[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const TensorInfo& t = r.inputs(i);
    const std::vector<int64_t> s = ShapeOf(t);
    // Without tensor ids a view cannot be traced to its source: only the inputs as given.
    if (t.id() == 0 && all_.size() > names_.size()) return false;
    // The views between the source and the operand may only reshape (unsqueeze, view,
    // reshape; with the shape check below: insert size-1 dims), never transpose, slice,
    // expand or cast.
    int64_t id = t.id();
    for (int hops = 0; id != 0 && hops < 64; ++hops) {
      const OpRecord* maker = ViewMaker(id);
      if (maker == nullptr) break;
      static const std::set<std::string> kReshapes = {
          "unsqueeze", "view", "reshape", "_unsafe_view", "_reshape_alias", "alias", "detach"};
      if (!kReshapes.count(BaseOpName(maker->op()))) return false;
      id = maker->inputs(0).id();
    }
    roots[i] = t.id() != 0 ? ShapeOfId(id) : s;
    // The source's dims in order, size-1 dims inserted between them (greedy from the left).
    size_t k = 0;
    for (size_t j = 0; j < s.size(); ++j) {
      if (k < roots[i].size() && s[j] == roots[i][k]) {
        ++k;
      } else if (s[j] == 1 && j < 63) {
        masks[i] |= int64_t{1} << j;
      } else {
        return false;
      }
    }
    if (k != roots[i].size()) return false;
  }
  const std::vector<int64_t> a = ShapeOf(r.inputs(0)), b = ShapeOf(r.inputs(1));
  const std::vector<int64_t> y = ShapeOf(r.outputs(0));
  // A matrix scaled by a vector: (R, 1) * (R, C) scales rows (diag(d) @ B), (C,) or (1, C)
  // times (R, C) columns (B @ diag(d)).
  if (op.name == "mul" && y.size() == 2 && roots[0].size() + roots[1].size() == 3) {
    const int v = roots[0].size() == 1 ? 0 : 1, m = 1 - v;
    const std::vector<int64_t>& vs = v == 0 ? a : b;
    const std::vector<int64_t>& ms = m == 0 ? a : b;
    if (ms == y && masks[m] == 0) {
      const bool left = vs == std::vector<int64_t>{y[0], 1};
      const bool right = vs == std::vector<int64_t>{y[1]} || vs == std::vector<int64_t>{1, y[1]};
      if (left || right) {
        Decide(&op, "gemm", "diag", absl::StrCat("a ", left ? "row" : "column",
                                                 " scale written as a broadcast multiply"));
        out_.diag_side = left ? "left" : "right";
        out_.m = y[0];
        out_.n = y[1];
        out_.k = left ? y[0] : y[1];
        out_.input_shape = y;
        out_.tags.insert("broadcast");
        return true;
      }
    }
  }
  Decide(&op, "elementwise", op.name, absl::StrCat("aten::", op.name, " of two tensors"));
  out_.input_shape = y;
  for (int i = 0; i < 2; ++i) {
    out_.operand_rank[i] = static_cast<int>(roots[i].size());
    out_.operand_unsqueeze[i] = masks[i];
  }
  if (a != b) out_.tags.insert("broadcast");
  return true;
}

}  // namespace kagent::op_recognition_internal
