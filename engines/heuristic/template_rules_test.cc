// Golden test of the first-kernel rules: the params TemplateParamsFor gives every template
// of the op's class (and SelectTemplate's choice) for a set of op signatures on four GPUs,
// against testdata/template_params.golden. A rule change shows up as a diff of that file;
// KAGENT_UPDATE_GOLDEN=1 rewrites it.
#include "engines/heuristic/template_rules.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "catch2/catch.hpp"
#include "engines/heuristic/template_library.h"
#include "engines/heuristic/test_signatures.h"
#include "kernel_model/op_recognition.h"

namespace kagent {
namespace {

using kagent::testing::AddOp;
using kagent::testing::T;
using kagent::v1::GpuSpec;
using kagent::v1::OpSignature;

GpuSpec Gpu(const std::string& arch, int sms) {
  GpuSpec g;
  g.set_arch(arch);
  g.set_sm_count(sms);
  return g;
}

// Named signatures that reach every rule of TemplateParamsFor (and most of its refusals).
std::vector<std::pair<std::string, OpSignature>> Signatures() {
  std::vector<std::pair<std::string, OpSignature>> out;
  auto add = [&](const std::string& name) -> OpSignature* {
    out.emplace_back(name, OpSignature());
    return &out.back().second;
  };
  const std::string bf = "bfloat16";
  // matvec
  *add("matvec_bf16_2048x1048576") = kagent::testing::MatvecSignature(2048, 1048576);
  *add("matvec_bf16_65536x4096") = kagent::testing::MatvecSignature(65536, 4096);
  *add("matvec_fp32_64x100") = kagent::testing::MatvecSignature(64, 100, "float32");
  {
    OpSignature* s = add("matvec_fp32_trans_a_4096x8192");
    AddOp(s, "aten::t", {{{8192, 4096}}}, {{{4096, 8192}, "float32", {1, 4096}}});
    AddOp(s, "aten::mm", {{{4096, 8192}, "float32", {1, 4096}}, {{8192, 1}}}, {{{4096, 1}}});
  }
  // gemm
  {
    OpSignature* s = add("mm_fp32_trans_a_256x512x128");
    AddOp(s, "aten::t", {{{512, 256}}}, {{{256, 512}, "float32", {1, 256}}});
    AddOp(s, "aten::mm", {{{256, 512}, "float32", {1, 256}}, {{512, 128}}}, {{{256, 128}}});
  }
  {
    OpSignature* s = add("mm_fp32_trans_b_256x512x128");
    AddOp(s, "aten::t", {{{128, 512}}}, {{{512, 128}, "float32", {1, 512}}});
    AddOp(s, "aten::mm", {{{256, 512}}, {{512, 128}, "float32", {1, 512}}}, {{{256, 128}}});
  }
  AddOp(add("bmm_fp32_8x100x30x70"), "aten::bmm", {{{8, 100, 30}}, {{8, 30, 70}}},
        {{{8, 100, 70}}});
  AddOp(add("bmm_fp32_128x512x1024x512"), "aten::bmm", {{{128, 512, 1024}}, {{128, 1024, 512}}},
        {{{128, 512, 512}}});
  AddOp(add("mm_fp32_4096x128x4096"), "aten::mm", {{{4096, 128}}, {{128, 4096}}},
        {{{4096, 4096}}});
  AddOp(add("mm_fp32_256x524288x256"), "aten::mm", {{{256, 524288}}, {{524288, 256}}},
        {{{256, 256}}});
  AddOp(add("mm_bf16_256x524288x256"), "aten::mm", {{{256, 524288}, bf}, {{524288, 256}, bf}},
        {{{256, 256}, bf}});
  AddOp(add("mm_bf16_8192"), "aten::mm", {{{8192, 8192}, bf}, {{8192, 8192}, bf}},
        {{{8192, 8192}, bf}});
  {
    OpSignature* s = add("mm_bf16_trans_a_8192");
    AddOp(s, "aten::t", {{{8192, 8192}, bf}}, {{{8192, 8192}, bf, {1, 8192}}});
    AddOp(s, "aten::mm", {{{8192, 8192}, bf, {1, 8192}}, {{8192, 8192}, bf}},
          {{{8192, 8192}, bf}});
  }
  AddOp(add("mm_bf16_32768x64x32768"), "aten::mm", {{{32768, 64}, bf}, {{64, 32768}, bf}},
        {{{32768, 32768}, bf}});
  AddOp(add("mm_fp32_tall_32768x64x32"), "aten::mm", {{{32768, 64}}, {{64, 32}}},
        {{{32768, 32}}});
  {
    OpSignature* s = add("diag_embed_mm_96x50");
    AddOp(s, "aten::diag_embed", {{{96}}}, {{{96, 96}}});
    AddOp(s, "aten::mm", {{{96, 96}}, {{96, 50}}}, {{{96, 50}}});
  }
  {
    OpSignature* s = add("mm_triu_256");
    T a{{256, 256}}, b{{256, 256}}, c{{256, 256}};
    AddOp(s, "aten::mm", {a, b}, {c});
    AddOp(s, "aten::triu", {c}, {c}, {{"diagonal", -2.0}});
  }
  AddOp(add("addmm_fp32"), "aten::addmm", {{{128}}, {{64, 256}}, {{256, 128}}}, {{{64, 128}}});
  // softmax
  AddOp(add("softmax_fp32_16x64x128_dim1"), "aten::_softmax", {{{16, 64, 128}}},
        {{{16, 64, 128}}}, {{"dim", 1.0}});
  AddOp(add("softmax_fp32_16x32768"), "aten::_softmax", {{{16, 32768}}}, {{{16, 32768}}});
  AddOp(add("log_softmax_bf16_16x32768"), "aten::_log_softmax", {{{16, 32768}, bf}},
        {{{16, 32768}, bf}});
  // norms
  AddOp(add("layer_norm_16x64x256x256"), "aten::native_layer_norm",
        {{{16, 64, 256, 256}}, {{64, 256, 256}}, {{64, 256, 256}}},
        {{{16, 64, 256, 256}}, {{16, 1, 1, 1}}, {{16, 1, 1, 1}}});
  AddOp(add("layer_norm_bf16_4096x16384"), "aten::native_layer_norm",
        {{{4096, 16384}, bf}, {{16384}, bf}, {{16384}, bf}},
        {{{4096, 16384}, bf}, {{4096, 1}}, {{4096, 1}}});
  {
    OpSignature* s = add("rms_norm_16x64x32x32");
    AddOp(s, "aten::pow", {{{16, 64, 32, 32}}}, {{{16, 64, 32, 32}}});
    AddOp(s, "aten::mean", {{{16, 64, 32, 32}}}, {{{16, 1, 32, 32}}});
    AddOp(s, "aten::add", {{{16, 1, 32, 32}}}, {{{16, 1, 32, 32}}});
    AddOp(s, "aten::sqrt", {{{16, 1, 32, 32}}}, {{{16, 1, 32, 32}}});
    AddOp(s, "aten::div", {{{16, 64, 32, 32}}, {{16, 1, 32, 32}}}, {{{16, 64, 32, 32}}});
  }
  {
    OpSignature* s = add("l2_norm_16x64");
    AddOp(s, "aten::linalg_vector_norm", {{{16, 64}}}, {{{16, 1}}},
          {{"ord", 2.0}, {"dim.0", 1.0}, {"keepdim", 1.0}});
    AddOp(s, "aten::div", {{{16, 64}}, {{16, 1}}}, {{{16, 64}}});
  }
  AddOp(add("batch_norm_inference_16x64x32x32"), "aten::_native_batch_norm_legit_no_training",
        {{{16, 64, 32, 32}}, {{64}}, {{64}}}, {{{16, 64, 32, 32}}});
  AddOp(add("batch_norm_cudnn_affine"), "aten::cudnn_batch_norm",
        {{{16, 64, 32, 32}}, {{64}}, {{64}}, {{64}}, {{64}}},
        {{{16, 64, 32, 32}}, {{64}}, {{64}}, {{0}, "uint8"}},
        {{"training", 0.0}, {"exponential_average_factor", 0.1}, {"epsilon", 1e-5}});
  AddOp(add("batch_norm_training"), "aten::native_batch_norm",
        {{{16, 64, 32, 32}}, {{64}}, {{64}}, {{64}}, {{64}}}, {{{16, 64, 32, 32}}},
        {{"training", 1.0}});
  AddOp(add("batch_norm_partial_affine"), "aten::native_batch_norm",
        {{{16, 64, 32, 32}}, {{64}}, {{64}}, {{64}}}, {{{16, 64, 32, 32}}});
  AddOp(add("group_norm_4x64x8x8_g8"), "aten::native_group_norm",
        {{{4, 64, 8, 8}}, {{64}}, {{64}}}, {{{4, 64, 8, 8}}, {{4, 8}}, {{4, 8}}},
        {{"N", 4.0}, {"C", 64.0}, {"HxW", 64.0}, {"group", 8.0}, {"eps", 1e-5}});
  AddOp(add("group_norm_112x64x512x512_g8"), "aten::native_group_norm",
        {{{112, 64, 512, 512}}, {{64}}, {{64}}},
        {{{112, 64, 512, 512}}, {{112, 8}}, {{112, 8}}},
        {{"N", 112.0}, {"C", 64.0}, {"HxW", 262144.0}, {"group", 8.0}, {"eps", 1e-5}});
  AddOp(add("instance_norm_16x64x256x256"), "aten::native_group_norm",
        {{{16, 64, 256, 256}}}, {{{16, 64, 256, 256}}, {{16, 64}}, {{16, 64}}},
        {{"N", 16.0}, {"C", 64.0}, {"HxW", 65536.0}, {"group", 64.0}, {"eps", 1e-5}});
  for (const double training : {1.0, 0.0}) {
    OpSignature* s = add(absl::StrCat("instance_norm_112x64x512x512_training_", training));
    AddOp(s, "aten::view", {{{112, 64, 512, 512}}}, {{{1, 7168, 512, 512}}});
    AddOp(s, "aten::native_batch_norm", {{{1, 7168, 512, 512}}}, {{{1, 7168, 512, 512}}},
          {{"training", training}, {"momentum", 0.1}, {"eps", 1e-5}});
    AddOp(s, "aten::view", {{{1, 7168, 512, 512}}}, {{{112, 64, 512, 512}}});
  }
  {
    OpSignature* s = add("frobenius_16x64x256x256");
    T x{{16, 64, 256, 256}}, n{{}};
    AddOp(s, "aten::linalg_vector_norm", {x}, {n}, {{"ord", 2.0}});
    AddOp(s, "aten::div", {x, n}, {x});
  }
  // reductions
  AddOp(add("sum_16x256x256_dim1"), "aten::sum", {{{16, 256, 256}}}, {{{16, 1, 256}}});
  AddOp(add("argmax_16x256x128"), "aten::argmax", {{{16, 256, 128}}}, {{{16, 128}, "int64"}});
  AddOp(add("min_bf16_96x4096x4096_dim1"), "aten::min", {{{96, 4096, 4096}, bf}},
        {{{96, 4096}, bf}, {{96, 4096}, "int64"}}, {{"dim", 1.0}});
  AddOp(add("sum_4x1048576_dim1"), "aten::sum", {{{4, 1048576}}}, {{{4}}}, {{"dim.0", 1.0}});
  AddOp(add("var_16x4096_dim1"), "aten::var", {{{16, 4096}}}, {{{16}}},
        {{"dim.0", 1.0}, {"correction", 0.0}});
  AddOp(add("norm_ord1_16x4096"), "aten::linalg_vector_norm", {{{16, 4096}}}, {{{16}}},
        {{"ord", 1.0}, {"dim.0", 1.0}});
  AddOp(add("norm_inf_16x4096"), "aten::linalg_vector_norm", {{{16, 4096}}}, {{{16}}},
        {{"dim.0", 1.0}});
  AddOp(add("mean_two_dims"), "aten::mean", {{{4, 8, 8, 8}}}, {{{4, 8}}},
        {{"dim.0", 2.0}, {"dim.1", 1.0}});
  // elementwise
  AddOp(add("relu_16x1024"), "aten::relu", {{{16, 1024}}}, {{{16, 1024}}});
  AddOp(add("relu_bf16_4096x4096"), "aten::relu", {{{4096, 4096}, bf}}, {{{4096, 4096}, bf}});
  AddOp(add("leaky_relu_0.2"), "aten::leaky_relu", {{{16, 1024}}}, {{{16, 1024}}},
        {{"negative_slope", 0.2}});
  AddOp(add("elu_scaled"), "aten::elu", {{{16, 1024}}}, {{{16, 1024}}},
        {{"alpha", 1.5}, {"scale", 2.0}, {"input_scale", 0.5}});
  AddOp(add("celu"), "aten::celu", {{{16, 1024}}}, {{{16, 1024}}}, {{"alpha", 2.0}});
  AddOp(add("softplus"), "aten::softplus", {{{16, 1024}}}, {{{16, 1024}}},
        {{"beta", 2.0}, {"threshold", 10.0}});
  AddOp(add("hardtanh"), "aten::hardtanh", {{{16, 1024}}}, {{{16, 1024}}},
        {{"min_val", -2.0}, {"max_val", 2.0}});
  AddOp(add("mul_scalar"), "aten::mul", {{{16, 1024}}}, {{{16, 1024}}}, {{"other", 3.14}});
  AddOp(add("gelu"), "aten::gelu", {{{16, 1024}}}, {{{16, 1024}}});
  // attention
  AddOp(add("sdpa_cpu_fp32_32x16x512x64"), "aten::_scaled_dot_product_flash_attention_for_cpu",
        {{{32, 16, 512, 64}}, {{32, 16, 512, 64}}, {{32, 16, 512, 64}}},
        {{{32, 16, 512, 64}}, {{32, 16, 512}}}, {{"dropout_p", 0}, {"is_causal", 0}});
  AddOp(add("sdpa_efficient_bf16_causal_d128"), "aten::_scaled_dot_product_efficient_attention",
        {{{8, 16, 2048, 128}, bf}, {{8, 16, 2048, 128}, bf}, {{8, 16, 2048, 128}, bf}},
        {{{8, 16, 2048, 128}, bf}, {{8, 16, 2048}}},
        {{"compute_log_sumexp", 0}, {"dropout_p", 0}, {"is_causal", 1}});
  AddOp(add("sdpa_flash_fp16_d256_scale"), "aten::_scaled_dot_product_flash_attention",
        {{{2, 4, 300, 256}, "float16"}, {{2, 4, 700, 256}, "float16"},
         {{2, 4, 700, 256}, "float16"}},
        {{{2, 4, 300, 256}, "float16"}}, {{"dropout_p", 0}, {"is_causal", 0}, {"scale", 0.125}});
  AddOp(add("sdpa_decode_fp32_d80"), "aten::_scaled_dot_product_efficient_attention",
        {{{4, 8, 1, 80}}, {{4, 8, 4096, 80}}, {{4, 8, 4096, 80}}}, {{{4, 8, 1, 80}}},
        {{"dropout_p", 0}, {"is_causal", 0}});
  AddOp(add("sdpa_fp32_d1024"), "aten::_scaled_dot_product_efficient_attention",
        {{{32, 32, 512, 1024}}, {{32, 32, 512, 1024}}, {{32, 32, 512, 1024}}},
        {{{32, 32, 512, 1024}}}, {{"dropout_p", 0}, {"is_causal", 0}});
  AddOp(add("sdpa_masked"), "aten::_scaled_dot_product_efficient_attention",
        {{{2, 4, 64, 64}}, {{2, 4, 64, 64}}, {{2, 4, 64, 64}}, {{2, 4, 64, 64}}},
        {{{2, 4, 64, 64}}}, {{"dropout_p", 0}, {"is_causal", 0}});
  *add("attention_written_out_fp32") =
      kagent::testing::WrittenOutAttentionSignature(48, 100, 77, 48, 32, 6.9282, "float32");
  *add("attention_math_path_causal_bf16") =
      kagent::testing::MathPathAttentionSignature(2, 8, 256, 256, 64, 0.125, true, bf);
  // scans
  AddOp(add("cumsum_128x4000"), "aten::cumsum", {{{128, 4000}}}, {{{128, 4000}}},
        {{"dim", 1.0}});
  {
    OpSignature* s = add("reverse_cumsum_128x4000");
    AddOp(s, "aten::flip", {{{128, 4000}}}, {{{128, 4000}}});
    AddOp(s, "aten::cumsum", {{{128, 4000}}}, {{{128, 4000}}});
    AddOp(s, "aten::flip", {{{128, 4000}}}, {{{128, 4000}}});
  }
  AddOp(add("cumprod_4x1048576"), "aten::cumprod", {{{4, 1048576}}}, {{{4, 1048576}}},
        {{"dim", 1.0}});
  {
    OpSignature* s = add("exclusive_cumsum_shape_changing");
    AddOp(s, "aten::select", {{{4, 6}}}, {{{4}}});
    AddOp(s, "aten::unsqueeze", {{{4}}}, {{{4, 1}}});
    AddOp(s, "aten::zeros_like", {{{4, 1}}}, {{{4, 1}}});
    AddOp(s, "aten::cat", {{{4, 1}}, {{4, 6}}}, {{{4, 7}}});
    AddOp(s, "aten::slice", {{{4, 7}}}, {{{3, 7}}});
    AddOp(s, "aten::cumsum", {{{3, 7}}}, {{{3, 7}}});
  }
  // pooling
  AddOp(add("max_pool2d_16x32x128x128"), "aten::max_pool2d_with_indices",
        {{{16, 32, 128, 128}}}, {{{16, 32, 64, 64}}, {{16, 32, 64, 64}, "int64"}});
  {
    OpSignature* s = add("avg_pool1d_bf16");
    AddOp(s, "aten::unsqueeze", {{{2, 64, 2048}, bf}}, {{{2, 64, 1, 2048}, bf}});
    AddOp(s, "aten::avg_pool2d", {{{2, 64, 1, 2048}, bf}}, {{{2, 64, 1, 1024}, bf}});
    AddOp(s, "aten::squeeze", {{{2, 64, 1, 1024}, bf}}, {{{2, 64, 1024}, bf}});
  }
  AddOp(add("max_pool3d"), "aten::max_pool3d_with_indices", {{{4, 8, 32, 32, 32}}},
        {{{4, 8, 16, 16, 16}}, {{4, 8, 16, 16, 16}, "int64"}});
  AddOp(add("adaptive_avg_pool2d"), "aten::_adaptive_avg_pool2d", {{{4, 8, 32, 32}}},
        {{{4, 8, 1, 1}}});
  // losses
  {
    OpSignature* s = add("cross_entropy_128x10");
    AddOp(s, "aten::_log_softmax", {{{128, 10}}}, {{{128, 10}}});
    AddOp(s, "aten::nll_loss_forward", {{{128, 10}}, {{128}, "int64"}}, {{{}}, {{}}});
  }
  {
    OpSignature* s = add("cross_entropy_4096x32768");
    AddOp(s, "aten::_log_softmax", {{{4096, 32768}}}, {{{4096, 32768}}});
    AddOp(s, "aten::nll_loss_forward", {{{4096, 32768}}, {{4096}, "int64"}}, {{{}}, {{}}});
  }
  {
    OpSignature* s = add("mse_128x4096");
    AddOp(s, "aten::sub", {{{128, 4096}}, {{128, 4096}}}, {{{128, 4096}}});
    AddOp(s, "aten::pow", {{{128, 4096}}}, {{{128, 4096}}});
    AddOp(s, "aten::mean", {{{128, 4096}}}, {{{}}});
  }
  AddOp(add("huber_128x4096"), "aten::huber_loss", {{{128, 4096}}, {{128, 4096}}}, {{{}}});
  AddOp(add("smooth_l1_bf16_4096x4096"), "aten::smooth_l1_loss",
        {{{4096, 4096}, bf}, {{4096, 4096}, bf}}, {{{}, bf}});
  {
    OpSignature* s = add("kl_div_256x512");
    AddOp(s, "aten::log", {{{256, 512}}}, {{{256, 512}}});
    AddOp(s, "aten::mul", {{{256, 512}}, {{256, 512}}}, {{{256, 512}}});
    AddOp(s, "aten::xlogy", {{{256, 512}}, {{256, 512}}}, {{{256, 512}}});
    AddOp(s, "aten::sub", {{{256, 512}}, {{256, 512}}}, {{{256, 512}}});
    AddOp(s, "aten::sum", {{{256, 512}}}, {{{}}});
    AddOp(s, "aten::div", {{{}}}, {{{}}});
  }
  // convolutions
  AddOp(add("conv2d_1x64x6x7_to_128"), "aten::convolution",
        {{{1, 64, 6, 7}}, {{128, 64, 3, 3}}}, {{{1, 128, 6, 7}}});
  AddOp(add("conv2d_stride2_bias"), "aten::convolution",
        {{{4, 3, 224, 224}}, {{32, 3, 5, 5}}, {{32}}}, {{{4, 32, 112, 112}}});
  AddOp(add("conv2d_grouped_4"), "aten::convolution", {{{1, 32, 8, 8}}, {{64, 8, 3, 3}}},
        {{{1, 64, 6, 6}}});
  {  // KernelBench level 1's depthwise-separable conv (64 -> 128 channels, 3x3, padding 1)
    OpSignature* s = add("conv2d_depthwise_separable_64_to_128");
    AddOp(s, "aten::convolution", {{{16, 64, 512, 512}}, {{64, 1, 3, 3}}},
          {{{16, 64, 512, 512}}},
          {{"stride.0", 1.0}, {"stride.1", 1.0}, {"padding.0", 1.0}, {"padding.1", 1.0},
           {"dilation.0", 1.0}, {"dilation.1", 1.0}, {"transposed", 0.0}, {"groups", 64.0}});
    AddOp(s, "aten::convolution", {{{16, 64, 512, 512}}, {{128, 64, 1, 1}}},
          {{{16, 128, 512, 512}}});
  }
  // KernelBench level 1's pointwise conv (Model(in, out)), non-square.
  AddOp(add("conv2d_pointwise_64_to_128"), "aten::convolution",
        {{{16, 64, 1024, 512}}, {{128, 64, 1, 1}}}, {{{16, 128, 1024, 512}}},
        {{"stride.0", 1.0}, {"stride.1", 1.0}, {"padding.0", 0.0}, {"padding.1", 0.0},
         {"dilation.0", 1.0}, {"dilation.1", 1.0}, {"transposed", 0.0}, {"groups", 1.0}});
  AddOp(add("conv2d_fp32_large_64_to_128"), "aten::convolution",
        {{{16, 64, 256, 256}}, {{128, 64, 3, 3}}}, {{{16, 128, 256, 256}}},
        {{"stride.0", 1.0}, {"stride.1", 1.0}, {"padding.0", 1.0}, {"padding.1", 1.0},
         {"dilation.0", 1.0}, {"dilation.1", 1.0}, {"transposed", 0.0}, {"groups", 1.0}});
  AddOp(add("conv2d_bf16_large_256_dilated"), "aten::convolution",
        {{{8, 256, 128, 128}, bf}, {{256, 256, 3, 3}, bf}}, {{{8, 256, 124, 124}, bf}},
        {{"stride.0", 1.0}, {"stride.1", 1.0}, {"padding.0", 0.0}, {"padding.1", 0.0},
         {"dilation.0", 2.0}, {"dilation.1", 2.0}, {"transposed", 0.0}, {"groups", 1.0}});
  AddOp(add("conv2d_depthwise_16x64x128x128"), "aten::convolution",
        {{{16, 64, 128, 128}}, {{64, 1, 3, 3}}}, {{{16, 64, 126, 126}}});
  AddOp(add("conv2d_depthwise_bias"), "aten::convolution",
        {{{1, 128, 8, 8}}, {{128, 1, 3, 3}}, {{128}}}, {{{1, 128, 8, 8}}});
  AddOp(add("conv2d_depthwise_per_dim"), "aten::convolution",
        {{{2, 6, 11, 13}}, {{6, 1, 3, 7}}, {{6}}}, {{{2, 6, 6, 13}}},
        {{"stride.0", 2.0}, {"stride.1", 1.0}, {"padding.0", 1.0}, {"padding.1", 3.0},
         {"dilation.0", 1.0}, {"dilation.1", 1.0}, {"transposed", 0.0}, {"groups", 6.0}});
  AddOp(add("conv_transpose2d_stride2"), "aten::convolution",
        {{{8, 32, 64, 64}}, {{32, 64, 3, 3}}}, {{{8, 64, 128, 128}}},
        {{"transposed", 1.0}, {"groups", 1.0}, {"stride.0", 2.0}, {"stride.1", 2.0},
         {"padding.0", 1.0}, {"padding.1", 1.0}, {"output_padding.0", 1.0},
         {"output_padding.1", 1.0}, {"dilation.0", 1.0}, {"dilation.1", 1.0}});
  AddOp(add("conv_transpose2d_unrecorded"), "aten::convolution",
        {{{2, 8, 5, 6}}, {{8, 4, 1, 1}}}, {{{2, 4, 5, 6}}}, {{"transposed", 1.0}});
  AddOp(add("conv_transpose3d"), "aten::convolution",
        {{{16, 32, 16, 16, 16}}, {{32, 64, 3, 3, 3}}}, {{{16, 64, 18, 18, 18}}});
  AddOp(add("conv_transpose1d_grouped_stride3"), "aten::convolution",
        {{{4, 32, 100}}, {{32, 4, 5}}, {{16}}}, {{{4, 16, 302}}},
        {{"stride.0", 3.0}, {"padding.0", 2.0}, {"dilation.0", 2.0}, {"transposed", 1.0},
         {"output_padding.0", 1.0}, {"groups", 4.0}});
  AddOp(add("conv_transpose2d_grouped_8"), "aten::convolution",
        {{{2, 64, 16, 20}}, {{64, 8, 3, 3}}}, {{{2, 64, 31, 41}}},
        {{"stride.0", 2.0}, {"stride.1", 2.0}, {"padding.0", 1.0}, {"padding.1", 1.0},
         {"dilation.0", 1.0}, {"dilation.1", 2.0}, {"transposed", 1.0},
         {"output_padding.0", 0.0}, {"output_padding.1", 0.0}, {"groups", 8.0}});
  AddOp(add("conv_transpose3d_bf16_asym"), "aten::conv_transpose3d",
        {{{8, 128, 16, 32, 32}, bf}, {{128, 128, 3, 3, 3}, bf}}, {{{8, 128, 33, 64, 32}, bf}},
        {{"stride.0", 2.0}, {"stride.1", 2.0}, {"stride.2", 1.0}, {"padding.0", 1.0},
         {"padding.1", 1.0}, {"padding.2", 1.0}, {"output_padding.0", 0.0},
         {"output_padding.1", 1.0}, {"output_padding.2", 0.0}, {"groups", 1.0},
         {"dilation.0", 1.0}, {"dilation.1", 1.0}, {"dilation.2", 1.0}});
  AddOp(add("conv_transpose3d_one_element_lists"), "aten::convolution",
        {{{2, 6, 4, 5, 6}}, {{6, 2, 3, 3, 3}}}, {{{2, 6, 9, 11, 13}}},
        {{"stride.0", 2.0}, {"padding", 0.0}, {"output_padding.0", 0.0}, {"groups", 3.0},
         {"dilation.0", 1.0}, {"transposed", 1.0}});
  AddOp(add("conv3d_32_to_64"), "aten::convolution",
        {{{4, 32, 16, 32, 32}}, {{64, 32, 3, 3, 3}}}, {{{4, 64, 14, 30, 30}}},
        {{"stride.0", 1.0}, {"stride.1", 1.0}, {"stride.2", 1.0}, {"padding.0", 0.0},
         {"padding.1", 0.0}, {"padding.2", 0.0}, {"dilation.0", 1.0}, {"dilation.1", 1.0},
         {"dilation.2", 1.0}, {"transposed", 0.0}, {"groups", 1.0}});
  AddOp(add("conv3d_inferred"), "aten::convolution",
        {{{2, 4, 8, 8, 8}}, {{8, 4, 3, 3, 3}}}, {{{2, 8, 6, 6, 6}}});
  AddOp(add("conv1d_bf16_1024_k5"), "aten::convolution",
        {{{16, 1024, 4096}, bf}, {{1024, 1024, 5}, bf}}, {{{16, 1024, 4092}, bf}},
        {{"stride.0", 1.0}, {"padding.0", 0.0}, {"dilation.0", 1.0}, {"transposed", 0.0},
         {"groups", 1.0}});
  {
    OpSignature* s = add("conv2d_relu_extra_ops");
    T img{{2, 4, 8, 8}}, fmap{{2, 8, 6, 6}};
    AddOp(s, "aten::convolution", {img, {{8, 4, 3, 3}}, {{8}}}, {fmap});
    AddOp(s, "aten::relu", {fmap}, {fmap});
  }
  AddOp(add("relu_fp64"), "aten::relu", {{{16, 1024}, "float64"}}, {{{16, 1024}, "float64"}});
  return out;
}

std::string Render(const absl::StatusOr<std::map<std::string, std::string>>& params) {
  if (!params.ok()) return absl::StrCat("ERROR ", params.status().ToString());
  return absl::StrJoin(*params, " ", absl::PairFormatter("="));
}

// One line per (signature, GPU) for SelectTemplate and per (signature, GPU, template of the
// op's class); templates of another class once per signature (gpu none).
std::string Golden() {
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  const GpuSpec h200 = Gpu("sm_90", 132), a100 = Gpu("sm_80", 108), t4 = Gpu("sm_75", 40);
  const std::vector<std::pair<std::string, const GpuSpec*>> gpus = {
      {"none", nullptr}, {"sm_90/132", &h200}, {"sm_80/108", &a100}, {"sm_75/40", &t4}};
  std::ostringstream out;
  for (const auto& [name, sig] : Signatures()) {
    absl::StatusOr<RecognizedOp> op = RecognizeOp(sig);
    if (!op.ok()) {
      out << name << " | recognize | ERROR " << op.status().ToString() << "\n";
      continue;
    }
    out << name << " | op | " << DescribeOp(*op) << "\n";
    bool other_class_done = false;
    for (const std::string& id : (*lib)->Ids()) {
      const TemplateInfo& t = *(*lib)->Find(id);
      if (t.op_class != op->op_class) {
        if (other_class_done) continue;
        other_class_done = true;
        out << name << " | none | " << id << " | " << Render(TemplateParamsFor(t, *op, nullptr))
            << "\n";
        continue;
      }
      for (const auto& [gpu_name, gpu] : gpus) {
        out << name << " | " << gpu_name << " | " << id << " | "
            << Render(TemplateParamsFor(t, *op, gpu)) << "\n";
      }
    }
    for (const auto& [gpu_name, gpu] : gpus) {
      absl::StatusOr<std::string> selected = SelectTemplate(*op, gpu);
      out << name << " | " << gpu_name << " | select | "
          << (selected.ok() ? *selected : "ERROR " + selected.status().ToString()) << "\n";
    }
  }
  return out.str();
}

TEST_CASE("Template rules: attention tiles at many shapes render and respect the lengths") {
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  const TemplateInfo& t = *(*lib)->Find("attention_online");
  const GpuSpec h200 = Gpu("sm_90", 132), t4 = Gpu("sm_75", 40);
  auto pow2 = [](int64_t v) {
    int64_t p = 1;
    while (p < v) p *= 2;
    return p;
  };
  for (const char* dtype : {"float32", "bfloat16", "float16"}) {
    for (int64_t d : {1, 16, 40, 64, 80, 128, 200, 256, 257, 1024}) {
      for (int64_t l : {1, 17, 100, 4096}) {
        for (int64_t s : {1, 100, 8192}) {
          for (const GpuSpec* gpu : {&h200, &t4, static_cast<const GpuSpec*>(nullptr)}) {
            OpSignature sig;
            AddOp(&sig, "aten::_scaled_dot_product_efficient_attention",
                  {{{3, 5, l, d}, dtype}, {{3, 5, s, d}, dtype}, {{3, 5, s, 2 * d}, dtype}},
                  {{{3, 5, l, 2 * d}, dtype}}, {{"is_causal", l == s ? 1.0 : 0.0}});
            auto op = RecognizeOp(sig);
            REQUIRE(op.ok());
            auto params = TemplateParamsFor(t, *op, gpu);
            INFO(DescribeOp(*op));
            REQUIRE(params.ok());
            auto rendered = (*lib)->Render("attention_online", *params);
            CHECK(rendered.ok());
            auto at = [&](const char* name) { return std::stoll(params->at(name)); };
            CHECK(at("BLOCK_M") <= std::max<int64_t>(16, pow2(l)));
            CHECK(at("BLOCK_N") <= std::max<int64_t>(16, pow2(s)));
            // The head dim in one chunk while both head dims fit 128, else chunks of 64;
            // at most 256 value columns per program.
            const int64_t qk = std::max<int64_t>(16, pow2(d)), v = std::max<int64_t>(16, pow2(2 * d));
            CHECK(at("BLOCK_D") == (std::max(qk, v) <= 128 ? qk : std::min<int64_t>(qk, 64)));
            CHECK(at("BLOCK_DV") == std::min<int64_t>(v, 256));
            CHECK(params->at("CAUSAL") == (l == s ? "True" : "False"));
            CHECK(params->at("INPUT_PRECISION") == "ieee");
          }
        }
      }
    }
  }
  // Refused: a mask tensor, dropout, grouped K / V heads; SelectTemplate names none.
  OpSignature masked;
  AddOp(&masked, "aten::_scaled_dot_product_efficient_attention",
        {{{2, 4, 8, 16}}, {{2, 4, 8, 16}}, {{2, 4, 8, 16}}, {{8, 8}}}, {{{2, 4, 8, 16}}});
  auto op = RecognizeOp(masked);
  REQUIRE(op.ok());
  CHECK(absl::IsFailedPrecondition(TemplateParamsFor(t, *op, &h200).status()));
  CHECK(absl::IsUnimplemented(SelectTemplate(*op, &h200).status()));
}

TEST_CASE("Template rules: params of every template at the golden signatures") {
  const std::string path =
      std::string(KAGENT_HEURISTIC_SOURCE_DIR) + "/testdata/template_params.golden";
  const std::string got = Golden();
  const char* update = std::getenv("KAGENT_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << got;
    WARN("rewrote " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream want;
  want << in.rdbuf();
  if (want.str() == got) return;
  // The first differing line, for the log.
  std::istringstream w(want.str()), g(got);
  std::string wl, gl;
  int line = 0;
  while (true) {
    ++line;
    const bool more_w = static_cast<bool>(std::getline(w, wl));
    const bool more_g = static_cast<bool>(std::getline(g, gl));
    if (!more_w && !more_g) break;
    if (!more_w || !more_g || wl != gl) {
      INFO("line " << line << "\nwant: " << wl << "\ngot:  " << gl);
      CHECK(wl == gl);
      break;
    }
  }
  CHECK(want.str() == got);
}

}  // namespace
}  // namespace kagent
