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
//               softplus, softsign, elu, selu, hardtanh, hardsigmoid, swish, ...;
//               torch.selu runs as aten::elu with SELU's alpha and scale: variant selu;
//               or a binary op of two tensors that broadcast: mul, add, sub, div,
//               maximum, minimum, tag broadcast when their shapes differ; a matrix
//               scaled by a vector along rows or columns is gemm/diag, tag broadcast)
//               scalars (negative_slope, alpha, scale, min_val, beta, threshold, ...);
//               binary: operand_rank, operand_unsqueeze
//   reduction   (variant sum, mean, max, min, prod, argmax, argmin, norm)   dim, keepdim
//   softmax     (variant softmax, log_softmax)                              dim
//   norm        (variant layer, rms, batch, group, instance, frobenius, l1, l2, max:
//               x / ||x||_1,2,inf along contiguous dims, through a norm op or written
//               out with abs / pow / sum / mean / amax / sqrt (tag mean_stat: the mean
//               of |x| instead of the sum), eps as eps_mode says; vector_norm_dim:
//               another x / norm(x), no template)                         dim, num_dims
//               has_affine; batch (native_batch_norm, cudnn_batch_norm, ...) and group
//               with only one of weight/bias: tag partial_affine; batch with an
//               nn.BatchNorm's num_batches_tracked update (training mode): tag
//               num_batches_tracked
//   scan        (variant cumsum, cumprod, reverse_cumsum, exclusive_cumsum, masked_cumsum)
//   loss        (variant mse, cross_entropy, hinge, hinge_embedding, kl_div, smooth_l1,
//               huber, cosine_similarity, triplet_margin, ...)         reduction
//   pooling     (variant max1d/2d/3d, avg1d/2d/3d; 1-D pooling runs as a 2-D aten op on
//               an unsqueezed input and is recognized as 1-d; tag adaptive)
//   conv        (variant conv1d/2d/3d, + tags depthwise, grouped, transposed,
//               depthwise_separable: a depthwise 2-D conv whose output only a pointwise
//               1x1 conv takes)
//               weight_shape, has_bias, stride, padding, dilation; pointwise_weight_shape,
//               pointwise_has_bias
//   attention   (variant sdpa: F.scaled_dot_product_attention as one aten op, the CUDA
//               _scaled_dot_product_efficient/flash/cudnn_attention or the CPU
//               _scaled_dot_product_flash_attention_for_cpu; written_out: softmax(Q @ K^T
//               * scale) @ V as bmm/mm, mul/div by numbers, softmax, bmm/mm, which is also
//               SDPA's math path, causal mask included)     batch, m, n, k, head_dim_v,
//               causal, scale; tags masked (an attention mask tensor), dropout
//               (dropout_p > 0), grouped_kv (K/V leading dims that do not broadcast to
//               Q's), shared_inputs (Q, K, V views of fewer than three tensors, by the
//               recorded tensor ids), k_given_transposed (written_out: the model's K input
//               is K^T)
//   unknown     (nothing matched; `reason` lists the ops seen)
//
// Unexpressed compute: the templates of a class perform its main op and the helper ops of
// the recognized pattern (the division of an L1 norm, the flips of a reverse cumsum, the
// x * mask of a masked one, a loss's own arithmetic) and nothing else. A model that also
// computes other ops (torch.sum(torch.abs(x), dim=1), a conv followed by relu, a matmul
// with an epilogue) keeps its class and variant, gets tag "extra_ops", the surplus ops in
// `extra_ops` and a sentence in `extra_ops_why`: SelectTemplate answers UNIMPLEMENTED and
// TemplateParamsFor FAILED_PRECONDITION rather than render the main op alone. Views,
// copies and allocations never count; neither do integer counter updates of one element
// (BatchNorm's num_batches_tracked += 1). Elementwise "fused" (pointwise ops only) and
// classes without a template are not checked.
//
// The signature records each op's numeric scalar arguments (OpRecord.scalars; absent in
// signatures from older harnesses): `scalars` holds the main op's. Activations use them
// (SELU vs ELU, slopes, bounds); dims are still inferred from shapes (a softmax dim
// defaults to the last one), and templates read the constructor's arguments at run time
// where KernelBench passes them (dim=, eps=, negative_slope=, ...).
//
// Pure functions; thread-safe.
#ifndef KAGENT_KERNEL_MODEL_OP_RECOGNITION_H_
#define KAGENT_KERNEL_MODEL_OP_RECOGNITION_H_

