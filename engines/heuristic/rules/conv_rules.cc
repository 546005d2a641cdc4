// The sizing rules of convolutions: conv2d_depthwise, conv2d_depthwise_separable,
// conv_transpose2d, conv3d_implicit_gemm, conv2d_implicit_gemm (declared in
// family_rules.h).
#include "engines/heuristic/rules/family_rules.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

namespace {

// Tiles of the implicit-GEMM convolutions (conv2d_implicit_gemm, conv3d_implicit_gemm,
// conv_transpose2d), per group: M = output pixels, N = cout output channels, K runs over
// cin input channels per tap. Sets BLOCK_M/N/K, GROUP_M, num_warps, num_stages and
// INPUT_PRECISION.
//  - Large fp32 convolutions on sm_80+ (at least 65536 output pixels, 32 output channels
//    per group): 256 x min(128, cout) x 32 tiles, 8 warps, 3 stages, 3xTF32 dots (tf32x3,
//    about fp32 accuracy), although they spill about 0.5-1.2 KB per thread on sm_90.
//    Measured on an H200 (template_sweep.py; cuDNN = eager without TF32): problems/35
//    (3 x 3, 64 -> 128) 6.26 ms against 8.77 for ieee 128 x 128 x 32 (cuDNN 3.70);
//    problems/47 (groups 4, 32 -> 32 per group) 4.08 against 6.32 for ieee 128 x 32 x 32
//    and 10.7 for the old 64 x 32 x 16 (cuDNN 3.51); problems/48 (5 x 3, stride 2) 5.51
//    against 7.65 ieee (cuDNN 3.26); problems/49 (3-D, 32 -> 64) 4.39 against 6.09 ieee
//    128 x 64 (cuDNN 2.76).
//  - Large 16-bit convolutions on sm_90+ (128 output channels or more): 256 x 128 x 64, 8
//    warps, 3 stages. Measured on an H200: problems/46 (bf16 3 x 3, dilation 2, 256 ->
//    256) 6.67 ms against 10.43 for 128 x 128 x 64 / 4 stages and 10.12 for 128 x 256
//    (cuDNN 2.53); problems/50 (bf16 1-D, 1024 -> 1024, k 5) 6.89 against 9.37 (cuDNN
//    2.21). Far from cuDNN: the NCHW gather, not the tile, is the limit.
//  - Otherwise fp32 64 x min(64, cout) x min(32, cin), 16-bit 128 x min(128, cout) x
//    min(64, cin), exact (ieee) dots (compiled for sm_90 without spills).
void ConvTiles(bool half, int sm, int64_t cin, int64_t cout, int64_t pixels,
               std::map<std::string, std::string>* p) {
  const bool large = pixels >= 65536 && cout >= 32;
  const bool tf32x3 = !half && sm >= 80 && large;
  const bool wide_half = half && sm >= 90 && large && cout >= 128;
  int64_t bm = half ? 128 : 64;
  int64_t bn = Clamp(NextPow2(cout), 16, half ? 128 : 64);
  if (tf32x3) bm = 256, bn = Clamp(NextPow2(cout), 32, 128);
  if (wide_half) bm = 256, bn = 128;
  (*p)["BLOCK_M"] = std::to_string(bm);
  (*p)["BLOCK_N"] = std::to_string(bn);
  (*p)["BLOCK_K"] = std::to_string(Clamp(NextPow2(cin), 16, half ? 64 : 32));
  (*p)["GROUP_M"] = "8";
  (*p)["num_warps"] = bm * bn >= 4096 ? "8" : "4";
  (*p)["num_stages"] = half && !wide_half ? "4" : "3";
  (*p)["INPUT_PRECISION"] = tf32x3 ? "tf32x3" : "ieee";
}

// Stride, padding and dilation of a 2-D convolution into p as the templates take them
// (STRIDE, PADDING, DILATION for H; STRIDE_W, PADDING_W, DILATION_W for W, -1 when equal
// to H's): aten::convolution's recorded scalars (name.0 for H, name.1 for W, name.0 for
// both where only one is recorded); without them (an older harness) the square stride and
// padding inferred from the shapes, dilation 1. Sets *recorded. FAILED_PRECONDITION when
// neither is there or a value is outside the templates' range (stride and dilation
// [1, 16], padding [0, 64]): a clamped value would be a wrong convolution.
absl::Status Conv2dArgs(const TemplateInfo& t, const RecognizedOp& op, bool* recorded,
                        std::map<std::string, std::string>* p) {
  *recorded = op.scalars.count("stride.0") > 0;
  if (!*recorded && !op.tags.count("conv_params_inferred")) {
    return Precondition(t, "stride and padding neither recorded nor inferable from the shapes");
  }
  struct Arg {
    const char* scalar;
    const char* param;
    int64_t lo, hi, inferred;
  };
  const Arg args[] = {{"stride", "STRIDE", 1, 16, op.stride},
                      {"padding", "PADDING", 0, 64, op.padding},
                      {"dilation", "DILATION", 1, 16, op.dilation}};
  for (const Arg& a : args) {
    double h = a.inferred, w = a.inferred;
    if (*recorded) {
      h = ScalarArg(op, absl::StrCat(a.scalar, ".0"), NAN);
      w = ScalarArg(op, absl::StrCat(a.scalar, ".1"), h);
    }
    if (std::isnan(h) || h < a.lo || h > a.hi || w < a.lo || w > a.hi) {
      return Precondition(t, absl::StrCat(a.scalar, " not recorded or outside [", a.lo, ", ",
                                          a.hi, "]"));
    }
    (*p)[a.param] = absl::StrCat(static_cast<int64_t>(h));
    (*p)[absl::StrCat(a.param, "_W")] = w == h ? "-1" : absl::StrCat(static_cast<int64_t>(w));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TemplateParams> Conv2dDepthwiseParams(const TemplateInfo& t, const RecognizedOp& op,
                                                     const GpuSpec* /*gpu*/) {
  TemplateParams p;
  if (op.variant != "conv2d" || op.tags.count("transposed") || !op.tags.count("depthwise") ||
      op.tags.count("depthwise_separable")) {
    return Precondition(t, absl::StrCat("serves depthwise 2-D convolutions (groups = in "
                                        "channels) alone (then a pointwise conv: "
                                        "conv2d_depthwise_separable), the problem is ",
                                        DescribeOp(op)));
  }
  const std::vector<int64_t>& o = op.output_shape;
  if (op.weight_shape.size() != 4 || op.input_shape.size() != 4 || o.size() != 4) {
    return Precondition(t, "convolution shapes unknown");
  }
  if (op.weight_shape[2] > 64 || op.weight_shape[3] > 64) {
    return Precondition(t, "kernel larger than 64 (the template unrolls its taps)");
  }
  bool recorded = false;
  KAGENT_RETURN_IF_ERROR(Conv2dArgs(t, op, &recorded, &p));
  const int64_t c = op.input_shape[1];
  int64_t bw = Clamp(NextPow2(o[3]), 16, 128);
  int64_t bh = Clamp(NextPow2(o[2]), 1, std::max<int64_t>(1, 1024 / bw));
  p["CHANNELS"] = std::to_string(c);
  p["MULT"] = std::to_string(std::max<int64_t>(1, op.weight_shape[0] / c));
  p["KH"] = std::to_string(op.weight_shape[2]);
  p["KW"] = std::to_string(op.weight_shape[3]);
  p["BIAS"] = op.has_bias ? "True" : "False";
  p["BLOCK_W"] = std::to_string(bw);
  p["BLOCK_H"] = std::to_string(bh);
  p["num_warps"] = "4";
  return p;
}

absl::StatusOr<TemplateParams> Conv2dDepthwiseSeparableParams(const TemplateInfo& t,
                                                              const RecognizedOp& op,
                                                              const GpuSpec* /*gpu*/) {
  TemplateParams p;
  if (op.variant != "conv2d" || !op.tags.count("depthwise_separable")) {
    return Precondition(t, absl::StrCat("serves a depthwise 2-D convolution followed by a "
                                        "pointwise 1x1 one, the problem is ", DescribeOp(op)));
  }
  const std::vector<int64_t>& x = op.input_shape;
  const std::vector<int64_t>& w = op.weight_shape;
  const std::vector<int64_t>& pw = op.pointwise_weight_shape;
  const std::vector<int64_t>& o = op.output_shape;
  if (x.size() != 4 || w.size() != 4 || pw.size() != 4 || o.size() != 4 || x[1] <= 0 ||
      w[0] % x[1] != 0 || pw[1] != w[0] || w[0] / x[1] > 1024 || x[1] > 1048576 ||
      pw[0] > 1048576) {
    return Precondition(t, "convolution shapes unknown");
  }
  if (w[2] > 64 || w[3] > 64) {
    return Precondition(t, "kernel larger than 64 (the template unrolls its taps)");
  }
  bool recorded = false;
  KAGENT_RETURN_IF_ERROR(Conv2dArgs(t, op, &recorded, &p));
  // Sized by compiling for sm_90 (compile_sm90.py; not yet timed on a GPU): BLOCK_P 64
  // pixels, BLOCK_C up to 32 intermediate channels per tl.dot step (16, its minimum,
  // below that), BLOCK_CO = C_out up to 128, so the depthwise stage is computed once per
  // pixel tile for KernelBench's 64 -> 128 (wider C_out repeats it per 128-channel tile:
  // KH*KW MACs per intermediate element against 128 for the pointwise stage); 8 warps
  // from a 4096-element accumulator. No spills in fp32 or bf16 with 3x3 and 7x7 kernels
  // and both biases; BLOCK_P 128 with BLOCK_C 32 spilled 200 bytes (bf16, 7x7).
  const int64_t cm = w[0], cout = pw[0];
  const int64_t bco = Clamp(NextPow2(cout), 16, 128);
  const int64_t bc = Clamp(NextPow2(cm), 16, 32);
  const int64_t bp = 64;
  p["BLOCK_P"] = std::to_string(bp);
  p["BLOCK_C"] = std::to_string(bc);
  p["BLOCK_CO"] = std::to_string(bco);
  p["num_warps"] = bp * bco >= 4096 ? "8" : "4";
  p["num_stages"] = "2";
  p["CHANNELS"] = std::to_string(x[1]);
  p["MULT"] = std::to_string(cm / x[1]);
  p["KH"] = std::to_string(w[2]);
  p["KW"] = std::to_string(w[3]);
  p["DW_BIAS"] = op.has_bias ? "True" : "False";
  p["OUT_CHANNELS"] = std::to_string(cout);
  p["PW_BIAS"] = op.pointwise_has_bias ? "True" : "False";
  p["INPUT_PRECISION"] = "ieee";
  return p;
}

absl::StatusOr<TemplateParams> ConvTranspose2dParams(const TemplateInfo& t, const RecognizedOp& op,
                                                     const GpuSpec* gpu) {
  TemplateParams p;
  const bool half = Is16Bit(op.dtype);
  if (op.variant != "conv2d" || !op.tags.count("transposed") || op.tags.count("grouped")) {
    return Precondition(t, absl::StrCat("serves transposed 2-D convolutions with groups = 1, "
                                        "the problem is ", DescribeOp(op)));
  }
  if (op.weight_shape.size() != 4 || op.input_shape.size() != 4) {
    return Precondition(t, "convolution shapes unknown");
  }
  // Stride, padding, output padding and dilation are not recoverable from the shapes
  // alone (H 32 -> 34 with k 3 is stride 1, padding 0 or stride 2, padding 16, output
  // padding 1): they come from aten::convolution's recorded scalars, and the module is
  // built from in/out/kernel plus these (CTOR in_out_kernel), whatever the order of the
  // reference's constructor.
  auto pair = [&](const char* name, int64_t lo, int64_t hi, const char* h_param,
                  const char* w_param) -> absl::Status {
    const double h = ScalarArg(op, absl::StrCat(name, ".0"), NAN);
    const double w = ScalarArg(op, absl::StrCat(name, ".1"), h);
    if (std::isnan(h) || h < lo || h > hi || w < lo || w > hi) {
      return Precondition(t, absl::StrCat(name, " not recorded or outside [", lo, ", ", hi, "]"));
    }
    p[h_param] = absl::StrCat(static_cast<int64_t>(h));
    p[w_param] = w == h ? "-1" : absl::StrCat(static_cast<int64_t>(w));
    return absl::OkStatus();
  };
  KAGENT_RETURN_IF_ERROR(pair("stride", 1, 16, "STRIDE", "STRIDE_W"));
  KAGENT_RETURN_IF_ERROR(pair("padding", 0, 32, "PADDING", "PADDING_W"));
  KAGENT_RETURN_IF_ERROR(pair("output_padding", 0, 15, "OUTPUT_PADDING", "OUTPUT_PADDING_W"));
  KAGENT_RETURN_IF_ERROR(pair("dilation", 1, 16, "DILATION", "DILATION_W"));
  // The weight is (C_in, C_out, KH, KW). Tiles as the implicit GEMM's (ConvTiles; the
  // transposed kernel's own timing is the loop's to measure).
  const int64_t cin = op.weight_shape[0], cout = op.weight_shape[1];
  const std::vector<int64_t>& out = op.output_shape.size() == 4 ? op.output_shape : op.input_shape;
  ConvTiles(half, SmVersion(gpu), cin, cout, out[0] * out[2] * out[3], &p);
  p["CTOR"] = "in_out_kernel";
  p["BIAS"] = op.has_bias ? "True" : "False";
  return p;
}

absl::StatusOr<TemplateParams> Conv3dImplicitGemmParams(const TemplateInfo& t,
                                                        const RecognizedOp& op,
                                                        const GpuSpec* gpu) {
  TemplateParams p;
  const bool half = Is16Bit(op.dtype);
  const bool one_d = op.variant == "conv1d";
  if ((op.variant != "conv3d" && !one_d) || op.tags.count("transposed")) {
    return Precondition(t, absl::StrCat("serves 3-D and 1-D convolutions, not transposed "
                                        "(2-D: conv2d_implicit_gemm), the problem is ",
                                        DescribeOp(op)));
  }
  const size_t rank = one_d ? 3 : 5;
  const std::vector<int64_t>& x = op.input_shape;
  const std::vector<int64_t>& w = op.weight_shape;
  if (w.size() != rank || x.size() != rank || w[1] <= 0 || x[1] % w[1] != 0 ||
      w[0] % (x[1] / w[1]) != 0 || x[1] > 1048576 || w[0] > 1048576) {
    return Precondition(t, "convolution shapes unknown");
  }
  const int64_t groups = x[1] / w[1];
  if (groups > 65535) return Precondition(t, "more than 65535 groups (the grid's axis-1 limit)");
  // The layer comes from the params alone (CTOR recorded), so the reference's constructor
  // order does not matter: stride, padding and dilation per dim from aten::convolution's
  // recorded scalars (stride.i for spatial dim i); without them (an older harness) the
  // stride and padding inferred from the shapes, with dilation 1. A 1-D conv is the
  // template's W dim, with unit D and H.
  const int nd = static_cast<int>(rank) - 2;
  const bool recorded = op.scalars.count("stride.0") > 0;
  if (!recorded && !op.tags.count("conv_params_inferred")) {
    return Precondition(t, "stride and padding neither recorded nor inferable from the shapes");
  }
  static const char* const kDims[] = {"D", "H", "W"};
  struct Arg {
    const char* scalar;
    const char* param;
    int64_t lo, hi, inferred, unit;
  };
  const Arg args[] = {{"stride", "STRIDE", 1, 16, op.stride, 1},
                      {"padding", "PADDING", 0, 64, op.padding, 0},
                      {"dilation", "DILATION", 1, 16, op.dilation, 1}};
  for (int d = 0; d < 3; ++d) {
    const int i = d - (3 - nd);  // the op's spatial dim; < 0 for a 1-D conv's D and H
    for (const Arg& a : args) {
      const double v = i < 0      ? a.unit
                       : recorded ? ScalarArg(op, absl::StrCat(a.scalar, ".", i), NAN)
                                  : a.inferred;
      if (std::isnan(v) || v < a.lo || v > a.hi) {
        return Precondition(t, absl::StrCat(a.scalar, " not recorded or outside [", a.lo,
                                            ", ", a.hi, "]"));
      }
      p[absl::StrCat(a.param, "_", kDims[d])] = absl::StrCat(static_cast<int64_t>(v));
    }
    const int64_t k = i < 0 ? 1 : w[2 + i];
    if (k < 1 || k > 64) return Precondition(t, absl::StrCat("kernel size ", k, " outside [1, 64]"));
    p[absl::StrCat("KERNEL_", kDims[d])] = std::to_string(k);
  }
  // Tiles as the 2-D implicit GEMM's, per group (ConvTiles).
  const int64_t cin = w[1], cout = w[0] / groups;
  const std::vector<int64_t>& out = op.output_shape.size() == rank ? op.output_shape : x;
  ConvTiles(half, SmVersion(gpu), cin, cout, out[0] * Prod(out, 2, rank), &p);
  p["DIMS"] = one_d ? "1" : "3";
  p["CTOR"] = "recorded";
  p["IN_CHANNELS"] = std::to_string(x[1]);
  p["OUT_CHANNELS"] = std::to_string(w[0]);
  p["GROUPS"] = std::to_string(groups);
  p["BIAS"] = op.has_bias ? "True" : "False";
  return p;
}

absl::StatusOr<TemplateParams> Conv2dImplicitGemmParams(const TemplateInfo& t,
                                                        const RecognizedOp& op,
                                                        const GpuSpec* gpu) {
  TemplateParams p;
  const bool half = Is16Bit(op.dtype);
  if (op.variant != "conv2d" || op.tags.count("transposed") || op.tags.count("depthwise") ||
      op.tags.count("depthwise_separable")) {
    return Precondition(t, absl::StrCat("implicit GEMM serves standard and grouped 2-D "
                                        "convolutions (depthwise: conv2d_depthwise; then a "
                                        "pointwise conv: conv2d_depthwise_separable), the "
                                        "problem is ", DescribeOp(op)));
  }
  if (op.weight_shape.size() != 4 || op.input_shape.size() != 4 || op.weight_shape[1] <= 0 ||
      op.input_shape[1] % op.weight_shape[1] != 0) {
    return Precondition(t, "convolution shapes unknown");
  }
  // A grouped convolution is G independent GEMMs of C_in / G by C_out / G channels; the
  // tiles are sized for one group.
  const int64_t groups = op.input_shape[1] / op.weight_shape[1];
  const int64_t cin = op.weight_shape[1], cout = op.weight_shape[0] / groups;
  if (groups > 65535) return Precondition(t, "more than 65535 groups (the grid's axis-1 limit)");
  // Tiles per group (ConvTiles). The layer comes from the params alone where the
  // signature records aten::convolution's scalars (CTOR recorded: any constructor order,
  // KernelBench's (num_classes) or (in, out) of a pointwise conv included), else from the
  // constructor in nn.Conv2d order with the stride and padding inferred from the shapes.
  const std::vector<int64_t>& out = op.output_shape.size() == 4 ? op.output_shape : op.input_shape;
  ConvTiles(half, SmVersion(gpu), cin, cout, out[0] * out[2] * out[3], &p);
  bool recorded = false;
  KAGENT_RETURN_IF_ERROR(Conv2dArgs(t, op, &recorded, &p));
  const std::vector<int64_t>& w = op.weight_shape;
  if (w[2] > 64 || w[3] > 64) return Precondition(t, "kernel larger than 64");
  p["CTOR"] = recorded ? "recorded" : "torch";
  p["IN_CHANNELS"] = std::to_string(op.input_shape[1]);
  p["OUT_CHANNELS"] = std::to_string(w[0]);
  p["KERNEL_H"] = std::to_string(w[2]);
  p["KERNEL_W"] = std::to_string(w[3]);
  p["BIAS"] = op.has_bias ? "True" : "False";
  p["GROUPS"] = std::to_string(groups);
  return p;
}

}  // namespace kagent::rules
