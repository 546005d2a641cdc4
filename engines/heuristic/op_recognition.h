// Op recognition: from the harness's op signature (the aten ops the reference executes,
// with shapes, strides and dtypes) to an op class and its parameters.
//
//   KAGENT_ASSIGN_OR_RETURN(RecognizedOp op, RecognizeOp(signature));
//   if (op.op_class == "matvec") ... op.m, op.k, op.dtype
//
// Classes (op_class / variant):
//   matvec      (variant "mv", "mm_n1")                      m, k, trans_a
//   gemm        ("mm", "bmm", "addmm", "linear", "diag", "triangular")
//               + shape tags in `tags`: batched, tall_skinny, small_k, large_k, irregular,
//               transposed_a, transposed_b                     m, n, k, batch, trans_a/b
//   elementwise (variant = activation name: relu, leaky_relu, gelu, sigmoid, tanh,
//               softplus, softsign, elu, selu, hardtanh, hardsigmoid, swish, ...)
//   reduction   (variant sum, mean, max, min, prod, argmax, argmin, norm)   dim, keepdim
//   softmax     (variant softmax, log_softmax)                              dim
//   norm        (variant layer, rms, batch, group, instance, frobenius)     dim, num_dims
//   scan        (variant cumsum, cumprod, reverse_cumsum, exclusive_cumsum, masked_cumsum)
//   loss        (variant mse, cross_entropy, hinge, kl_div, smooth_l1, huber,
//               cosine_similarity, triplet_margin)
//   pooling     (variant max1d/2d/3d, avg1d/2d/3d)
//   conv        (variant conv1d/2d/3d, + tags depthwise, transposed)
//   unknown     (nothing matched; `reason` lists the ops seen)
//
// The signature carries no scalar arguments, so dims are inferred from shapes (a softmax
// dim defaults to the last one); templates read the constructor's arguments at run time
// where KernelBench passes them (dim=, eps=, negative_slope=, ...).
//
// Pure functions; thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_OP_RECOGNITION_H_
#define KAGENT_ENGINES_HEURISTIC_OP_RECOGNITION_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

struct RecognizedOp {
  std::string op_class = "unknown";
  std::string variant;
  std::set<std::string> tags;
  std::string dtype;          // dtype of the main op's first input ("float32", "bfloat16")
  std::string main_op;        // the aten op that decided the class, without "aten::"
  std::string reason;         // one line: how the class was decided

  // GEMM / matvec.
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false;       // the reference transposes its first operand (A.T @ ...)
  bool trans_b = false;

  // Reductions, softmax, norms, scans: the reduced / normalized dim and how many
  // consecutive dims (norms over several trailing dims).
  int dim = -1;
  int num_dims = 1;
  bool keepdim = false;
  bool has_affine = false;    // norm with weight (and bias) tensors

  std::vector<int64_t> input_shape;   // the main op's first input
  std::vector<int64_t> output_shape;  // the forward's last output
  int64_t numel = 0;                  // of input_shape
};

// Strips "aten::" and any ".overload" suffix: "aten::mm.default" -> "mm".
std::string BaseOpName(absl::string_view op);

// Classifies the signature. INVALID_ARGUMENT when it has no ops. Never fails on unknown
// ops: those give op_class "unknown".
absl::StatusOr<RecognizedOp> RecognizeOp(const kagent::v1::OpSignature& signature);

// One line for logs and expected-effect text: "matvec M=2048 K=1048576 bfloat16".
std::string DescribeOp(const RecognizedOp& op);

}  // namespace kagent

#endif  // KAGENT_ENGINES_HEURISTIC_OP_RECOGNITION_H_
