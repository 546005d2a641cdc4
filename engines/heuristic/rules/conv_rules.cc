// The sizing rules of the Triton convolution templates: conv2d_depthwise,
// conv2d_depthwise_separable, conv_transpose2d, conv_transpose_nd, conv3d_implicit_gemm,
// conv2d_implicit_gemm (declared in family_rules.h); SetPerDimParams (conv_dims.h). The
// CUDA C++ modules' rules are in conv_cutlass_rules.cc.
#include "engines/heuristic/rules/family_rules.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "engines/heuristic/rules/conv_dims.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

// conv_dims.h.
int ConvRank(const RecognizedOp& op) {
  return op.variant == "conv1d" ? 1 : op.variant == "conv2d" ? 2 : op.variant == "conv3d" ? 3 : 0;
}

// conv_dims.h.
double RecordedDimScalar(const RecognizedOp& op, const char* scalar, int i) {
  double v = ScalarArg(op, absl::StrCat(scalar, ".", i), NAN);
  if (std::isnan(v) && !op.scalars.count(absl::StrCat(scalar, ".1"))) {
    v = ScalarArg(op, absl::StrCat(scalar, ".0"), ScalarArg(op, scalar, NAN));
  }
  return v;
}

// conv_dims.h.
absl::Status SetPerDimParams(const TemplateInfo& t, int nd, const std::vector<int64_t>& w,
                             const std::vector<DimArg>& args,
                             const std::function<double(const DimArg&, int)>& value,
                             std::map<std::string, std::string>* p) {
  static const char* const kDims[] = {"D", "H", "W"};
  for (int d = 0; d < 3; ++d) {
    const int i = d - (3 - nd);  // the op's spatial dim; < 0 for a unit leading dim
    for (const DimArg& a : args) {
      const double v = i < 0 ? static_cast<double>(a.unit) : value(a, i);
      if (std::isnan(v) || v < a.lo || v > a.hi) {
        return Precondition(t, absl::StrCat(a.scalar, " not recorded or outside [", a.lo,
                                            ", ", a.hi, "]"));
      }
      (*p)[absl::StrCat(a.param, "_", kDims[d])] = absl::StrCat(static_cast<int64_t>(v));
    }
    const int64_t k = i < 0 ? 1 : w[2 + i];
    if (k < 1 || k > 64) return Precondition(t, absl::StrCat("kernel size ", k, " outside [1, 64]"));
    (*p)[absl::StrCat("KERNEL_", kDims[d])] = std::to_string(k);
  }
  return absl::OkStatus();
}