#include <cstdint>
#include <map>
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
  // The main op's numeric non-tensor arguments by schema name (OpRecord.scalars), e.g.
  // {negative_slope: 0.2}; empty when the signature has none.
  std::map<std::string, double> scalars;
  // Its string arguments by schema name (OpRecord.strings), e.g. {approximate: "tanh"}
  // for aten::gelu: nn.GELU(approximate="tanh") is recognized as variant gelu_tanh.
  std::map<std::string, std::string> strings;

  // GEMM / matvec.
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false;       // the reference transposes its first operand (A.T @ ...)
  bool trans_b = false;
  // GEMM variant "triangular" whose triangle op takes the product: the triangle kept
  // ("upper" for torch.triu, "lower" for tril) and its `diagonal` offset. Empty when the
  // triangle op takes something else (an operand).
  std::string triangle;
  int64_t diagonal = 0;
  // GEMM variant "diag": the side of the product the diagonal matrix of a 1-D tensor
  // (torch.diag) is on, "left" (diag(d) @ B) or "right" (B @ diag(d)); empty when the
  // signature does not tell (no tensor ids and square operands) or it is another diag.
  std::string diag_side;

  // Elementwise binary ops: per operand (the op's two tensor inputs, in order), the rank
  // of the tensor it is a view of (a forward input) and the bit mask of the size-1 dims
  // the views inserted (A.unsqueeze(1): rank 1, mask 0b10).
  int operand_rank[2] = {0, 0};
  int64_t operand_unsqueeze[2] = {0, 0};

  // Reductions, softmax, norms, scans: the reduced / normalized dim and how many
  // consecutive dims (norms over several trailing dims).
  int dim = -1;
  int num_dims = 1;
  bool keepdim = false;
  bool has_affine = false;    // norm with weight (and bias) tensors
  // Norms l1 / l2 / max: where the reference's eps enters the denominator: "" (none),
  // "add" (norm + eps), "add_inside" (sqrt(sum + eps), l2), "clamp" (max(norm, eps):
  // clamp_min, F.normalize); and its value.
  std::string eps_mode;
  double eps = 0;

  // Losses: how the elementwise loss is reduced ("mean", "sum", "batchmean"), from the
  // recorded ops where they show it (sum then div is batchmean), else "mean" (torch's
  // default). Tag "log_input": the reference takes log() of its first input itself.
  std::string reduction;

  // Convolutions: the weight's shape, whether a bias tensor is passed, and stride, padding
  // and dilation inferred from the input, weight and output shapes (the recorded scalars
  // are not used here yet; the smallest stride, then padding, with dilation 1 that
  // reproduces the output's spatial dims; tag "conv_params_inferred" when one was found).
  std::vector<int64_t> weight_shape;
  bool has_bias = false;
  int64_t stride = 1, padding = 0, dilation = 1;
  // Tag depthwise_separable (two convolutions: the depthwise one above, then a 1x1 conv
  // with stride 1, padding 0, dilation 1 and groups 1 taking its output): the 1x1 conv's
  // weight shape (C_out, C_in * multiplier, 1, 1) and whether it has a bias. Empty
  // otherwise.
  std::vector<int64_t> pointwise_weight_shape;
  bool pointwise_has_bias = false;

  // Attention: batch = the product of Q's leading dims (batch x heads), m = query length,
  // n = key length, k = the head dim of Q and K, head_dim_v = V's. causal: is_causal
  // (torch's top-left triangle, key j kept for query i when j <= i). scale: the factor of
  // Q @ K^T; 0 when SDPA was called without one (its default 1 / sqrt(k)); written_out
  // always has one (1 when the model does not scale).
  int64_t head_dim_v = 0;
  bool causal = false;
  double scale = 0;

  // Compute ops the recognized class's templates do not perform ("aten::abs", in the
  // order the model runs them; tag "extra_ops"), and one sentence saying which run before
  // and which after the main op: "the model also computes aten::abs before aten::sum".
  std::vector<std::string> extra_ops;
  std::string extra_ops_why;

  std::vector<int64_t> input_shape;   // the main op's first input
  std::vector<int64_t> output_shape;  // the forward's last output
  int64_t numel = 0;                  // of input_shape
};

// Strips "aten::" and any ".overload" suffix: "aten::mm.default" -> "mm".
std::string BaseOpName(absl::string_view op);

// Classifies the signature. INVALID_ARGUMENT when it has no ops. Never fails on unknown
// ops: those give op_class "unknown".
absl::StatusOr<RecognizedOp> RecognizeOp(const kagent::v1::OpSignature& signature);

// The main op's scalar argument `name`, or `fallback` when it was not recorded.
double ScalarArg(const RecognizedOp& op, const std::string& name, double fallback);

// One line for logs and expected-effect text: "matvec M=2048 K=1048576 bfloat16".
std::string DescribeOp(const RecognizedOp& op);

// The convolution class of `op` for reports, as KernelBench level 1 divides its
// convolutions: the rank ("conv1d", "conv2d", "conv3d") and then "transposed" (with
// "grouped" when it has groups), "depthwise-separable", "depthwise", "grouped",
// "pointwise" (every kernel extent 1) or "stem" (fewer than 4 input channels), or nothing
// for a standard one: "conv2d", "conv3d transposed grouped", "conv2d stem". "" for an op
// that is not a convolution.
std::string ConvClass(const RecognizedOp& op);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_OP_RECOGNITION_H_
