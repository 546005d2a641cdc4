// Helpers for tests: build OpSignatures compactly.
#ifndef KAGENT_ENGINES_HEURISTIC_TEST_SIGNATURES_H_
#define KAGENT_ENGINES_HEURISTIC_TEST_SIGNATURES_H_

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kagent/v1/common.pb.h"

namespace kagent::testing {

struct T {
  std::vector<int64_t> shape;
  std::string dtype = "float32";
  std::vector<int64_t> strides = {};  // empty: contiguous
};

inline void Fill(const T& t, kagent::v1::TensorInfo* info) {
  for (int64_t s : t.shape) info->add_shape(s);
  std::vector<int64_t> strides = t.strides;
  if (strides.empty()) {
    strides.assign(t.shape.size(), 1);
    for (int i = static_cast<int>(t.shape.size()) - 2; i >= 0; --i) {
      strides[i] = strides[i + 1] * t.shape[i + 1];
    }
  }
  for (int64_t s : strides) info->add_strides(s);
  info->set_dtype(t.dtype);
}

// `scalars`: the op's recorded numeric arguments (OpRecord.scalars), e.g. {{"alpha", 1.0}}.
inline void AddOp(kagent::v1::OpSignature* sig, const std::string& op, std::vector<T> in,
                  std::vector<T> out, std::map<std::string, double> scalars = {}) {
  auto* r = sig->add_ops();
  r->set_op(op);
  for (const T& t : in) Fill(t, r->add_inputs());
  for (const T& t : out) Fill(t, r->add_outputs());
  for (const auto& [k, v] : scalars) (*r->mutable_scalars())[k] = v;
}

// C = A @ x with A [m, k] and x [k, 1].
inline kagent::v1::OpSignature MatvecSignature(int64_t m, int64_t k,
                                               const std::string& dtype = "bfloat16") {
  kagent::v1::OpSignature sig;
  AddOp(&sig, "aten::mm", {{{m, k}, dtype}, {{k, 1}, dtype}}, {{{m, 1}, dtype}});
  return sig;
}

// softmax(Q @ K^T / divisor) @ V written out over (bh, l, d) queries, (bh, s, d) keys and
// (bh, s, dv) values, as torch.matmul(q, k.transpose(-2, -1)) / divisor, softmax(-1),
// matmul reach the dispatcher: K^T is a column-major view.
inline kagent::v1::OpSignature WrittenOutAttentionSignature(int64_t bh, int64_t l, int64_t s,
                                                            int64_t d, int64_t dv,
                                                            double divisor,
                                                            const std::string& dtype) {
  kagent::v1::OpSignature sig;
  AddOp(&sig, "aten::transpose", {{{bh, s, d}, dtype}}, {{{bh, d, s}, dtype, {s * d, 1, d}}},
        {{"dim0", -2}, {"dim1", -1}});
  AddOp(&sig, "aten::bmm", {{{bh, l, d}, dtype}, {{bh, d, s}, dtype, {s * d, 1, d}}},
        {{{bh, l, s}, dtype}});
  AddOp(&sig, "aten::div", {{{bh, l, s}, dtype}}, {{{bh, l, s}, dtype}}, {{"other", divisor}});
  AddOp(&sig, "aten::_softmax", {{{bh, l, s}, dtype}}, {{{bh, l, s}, dtype}},
        {{"dim", -1}, {"half_to_float", 0}});
  AddOp(&sig, "aten::bmm", {{{bh, l, s}, dtype}, {{bh, s, dv}, dtype}}, {{{bh, l, dv}, dtype}});
  return sig;
}

// SDPA's math path (torch.nn.attention.sdpa_kernel(SDPBackend.MATH)) over (b, h) heads:
// Q and K^T each times sqrt(scale), bmm, the causal mask where(tril(ones(l, s)), 0, -inf)
// added when `causal`, _safe_softmax, bmm.
inline kagent::v1::OpSignature MathPathAttentionSignature(int64_t b, int64_t h, int64_t l,
                                                          int64_t s, int64_t d, double scale,
                                                          bool causal,
                                                          const std::string& dtype) {
  kagent::v1::OpSignature sig;
  const double root = std::sqrt(scale);
  const int64_t bh = b * h;
  AddOp(&sig, "aten::mul", {{{b, h, l, d}, dtype}}, {{{b, h, l, d}, dtype}}, {{"other", root}});
  if (causal) {
    AddOp(&sig, "aten::ones", {}, {{{l, s}, "bool"}});
    AddOp(&sig, "aten::tril", {{{l, s}, "bool"}}, {{{l, s}, "bool"}}, {{"diagonal", 0}});
    AddOp(&sig, "aten::scalar_tensor", {}, {{{}, dtype}});
    AddOp(&sig, "aten::where", {{{l, s}, "bool"}, {{}, dtype}, {{}, dtype}}, {{{l, s}, dtype}});
  }
  AddOp(&sig, "aten::transpose", {{{b, h, s, d}, dtype}},
        {{{b, h, d, s}, dtype, {h * s * d, s * d, 1, d}}}, {{"dim0", -2}, {"dim1", -1}});
  AddOp(&sig, "aten::mul", {{{b, h, d, s}, dtype, {h * s * d, s * d, 1, d}}},
        {{{b, h, d, s}, dtype}}, {{"other", root}});
  AddOp(&sig, "aten::view", {{{b, h, l, d}, dtype}}, {{{bh, l, d}, dtype}});
  AddOp(&sig, "aten::view", {{{b, h, d, s}, dtype}}, {{{bh, d, s}, dtype}});
  AddOp(&sig, "aten::bmm", {{{bh, l, d}, dtype}, {{bh, d, s}, dtype}}, {{{bh, l, s}, dtype}});
  AddOp(&sig, "aten::_unsafe_view", {{{bh, l, s}, dtype}}, {{{b, h, l, s}, dtype}});
  if (causal) {
    AddOp(&sig, "aten::add", {{{b, h, l, s}, dtype}, {{l, s}, dtype}}, {{{b, h, l, s}, dtype}},
          {{"alpha", 1}});
  }
  AddOp(&sig, "aten::_safe_softmax", {{{b, h, l, s}, dtype}}, {{{b, h, l, s}, dtype}},
        {{"dim", -1}});
  AddOp(&sig, "aten::view", {{{b, h, l, s}, dtype}}, {{{bh, l, s}, dtype}});
  AddOp(&sig, "aten::bmm", {{{bh, l, s}, dtype}, {{bh, s, d}, dtype}}, {{{bh, l, d}, dtype}});
  AddOp(&sig, "aten::_unsafe_view", {{{bh, l, d}, dtype}}, {{{b, h, l, d}, dtype}});
  return sig;
}

}  // namespace kagent::testing

#endif  // KAGENT_ENGINES_HEURISTIC_TEST_SIGNATURES_H_
