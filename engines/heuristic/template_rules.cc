// The first-kernel rules: which template serves a recognized op and the params it is
// rendered with (tile sizes from the shapes and the GPU, measured on an H200 where the
// comments say so). See template_rules.h. The params of each template family are sized by
// its rule in rules/ (rules/family_rules.h); TemplateParamsFor checks what every family
// needs and dispatches.
#include "engines/heuristic/template_rules.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engines/heuristic/rules/family_rules.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent {

using kagent::v1::GpuSpec;

int SmCount(const GpuSpec* gpu) {
  constexpr int kDefaultSmCount = 132;  // H200; used when the GPU spec is absent
  return gpu != nullptr && gpu->sm_count() > 0 ? gpu->sm_count() : kDefaultSmCount;
}

using rules::Is16Bit;
using rules::Precondition;
using rules::SmVersion;

const std::map<std::string, std::string>& TemplateAliases() {
  static const auto* m = new std::map<std::string, std::string>{
      {"matvec_row", "matvec_row_per_program"},
      {"matvec_one_row_per_program", "matvec_row_per_program"},
      {"matvec_splitk", "matvec_split_k"},
      {"matvec_tile", "matvec_multi_row"},
      {"matvec_multi_row_tile", "matvec_multi_row"},
      {"gemm", "gemm_tiled"},
      {"gemm_grouped", "gemm_tiled"},
      {"gemm_swizzled", "gemm_tiled"},
      {"gemm_splitk", "gemm_split_k"},
      {"gemm_persistent", "gemm_persistent_tma"},
      {"softmax", "softmax_online"},
      {"log_softmax", "softmax_online"},
      {"softmax_row", "softmax_online"},
      {"layernorm", "row_norm"},
      {"rmsnorm", "row_norm"},
      {"layernorm_welford", "row_norm"},
      {"batchnorm", "channel_norm"},
      {"batch_norm", "channel_norm"},
      {"groupnorm", "channel_norm"},
      {"group_norm", "channel_norm"},
      {"instancenorm", "channel_norm"},
      {"instance_norm", "channel_norm"},
      {"frobenius", "frobenius_norm"},
      {"reduction", "reduce_dim"},
      {"reduce_single_pass", "reduce_dim"},
      {"reduce_two_pass", "reduce_dim"},
      {"reduce_split", "reduce_dim"},
      {"elementwise_activation", "elementwise"},
      {"scan", "scan_rows"},
      {"cumsum", "scan_rows"},
      {"cumprod", "scan_rows"},
      {"scan_blocked_two_level", "scan_rows"},
      {"pooling", "pool_nd"},
      {"pool", "pool_nd"},
      {"maxpool", "pool_nd"},
      {"avgpool", "pool_nd"},
      {"loss", "loss_reduce"},
      {"loss_two_stage", "loss_reduce"},
      {"cross_entropy", "loss_rows"},
      {"row_loss", "loss_rows"},
      {"conv2d", "conv2d_implicit_gemm"},
      {"conv_implicit_gemm", "conv2d_implicit_gemm"},
      {"implicit_gemm", "conv2d_implicit_gemm"},
      {"depthwise", "conv2d_depthwise"},
      {"conv_transpose", "conv_transpose2d"},
      {"deconv", "conv_transpose2d"},
      {"conv_transpose1d", "conv_transpose_nd"},
      {"conv_transpose3d", "conv_transpose_nd"},
      {"conv_transpose_grouped", "conv_transpose_nd"},
      {"conv_depthwise", "conv2d_depthwise"},
      {"dwconv", "conv2d_depthwise"},
      {"depthwise_separable", "conv2d_depthwise_separable"},
      {"pointwise", "conv_pointwise_gemm"},
      {"conv1x1", "conv_pointwise_gemm"},
      {"separable", "conv2d_depthwise_separable"},
      {"conv3d", "conv3d_implicit_gemm"},
      {"conv1d", "conv3d_implicit_gemm"},
      {"conv1d_implicit_gemm", "conv3d_implicit_gemm"},
      {"implicit_gemm_3d", "conv3d_implicit_gemm"},
      {"attention", "attention_online"},
      {"attention_flash", "attention_online"},
      {"flash_attention", "attention_online"},
      {"sdpa", "attention_online"},
  };
  return *m;
}