namespace {

// Tiles of the implicit-GEMM convolutions (conv2d_implicit_gemm, conv3d_implicit_gemm,
// conv_transpose2d, conv_transpose_nd), per group: M = output pixels, N = cout output
// channels, K runs over cin input channels per tap. Sets BLOCK_M/N/K, GROUP_M, num_warps,
// num_stages and INPUT_PRECISION.
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

// Sets h_param and w_param of a 2-D convolution from aten::convolution's recorded scalars
// "<name>.0" (H) and "<name>.1" (W, default H), else both from `fallback` (NAN: none);
// w_param is "-1" when W equals H (the templates' "as H"). An error when neither gives a
// value in [lo, hi]: a clamped value would render a kernel of another convolution.
absl::Status PerDimPair(const TemplateInfo& t, const RecognizedOp& op, const char* name,
                        int64_t lo, int64_t hi, double fallback, const char* h_param,
                        const char* w_param, TemplateParams* p) {
  const bool recorded = op.scalars.count(absl::StrCat(name, ".0")) > 0;
  const double h = recorded ? ScalarArg(op, absl::StrCat(name, ".0"), NAN) : fallback;
  const double w = recorded ? ScalarArg(op, absl::StrCat(name, ".1"), h) : fallback;
  if (std::isnan(h) || std::isnan(w) || h < lo || h > hi || w < lo || w > hi) {
    return Precondition(t, absl::StrCat(name, " not recorded or outside [", lo, ", ", hi, "]"));
  }
  (*p)[h_param] = absl::StrCat(static_cast<int64_t>(h));
  (*p)[w_param] = w == h ? "-1" : absl::StrCat(static_cast<int64_t>(w));
  return absl::OkStatus();
}

// Stride, padding and dilation of a 2-D convolution into p as the templates take them
// (STRIDE, PADDING, DILATION for H; STRIDE_W, PADDING_W, DILATION_W for W, -1 when equal
// to H's): aten::convolution's recorded scalars (PerDimPair); without them (an older
// harness) the square stride and padding inferred from the shapes, dilation 1. Sets
// *recorded. FAILED_PRECONDITION when neither is there or a value is outside the
// templates' range (stride and dilation [1, 16], padding [0, 64]).
absl::Status Conv2dArgs(const TemplateInfo& t, const RecognizedOp& op, bool* recorded,
                        std::map<std::string, std::string>* p) {
  *recorded = op.scalars.count("stride.0") > 0;
  if (!*recorded && !op.tags.count("conv_params_inferred")) {
    return Precondition(t, "stride and padding neither recorded nor inferable from the shapes");
  }
  auto fallback = [&](int64_t inferred) {
    return *recorded ? NAN : static_cast<double>(inferred);
  };
  KAGENT_RETURN_IF_ERROR(
      PerDimPair(t, op, "stride", 1, 16, fallback(op.stride), "STRIDE", "STRIDE_W", p));
  KAGENT_RETURN_IF_ERROR(
      PerDimPair(t, op, "padding", 0, 64, fallback(op.padding), "PADDING", "PADDING_W", p));
  return PerDimPair(t, op, "dilation", 1, 16, fallback(op.dilation), "DILATION", "DILATION_W",
                    p);
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
  // built from the weight's shape plus these (CTOR recorded), whatever the reference's
  // constructor takes (another order, fewer arguments, or none: KernelBench-style
  // modules with the sizes inside; session 36 saw CTOR in_out_kernel, which read in/out/
  // kernel from the constructor, fail on six of those at construction).
  KAGENT_RETURN_IF_ERROR(PerDimPair(t, op, "stride", 1, 16, NAN, "STRIDE", "STRIDE_W", &p));
  KAGENT_RETURN_IF_ERROR(PerDimPair(t, op, "padding", 0, 32, NAN, "PADDING", "PADDING_W", &p));
  KAGENT_RETURN_IF_ERROR(PerDimPair(t, op, "output_padding", 0, 15, NAN, "OUTPUT_PADDING",
                                    "OUTPUT_PADDING_W", &p));
  KAGENT_RETURN_IF_ERROR(
      PerDimPair(t, op, "dilation", 1, 16, NAN, "DILATION", "DILATION_W", &p));
  // The weight is (C_in, C_out, KH, KW). Tiles as the implicit GEMM's (ConvTiles; the
  // transposed kernel's own timing is the loop's to measure).
  const int64_t cin = op.weight_shape[0], cout = op.weight_shape[1];
  const std::vector<int64_t>& out = op.output_shape.size() == 4 ? op.output_shape : op.input_shape;
  ConvTiles(half, SmVersion(gpu), cin, cout, out[0] * out[2] * out[3], &p);
  const std::vector<int64_t>& w = op.weight_shape;
  if (cin < 1 || cout < 1 || w[2] < 1 || w[3] < 1 || w[2] > 64 || w[3] > 64) {
    return Precondition(t, "kernel outside 1-64 or no channels");
  }
  p["CTOR"] = "recorded";
  p["IN_CHANNELS"] = std::to_string(cin);
  p["OUT_CHANNELS"] = std::to_string(cout);
  p["KERNEL_H"] = std::to_string(w[2]);
  p["KERNEL_W"] = std::to_string(w[3]);
  p["BIAS"] = op.has_bias ? "True" : "False";
  return p;
}

absl::StatusOr<TemplateParams> ConvTransposeNdParams(const TemplateInfo& t,
                                                    const RecognizedOp& op,
                                                    const GpuSpec* gpu) {
  TemplateParams p;
  const bool half = Is16Bit(op.dtype);
  const int nd = ConvRank(op);
  if (nd == 0 || !op.tags.count("transposed")) {
    return Precondition(t, absl::StrCat("serves transposed 1-D, 2-D and 3-D convolutions, the "
                                        "problem is ", DescribeOp(op)));
  }
  const size_t rank = nd + 2;
  const std::vector<int64_t>& x = op.input_shape;
  const std::vector<int64_t>& w = op.weight_shape;
  // The weight is (C_in, C_out / groups, *k); groups come from the recorded scalar (the
  // shapes alone give them only through the output's channels).
  const double g = ScalarArg(op, "groups", NAN);
  if (w.size() != rank || x.size() != rank || x[1] != w[0] || w[1] <= 0 || x[1] > 1048576) {
    return Precondition(t, "convolution shapes unknown");
  }
  if (std::isnan(g) || g < 1 || g > 65535 || x[1] % static_cast<int64_t>(g) != 0 ||
      w[1] * static_cast<int64_t>(g) > 1048576) {
    return Precondition(t, "groups not recorded, outside [1, 65535] or not dividing the input "
                           "channels");
  }
  const int64_t groups = static_cast<int64_t>(g);
  if (op.output_shape.size() == rank && op.output_shape[1] != w[1] * groups) {
    return Precondition(t, absl::StrCat("the recorded output has ", op.output_shape[1],
                                        " channels, groups ", groups, " and the weight give ",
                                        w[1] * groups));
  }
  // Stride, padding, output padding and dilation are not recoverable from the shapes
  // alone (L 32 -> 34 with k 3 is stride 1, padding 0 or stride 2, padding 16, output
  // padding 1): aten::convolution's (or aten::conv_transpose*d's) recorded scalars give
  // them per spatial dim (name.i; a one-element list name.0 or a plain number name
  // stands for every dim). The layer comes from the params alone (CTOR recorded),
  // whatever the order of the reference's constructor; the missing leading dims of a 1-D
  // or 2-D conv are unit dims.
  auto recorded = [&](const DimArg& a, int i) { return RecordedDimScalar(op, a.scalar, i); };
  KAGENT_RETURN_IF_ERROR(SetPerDimParams(t, nd, w,
                                         {{"stride", "STRIDE", 1, 16, 1, -1},
                                          {"padding", "PADDING", 0, 64, 0, -1},
                                          {"output_padding", "OUTPUT_PADDING", 0, 15, 0, -1},
                                          {"dilation", "DILATION", 1, 16, 1, -1}},
                                         recorded, &p));
  // Tiles per group and phase as the other implicit GEMMs' (ConvTiles): M counts the
  // output voxels of all phases (a phase's share is M / (SD*SH*SW), but every phase
  // reuses the same tile shape), K per tap is C_in / G.
  const int64_t cin = x[1] / groups, cout = w[1];
  const std::vector<int64_t>& out = op.output_shape.size() == rank ? op.output_shape : x;
  ConvTiles(half, SmVersion(gpu), cin, cout, out[0] * Prod(out, 2, rank), &p);
  p["DIMS"] = std::to_string(nd);
  p["CTOR"] = "recorded";
  p["IN_CHANNELS"] = std::to_string(x[1]);
  p["OUT_CHANNELS"] = std::to_string(w[1] * groups);
  p["GROUPS"] = std::to_string(groups);
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
  auto value = [&](const DimArg& a, int i) {
    return recorded ? ScalarArg(op, absl::StrCat(a.scalar, ".", i), NAN)
                    : static_cast<double>(a.inferred);
  };
  KAGENT_RETURN_IF_ERROR(SetPerDimParams(t, nd, w,
                                         {{"stride", "STRIDE", 1, 16, 1, op.stride},
                                          {"padding", "PADDING", 0, 64, 0, op.padding},
                                          {"dilation", "DILATION", 1, 16, 1, op.dilation}},
                                         value, &p));
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
