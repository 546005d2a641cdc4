// Helpers for tests: build OpSignatures compactly.
#ifndef KAGENT_ENGINES_HEURISTIC_TEST_SIGNATURES_H_
#define KAGENT_ENGINES_HEURISTIC_TEST_SIGNATURES_H_

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

}  // namespace kagent::testing

#endif  // KAGENT_ENGINES_HEURISTIC_TEST_SIGNATURES_H_