absl::StatusOr<std::map<std::string, std::string>> TemplateParamsFor(
    const TemplateInfo& t, const RecognizedOp& op, const GpuSpec* gpu) {
  if (op.op_class != t.op_class) {
    return Precondition(t, absl::StrCat("serves op class ", t.op_class, ", the problem is ",
                                        DescribeOp(op)));
  }
  // Rendering the main op alone would drop the model's other compute ops.
  if (op.tags.count("extra_ops")) {
    return Precondition(t, absl::StrCat(op.extra_ops_why, "; the template computes ", op.op_class,
                                        "/", op.variant, " alone (no prologue or epilogue ops)"));
  }
  if (!op.dtype.empty() &&
      std::find(t.dtypes.begin(), t.dtypes.end(), op.dtype) == t.dtypes.end()) {
    return Precondition(t, absl::StrCat("dtype ", op.dtype, " not in {",
                                        absl::StrJoin(t.dtypes, ", "), "}"));
  }
  // A template's own rule, else its op class's (rules/family_rules.h).
  static const auto* by_template = new std::map<std::string, rules::ParamsRule>{
      {"gemm_diag", rules::GemmDiagParams},
      {"gemm_cutlass_tf32x3", rules::GemmCutlassTf32x3Params},
      {"gemm_sm90_tf32x3", rules::GemmSm90Tf32x3Params},
      {"gemm_sm90_bf16", rules::GemmSm90Bf16Params},
      {"channel_norm", rules::ChannelNormParams},
      {"frobenius_norm", rules::FrobeniusNormParams},
      {"loss_rows", rules::LossRowsParams},
      {"conv2d_depthwise", rules::Conv2dDepthwiseParams},
      {"conv2d_depthwise_separable", rules::Conv2dDepthwiseSeparableParams},
      {"conv_transpose2d", rules::ConvTranspose2dParams},
      {"conv_transpose_nd", rules::ConvTransposeNdParams},
      {"conv3d_implicit_gemm", rules::Conv3dImplicitGemmParams},
      {"conv_cutlass_fprop", rules::ConvCutlassFpropParams},
      {"conv_pointwise_gemm", rules::ConvPointwiseGemmParams},
      {"conv_sm90_fprop", rules::ConvSm90FpropParams},
  };
  static const auto* by_class = new std::map<std::string, rules::ParamsRule>{
      {"matvec", rules::MatvecParams},
      {"gemm", rules::GemmParams},
      {"softmax", rules::SoftmaxParams},
      {"norm", rules::RowNormParams},
      {"reduction", rules::ReduceDimParams},
      {"elementwise", rules::ElementwiseParams},
      {"scan", rules::ScanRowsParams},
      {"pooling", rules::PoolParams},
      {"loss", rules::LossReduceParams},
      {"conv", rules::Conv2dImplicitGemmParams},
      {"attention", rules::AttentionParams},
  };
  if (auto it = by_template->find(t.id); it != by_template->end()) return it->second(t, op, gpu);
  if (auto it = by_class->find(t.op_class); it != by_class->end()) return it->second(t, op, gpu);
  return Precondition(t, absl::StrCat("no parameter rules for op class ", t.op_class));
}


