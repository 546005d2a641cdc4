// The per-family sizing rules behind TemplateParamsFor (template_rules.h): one function per
// template family, in a file named for the family beside the others of this folder. Each
// gives the params (knobs and shape params) of template `t` for the op, or
// FAILED_PRECONDITION naming the condition that does not hold. TemplateParamsFor has
// already checked that the template serves the op's class and dtype and that the op has
// no extra ops, and it picks the rule (a template's own rule, else its op class's).
// `gpu` may be null (132 SMs, unknown arch).
//
// Pure functions of their arguments; thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_RULES_FAMILY_RULES_H_
#define KAGENT_ENGINES_HEURISTIC_RULES_FAMILY_RULES_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "engines/heuristic/template_library.h"
#include "engines/heuristic/template_rules.h"  // RecognizedOp
#include "kagent/v1/common.pb.h"

namespace kagent::rules {

using TemplateParams = std::map<std::string, std::string>;

// A family's rule (the signature of every function below).
using ParamsRule = absl::StatusOr<TemplateParams> (*)(const TemplateInfo& t,
                                                      const RecognizedOp& op,
                                                      const kagent::v1::GpuSpec* gpu);

// matvec_rules.cc: the matvec class (matvec_row_per_program, matvec_multi_row,
// matvec_split_k).
absl::StatusOr<TemplateParams> MatvecParams(const TemplateInfo& t, const RecognizedOp& op,
                                            const kagent::v1::GpuSpec* gpu);

// gemm_rules.cc: gemm_diag, gemm_cutlass_tf32x3, gemm_sm90_tf32x3 and gemm_sm90_bf16 (CUDA
// C++); the rest
// of the gemm class (gemm_tiled, gemm_split_k, gemm_persistent_tma).
absl::StatusOr<TemplateParams> GemmDiagParams(const TemplateInfo& t, const RecognizedOp& op,
                                              const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> GemmCutlassTf32x3Params(const TemplateInfo& t,
                                                       const RecognizedOp& op,
                                                       const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> GemmSm90Tf32x3Params(const TemplateInfo& t,
                                                    const RecognizedOp& op,
                                                    const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> GemmSm90Bf16Params(const TemplateInfo& t,
                                                  const RecognizedOp& op,
                                                  const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> GemmParams(const TemplateInfo& t, const RecognizedOp& op,
                                          const kagent::v1::GpuSpec* gpu);
// Whether an fp32 product is gemm_sm90_tf32x3's on this GPU (sm_90; K at most 4096; enough
// work per operand element and enough tiles), from the H200 sweep in gemm_rules.cc.
bool PrefersSm90Tf32x3(const RecognizedOp& op, const kagent::v1::GpuSpec* gpu);
// Whether a 16-bit product is gemm_sm90_bf16's on this GPU (sm_90; one K step, K <= 64,
// where its TMA epilogue beats cuBLAS; aligned rows; enough tiles).
bool PrefersSm90Bf16(const RecognizedOp& op, const kagent::v1::GpuSpec* gpu);
// Whether an fp32 product is gemm_cutlass_tf32x3's (sm_90; 2-D or batched, operands
// row-major or transposed; K over 4096 where the SM90 one is too close to the tolerance,
// enough work and tiles; a batch; a long K in split-K; or torch.triu / tril of a product).
bool PrefersCutlassTf32x3(const RecognizedOp& op, const kagent::v1::GpuSpec* gpu);

// reduction_rules.cc: row-wise kernels over (OUTER, R, INNER): the softmax class
// (softmax_online), the reduction class (reduce_dim), the scan class (scan_rows).
absl::StatusOr<TemplateParams> SoftmaxParams(const TemplateInfo& t, const RecognizedOp& op,
                                             const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> ReduceDimParams(const TemplateInfo& t, const RecognizedOp& op,
                                               const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> ScanRowsParams(const TemplateInfo& t, const RecognizedOp& op,
                                              const kagent::v1::GpuSpec* gpu);

// norm_rules.cc: channel_norm, frobenius_norm; the rest of the norm class (row_norm).
absl::StatusOr<TemplateParams> ChannelNormParams(const TemplateInfo& t, const RecognizedOp& op,
                                                 const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> FrobeniusNormParams(const TemplateInfo& t,
                                                   const RecognizedOp& op,
                                                   const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> RowNormParams(const TemplateInfo& t, const RecognizedOp& op,
                                             const kagent::v1::GpuSpec* gpu);

// elementwise_rules.cc: the elementwise class (elementwise).
absl::StatusOr<TemplateParams> ElementwiseParams(const TemplateInfo& t, const RecognizedOp& op,
                                                 const kagent::v1::GpuSpec* gpu);

// pool_rules.cc: the pooling class (pool_nd).
absl::StatusOr<TemplateParams> PoolParams(const TemplateInfo& t, const RecognizedOp& op,
                                          const kagent::v1::GpuSpec* gpu);

// loss_rules.cc: loss_rows; the rest of the loss class (loss_reduce).
absl::StatusOr<TemplateParams> LossRowsParams(const TemplateInfo& t, const RecognizedOp& op,
                                              const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> LossReduceParams(const TemplateInfo& t, const RecognizedOp& op,
                                                const kagent::v1::GpuSpec* gpu);

// conv_rules.cc: conv2d_depthwise, conv2d_depthwise_separable, conv_transpose2d,
// conv_transpose_nd,
// conv3d_implicit_gemm; the rest of the conv class (conv2d_implicit_gemm).
absl::StatusOr<TemplateParams> Conv2dDepthwiseParams(const TemplateInfo& t,
                                                     const RecognizedOp& op,
                                                     const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> Conv2dDepthwiseSeparableParams(const TemplateInfo& t,
                                                              const RecognizedOp& op,
                                                              const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> ConvTranspose2dParams(const TemplateInfo& t,
                                                     const RecognizedOp& op,
                                                     const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> ConvTransposeNdParams(const TemplateInfo& t,
                                                    const RecognizedOp& op,
                                                    const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> Conv3dImplicitGemmParams(const TemplateInfo& t,
                                                        const RecognizedOp& op,
                                                        const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> Conv2dImplicitGemmParams(const TemplateInfo& t,
                                                        const RecognizedOp& op,
                                                        const kagent::v1::GpuSpec* gpu);

// conv_cutlass_rules.cc: the CUDA C++ modules on CUTLASS's implicit GEMMs,
// conv_cutlass_fprop and conv_sm90_fprop, and when the brain starts from them; the
// pointwise GEMM conv_pointwise_gemm (rendered when a switch names it; no first kernel yet).
absl::StatusOr<TemplateParams> ConvCutlassFpropParams(const TemplateInfo& t,
                                                      const RecognizedOp& op,
                                                      const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> ConvSm90FpropParams(const TemplateInfo& t,
                                                   const RecognizedOp& op,
                                                   const kagent::v1::GpuSpec* gpu);
// Whether a standard bf16 convolution is conv_sm90_fprop's first kernel on this GPU (sm_90,
// channels multiples of 8, output channels of 128 x 128 tiles, where the sweep measured it
// ahead of conv_cutlass_fprop).
bool PrefersSm90Conv(const RecognizedOp& op, const kagent::v1::GpuSpec* gpu);
// Whether a standard convolution is conv_cutlass_fprop's first kernel on this GPU (sm_90,
// a shape the module takes, where the sweep measured it ahead of the Triton templates).
bool PrefersCutlassConv(const RecognizedOp& op, const kagent::v1::GpuSpec* gpu);
// Whether a pointwise fp32 convolution is conv_pointwise_gemm's first kernel on this GPU
// (sm_90, no bias, channels and pixels in 16-byte accesses: where the sweep measured it
// ahead of cuDNN).
bool PrefersPointwiseGemm(const RecognizedOp& op, const kagent::v1::GpuSpec* gpu);
absl::StatusOr<TemplateParams> ConvPointwiseGemmParams(const TemplateInfo& t,
                                                       const RecognizedOp& op,
                                                       const kagent::v1::GpuSpec* gpu);

// attention_rules.cc: the attention class (attention_online).
absl::StatusOr<TemplateParams> AttentionParams(const TemplateInfo& t, const RecognizedOp& op,
                                               const kagent::v1::GpuSpec* gpu);

}  // namespace kagent::rules

#endif  // KAGENT_ENGINES_HEURISTIC_RULES_FAMILY_RULES_H_
