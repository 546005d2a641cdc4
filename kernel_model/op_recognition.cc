#include "kernel_model/op_recognition.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "kernel_model/op_recognition_internal.h"

namespace kagent {
namespace op_recognition_internal {

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

// True when the last two dims are laid out column-major (a transposed view).
bool IsColumnMajor(const TensorInfo& t) {
  int r = t.shape_size();
  if (r < 2 || t.strides_size() != r) return false;
  int64_t rows = t.shape(r - 2), cols = t.shape(r - 1);
  return rows > 1 && cols > 1 && t.strides(r - 2) == 1 && t.strides(r - 1) == rows;
}

Recognizer::Recognizer(const OpSignature& sig) : sig_(sig) {
  for (const OpRecord& r : sig.ops()) {
    std::string name = BaseOpName(r.op());
    all_.insert(name);
    if (ViewOps().count(name)) continue;
    compute_.push_back({name, &r});
    names_.insert(name);
  }
}

RecognizedOp Recognizer::Run() {
  if (!sig_.ops().empty()) {
    const OpRecord& last = sig_.ops(sig_.ops_size() - 1);
    if (last.outputs_size() > 0) out_.output_shape = ShapeOf(last.outputs(0));
  }
  if (Conv() || Attention() || Matmul() || Loss() || Norm() || Softmax() || Pooling() || Scan() ||
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

}  // namespace op_recognition_internal

using kagent::v1::OpSignature;
using op_recognition_internal::Recognizer;

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
  } else if (op.op_class == "attention") {
    absl::StrAppend(&s, " batch=", op.batch, " Lq=", op.m, " Lk=", op.n, " D=", op.k,
                    " Dv=", op.head_dim_v, op.causal ? " causal" : "");
    if (op.scale != 0) absl::StrAppend(&s, absl::StrFormat(" scale=%g", op.scale));
  } else if (!op.input_shape.empty()) {
    absl::StrAppend(&s, " shape=[", absl::StrJoin(op.input_shape, ","), "]");
    if (op.op_class == "reduction" || op.op_class == "softmax" || op.op_class == "norm" ||
        op.op_class == "scan") {
      absl::StrAppend(&s, " dim=", op.dim);
    }
    if (op.op_class == "conv" && op.weight_shape.size() >= 3) {
      absl::StrAppend(&s, " weight=[", absl::StrJoin(op.weight_shape, ","), "] stride=", op.stride,
                      " padding=", op.padding, op.has_bias ? " bias" : "");
      if (!op.pointwise_weight_shape.empty()) {
        absl::StrAppend(&s, " then pointwise weight=[",
                        absl::StrJoin(op.pointwise_weight_shape, ","), "]",
                        op.pointwise_has_bias ? " bias" : "");
      }
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