absl::StatusOr<std::string> SelectTemplate(const RecognizedOp& op, const GpuSpec* gpu) {
  const int sms = SmCount(gpu);
  // The model computes more than the class's templates perform (a prologue or an epilogue:
  // sum(|x|), relu(conv(x)), an activation after a matmul): no template renders it.
  if (op.tags.count("extra_ops")) {
    return absl::UnimplementedError(absl::StrCat(
        "no template family for ", DescribeOp(op), ": ", op.extra_ops_why, ", which no ",
        op.op_class, " template performs (they have no prologue or epilogue ops)"));
  }
  if (op.op_class == "matvec") {
    return op.m >= 4LL * sms ? "matvec_row_per_program" : "matvec_split_k";
  }
  if (op.op_class == "gemm") {
    if (op.variant == "diag") return "gemm_diag";
    // torch.triu / tril of a product: TRIANGLE, on the tensor cores in 3xTF32 where the
    // CUTLASS 2.x module takes it, else in gemm_tiled.
    if (op.variant == "triangular") {
      return rules::PrefersCutlassTf32x3(op, gpu) ? "gemm_cutlass_tf32x3" : "gemm_tiled";
    }
    // fp32 products on Hopper through 3xTF32 on the tensor cores, where the H200 sweep
    // measured them 1.9-2.4x cuBLAS's exact fp32 within the gate's tolerance.
    if (rules::PrefersSm90Tf32x3(op, gpu)) return "gemm_sm90_tf32x3";
    if (rules::PrefersCutlassTf32x3(op, gpu)) return "gemm_cutlass_tf32x3";
    // 16-bit products with one K step on Hopper, where the CUTLASS SM90 kernel's TMA
    // epilogue beat cuBLAS (1.06-1.19x on an H100).
    if (rules::PrefersSm90Bf16(op, gpu)) return "gemm_sm90_bf16";
    int64_t tiles = CeilDiv(op.m, 64) * CeilDiv(op.n, 64) * op.batch;
    if (op.batch == 1 && tiles < sms / 2 && op.k >= 4096) return "gemm_split_k";
    // A large 16-bit GEMM with a transposed A on Hopper: the persistent TMA kernel reads A
    // through a descriptor on its storage order. Measured on an H200 (problems/07, 8192^3
    // bf16, A.T @ B): 128 x 256 x 64, 3 stages 1.484 ms, against gemm_tiled's best 1.656
    // (cuBLAS 1.419, torch.compile 1.617); without the transpose (problems/02) the tiled
    // kernel stays faster (1.544 against 1.629).
    if (Is16Bit(op.dtype) && op.trans_a && op.batch == 1 && SmVersion(gpu) >= 90 &&
        op.m >= 2048 && op.n >= 2048 && op.k >= 1024) {
      return "gemm_persistent_tma";
    }
    return "gemm_tiled";
  }
  if (op.op_class == "softmax") return "softmax_online";
  // Attention without a mask tensor, dropout, grouped K / V heads or Q, K, V that are views
  // of one tensor (see attention_rules.cc).
  if (op.op_class == "attention" && !op.tags.count("masked") && !op.tags.count("dropout") &&
      !op.tags.count("grouped_kv") && !op.tags.count("shared_inputs")) {
    return "attention_online";
  }
  // row_norm computes LayerNorm and RMSNorm statistics; channel_norm serves BatchNorm
  // (inference, and training mode with the running statistics' update), GroupNorm and
  // InstanceNorm; frobenius_norm x / ||x||_F. row_norm also divides by the 1-, 2- or
  // max-norm along dims (l1, l2, max); another order (vector_norm_dim) has no template.
  if (op.op_class == "norm" && (op.variant == "layer" || op.variant == "rms" ||
                                op.variant == "l1" || op.variant == "l2" ||
                                op.variant == "max")) {
    return "row_norm";
  }
  if (op.op_class == "norm" &&
      (op.variant == "batch" || op.variant == "group" || op.variant == "instance")) {
    return "channel_norm";
  }
  if (op.op_class == "norm" && op.variant == "frobenius") return "frobenius_norm";
  if (op.op_class == "reduction") return "reduce_dim";
  if (op.op_class == "elementwise") return "elementwise";
  if (op.op_class == "scan") return "scan_rows";
  if (op.op_class == "pooling" && !op.tags.count("adaptive") &&
      (absl::EndsWith(op.variant, "1d") || absl::EndsWith(op.variant, "2d") ||
       absl::EndsWith(op.variant, "3d"))) {
    return "pool_nd";
  }
  if (op.op_class == "loss" && (op.variant == "mse" || op.variant == "smooth_l1" ||
                                op.variant == "huber" || op.variant == "hinge" ||
                                op.variant == "kl_div")) {
    return "loss_reduce";
  }
  if (op.op_class == "loss" && (op.variant == "cross_entropy" || op.variant == "cosine_similarity" ||
                                op.variant == "triplet_margin")) {
    return "loss_rows";
  }
  // Transposed convolutions: the 2-D kernel specialized for groups = 1 (measured on an
  // H200, problems/45), conv_transpose_nd for the rest (1-D and 3-D, any groups; grouped
  // 2-D).
  if (op.op_class == "conv" && op.tags.count("transposed")) {
    if (op.variant == "conv2d" && !op.tags.count("grouped")) return "conv_transpose2d";
    if (op.variant == "conv1d" || op.variant == "conv2d" || op.variant == "conv3d") {
      return "conv_transpose_nd";
    }
  }
  // Standard convolutions on Hopper through CUTLASS's implicit GEMMs on the tensor cores,
  // where the sweeps measured them ahead: 3.x's TMA and wgmma for bf16 whose output
  // channels fill 128-wide tiles (rules::PrefersSm90Conv), else 2.x's (PrefersCutlassConv).
  // A pointwise fp32 convolution as one batched GEMM over NC(D)HW in place
  // (rules::PrefersPointwiseGemm: 1.27-1.83x cuDNN in its sweep).
  if (rules::PrefersPointwiseGemm(op, gpu)) return "conv_pointwise_gemm";
  if (rules::PrefersSm90Conv(op, gpu)) return "conv_sm90_fprop";
  if (rules::PrefersCutlassConv(op, gpu)) return "conv_cutlass_fprop";
  if (op.op_class == "conv" && op.variant == "conv2d" && !op.tags.count("transposed")) {
    if (op.tags.count("depthwise_separable")) return "conv2d_depthwise_separable";
    return op.tags.count("depthwise") ? "conv2d_depthwise" : "conv2d_implicit_gemm";
  }
  // 3-D and 1-D convolutions (1-D runs as 3-D with unit depth and height), groups >= 1.
  if (op.op_class == "conv" && (op.variant == "conv3d" || op.variant == "conv1d") &&
      !op.tags.count("transposed")) {
    return "conv3d_implicit_gemm";
  }
  return absl::UnimplementedError(absl::StrCat("no template family for ", DescribeOp(op),
                                               op.reason.empty() ? "" : " (" + op.reason + ")"));
}

}  // namespace kagent
