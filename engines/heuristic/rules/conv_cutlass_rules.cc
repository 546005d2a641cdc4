// The sizing rules of the CUDA C++ convolution modules on CUTLASS: the implicit GEMMs
// conv_cutlass_fprop (2.x, Sm80 mma.sync) and conv_sm90_fprop (3.x, TMA and wgmma), the
// pointwise conv_pointwise_gemm (2.x's batched GEMM), and when the brain starts from them
// (declared in family_rules.h).
#include "engines/heuristic/rules/family_rules.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "engines/heuristic/rules/conv_dims.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

namespace {

// How conv_cutlass_fprop reads the channels of `op`: `align` elements per access (0: no
// access fits), and whether the forward pads the input channels to exactly `align` for the
// fixed-channels iterators (`pad`) or folds a 3-D convolution's depth taps into them for
// the few-channels iterators (`fold`).
struct ChannelAccess {
  int align = 0;
  bool pad = false;
  bool fold = false;
};

// The 16-byte access (4 fp32, 8 16-bit elements) for a convolution with fewer input
// channels than that (a stem: the padded channels of several taps fill one reduction step;
// a 3-D one with its depth taps folded into the channels) when it divides the output
// channels; else the largest of 4, 2, 1 for fp32 and 8, 4, 2 for 16-bit dividing both
// channel counts (a 3-D convolution only the 16-byte one).
ChannelAccess CutlassConvAccess(const RecognizedOp& op, int nd, int64_t cin, int64_t cout) {
  const bool half = Is16Bit(op.dtype);
  const int full = half ? 8 : 4;
  if (nd <= 2 && cin < full && cout % full == 0) return {full, true, false};
  if (nd == 3 && cin < full && cout % full == 0) return {full, false, true};
  for (int a : half ? std::vector<int>{8, 4, 2} : std::vector<int>{4, 2, 1}) {
    if (nd == 3 && a != full) break;
    if (cin % a == 0 && cout % a == 0) return {a, false};
  }
  return {};
}

// Why conv_cutlass_fprop's module cannot take `op` on `gpu` (an unknown arch passes), or ""
// when it can: a standard convolution (groups 1, not transposed), fp32 / bf16 / fp16, its
// kernel at most 32 along every dim, channels a multiple of an access width or few enough
// to pad (CutlassConvAccess), compiled for sm_90a.
std::string CutlassConvRefusal(const RecognizedOp& op, const GpuSpec* gpu) {
  const int nd = ConvRank(op);
  if (op.op_class != "conv" || nd == 0 || op.tags.count("transposed") ||
      op.tags.count("depthwise") || op.tags.count("depthwise_separable")) {
    return absl::StrCat("serves standard 1-D, 2-D and 3-D convolutions (not transposed, "
                        "depthwise or a separable pair), the problem is ", DescribeOp(op));
  }
  const size_t rank = nd + 2;
  const std::vector<int64_t>& x = op.input_shape;
  const std::vector<int64_t>& w = op.weight_shape;
  if (x.size() != rank || w.size() != rank || w[1] <= 0 || x[1] > 1048576 || w[0] > 1048576) {
    return "convolution shapes unknown";
  }
  if (x[1] != w[1]) return absl::StrCat("groups 1 only, the problem has ", x[1] / w[1]);
  for (size_t i = 2; i < rank; ++i) {
    if (w[i] < 1 || w[i] > 32) {
      return absl::StrCat("a kernel extent of ", w[i], " (CUTLASS's optimized iterator takes 1-32)");
    }
  }
  if (CutlassConvAccess(op, nd, x[1], w[0]).align == 0) {
    return absl::StrCat(x[1], " input and ", w[0], " output channels: no access width divides "
                        "both (", nd == 3 ? "16-byte accesses for 3-D" : "at least 4 bytes",
                        ")");
  }
  const int cc = SmVersion(gpu);
  if (cc > 0 && cc != 90) return absl::StrCat("compiled for sm_90a only, the GPU is ", gpu->arch());
  return "";
}

// The shape params of the channels-last CUTLASS convolution modules (conv_cutlass_fprop,
// conv_sm90_fprop: partials/conv_channels_last_module): DTYPE, DIMS, channels, BIAS and
// stride, padding and dilation per spatial dim from aten::convolution's recorded scalars
// (name.i; a one-element list name.0 or a plain number for every dim), else (an older
// harness) the stride and padding inferred from the shapes with dilation 1; the missing
// leading dims of a 1-D or 2-D conv are unit dims. The layer comes from the params alone.
// `op` passed CutlassConvRefusal.
absl::Status ChannelsLastConvParams(const TemplateInfo& t, const RecognizedOp& op,
                                    TemplateParams* p) {
  const int nd = ConvRank(op);
  const bool recorded = op.scalars.count("stride.0") > 0 || op.scalars.count("stride") > 0;
  if (!recorded && !op.tags.count("conv_params_inferred")) {
    return Precondition(t, "stride and padding neither recorded nor inferable from the shapes");
  }
  auto value = [&](const DimArg& a, int i) {
    return recorded ? RecordedDimScalar(op, a.scalar, i) : static_cast<double>(a.inferred);
  };
  KAGENT_RETURN_IF_ERROR(SetPerDimParams(t, nd, op.weight_shape,
                                         {{"stride", "STRIDE", 1, 16, 1, op.stride},
                                          {"padding", "PADDING", 0, 64, 0, op.padding},
                                          {"dilation", "DILATION", 1, 16, 1, op.dilation}},
                                         value, p));
  (*p)["DTYPE"] = op.dtype.empty() ? "float32" : op.dtype;
  (*p)["DIMS"] = std::to_string(nd);
  (*p)["IN_CHANNELS"] = std::to_string(op.input_shape[1]);
  (*p)["OUT_CHANNELS"] = std::to_string(op.weight_shape[0]);
  (*p)["BIAS"] = op.has_bias ? "True" : "False";
  return absl::OkStatus();
}

// Why conv_sm90_fprop's module cannot take `op` on `gpu`, or "" when it can: what
// CutlassConvRefusal says, and 16-bit with channel counts multiples of 8 (TMA's 16-byte
// rows).
std::string Sm90ConvRefusal(const RecognizedOp& op, const GpuSpec* gpu) {
  if (std::string why = CutlassConvRefusal(op, gpu); !why.empty()) return why;
  if (!Is16Bit(op.dtype)) {
    return absl::StrCat("16-bit convolutions only (fp32: conv_cutlass_fprop's 3xTF32), the "
                        "problem is ", op.dtype);
  }
  if (op.input_shape[1] % 8 != 0 || op.weight_shape[0] % 8 != 0) {
    return absl::StrCat(op.input_shape[1], " input and ", op.weight_shape[0],
                        " output channels: TMA reads 16-byte rows, multiples of 8");
  }
  return "";
}

// Elements per access of conv_pointwise_gemm for input channels `cin` and `pixels` (the
// product of the spatial dims): the largest of 4, 2, 1 dividing both.
int PointwiseAlign(int64_t cin, int64_t pixels) {
  for (int a : {4, 2}) {
    if (cin % a == 0 && pixels % a == 0) return a;
  }
  return 1;
}

// Why conv_pointwise_gemm's module cannot take `op` on `gpu` (an unknown arch passes), or ""
// when it can: a standard fp32 convolution with every kernel extent 1, stride 1 and no
// padding (recorded, or inferred from the shapes: equal spatial dims), groups 1, compiled
// for sm_90a.
std::string PointwiseGemmRefusal(const RecognizedOp& op, const GpuSpec* gpu) {
  const int nd = ConvRank(op);
  if (op.op_class != "conv" || nd == 0 || op.tags.count("transposed") ||
      op.tags.count("depthwise") || op.tags.count("depthwise_separable")) {
    return absl::StrCat("serves pointwise 1-D, 2-D and 3-D convolutions (not transposed, "
                        "depthwise or a separable pair), the problem is ", DescribeOp(op));
  }
  const size_t rank = nd + 2;
  const std::vector<int64_t>& x = op.input_shape;
  const std::vector<int64_t>& w = op.weight_shape;
  if (x.size() != rank || w.size() != rank || w[1] <= 0) return "convolution shapes unknown";
  if (x[1] != w[1]) return absl::StrCat("groups 1 only, the problem has ", x[1] / w[1]);
  if (op.dtype != "float32") return absl::StrCat("float32 only, the problem is ", op.dtype);
  for (size_t i = 2; i < rank; ++i) {
    if (w[i] != 1) return absl::StrCat("a 1 x 1 kernel only, the kernel has ", w[i], " taps");
  }
  const bool recorded = op.scalars.count("stride.0") > 0 || op.scalars.count("stride") > 0;
  for (int i = 0; i < nd; ++i) {
    if (recorded ? RecordedDimScalar(op, "stride", i) != 1.0 ||
                       RecordedDimScalar(op, "padding", i) != 0.0
                 : op.output_shape.size() != rank || op.output_shape[2 + i] != x[2 + i]) {
      return "stride 1 and no padding only";
    }
  }
  const int cc = SmVersion(gpu);
  if (cc > 0 && cc != 90) return absl::StrCat("compiled for sm_90a only, the GPU is ", gpu->arch());
  return "";
}

}  // namespace

absl::StatusOr<TemplateParams> ConvCutlassFpropParams(const TemplateInfo& t,
                                                      const RecognizedOp& op,
                                                      const GpuSpec* gpu) {
  if (std::string why = CutlassConvRefusal(op, gpu); !why.empty()) return Precondition(t, why);
  TemplateParams p;
  KAGENT_RETURN_IF_ERROR(ChannelsLastConvParams(t, op, &p));
  const int64_t cout = op.weight_shape[0];
  const ChannelAccess access = CutlassConvAccess(op, ConvRank(op), op.input_shape[1], cout);
  p["ALIGN"] = std::to_string(access.align);
  p["PAD_CHANNELS"] = access.pad ? "True" : "False";
  // A 3-D stem folded to 2-D: not yet run on a GPU (session 36 wrote it after the H100 run
  // where the Triton conv3d_implicit_gemm ran KernelBench's four 3-D stems at 0.28-0.43x
  // eager); the fp32 tile below, a switch renders it, no first kernel (PrefersCutlassConv).
  p["FOLD_DEPTH"] = access.fold ? "True" : "False";
  // Tiles from tests/gpu/conv_sweep.py on an H100 (2026-12-07; x cuDNN, TF32 off):
  //  - fp32 (3xTF32): 128 x 64 x 16 with 64 x 32 warp tiles, 5 stages, the fastest or
  //    within 5 % of it on all nine problems: problems/35 1.42x (128 x 128 x 32, 3 stages,
  //    0.78x; 128 x 128 x 16 0.59x: the 64 x 64 warp tiles' three products spill), 48
  //    1.28x, 49 (3-D) 1.32x, 75 1.43x, 76 1.40x, 82 1.13x, 83 (16 input channels) 2.95x
  //    against 1.52x with a 32-deep K step (half of it masked), 89 2.23x against 1.30x, 80
  //    (1-D) 0.83x against 0.67x.
  //  - 16-bit: 128 x 256 x 64, 3 stages, for 256 output channels or more (problems/46
  //    0.59x, 50 0.63x, 79 0.61x; 256 x 128 x 32 0.56-0.59x, 128 x 64 x 64 0.45-0.47x),
  //    256 x 128 x 32, 3 stages, below (74, 160 channels: 1.16x, 128 x 256 x 64 0.98x; 84,
  //    3-D, 128: 0.82x against 0.59x). cuDNN's Hopper kernels run 490-600 TFLOP/s there,
  //    mma.sync tops out near 370.
  if (Is16Bit(op.dtype)) {
    p["TILE"] = cout >= 256 ? "128x256x64_64x64x64" : "256x128x32_64x64x32";
    p["num_stages"] = "3";
  } else {
    p["TILE"] = "128x64x16_64x32x16";
    p["num_stages"] = "5";
  }
  return p;
}

bool PrefersCutlassConv(const RecognizedOp& op, const GpuSpec* gpu) {
  if (SmVersion(gpu) != 90 || !CutlassConvRefusal(op, gpu).empty()) return false;
  if (op.dtype != "float32" && op.dtype != "bfloat16") return false;  // fp16 unmeasured
  // Against the Triton implicit GEMMs' best through the loop in the suite (H100, x
  // torch.compile, sessions 25-26) the sweep's tiles (ConvCutlassFpropParams, x cuDNN =
  // torch.compile's call) win every standard convolution with 16-byte channel accesses and
  // a kernel larger than 1 x 1: fp32 problems/35 0.93 -> 1.42, 48 0.93 -> 1.28, 49 0.73 ->
  // 1.32, 75 0.68 -> 1.43, 76 1.14 -> 1.40, 82 0.79 -> 1.13, 80 0.56 -> 0.83; bf16 46 0.33
  // -> 0.59, 50 0.33 -> 0.63, 74 0.46 -> 1.16, 79 0.26 -> 0.61, 84 0.30 -> 0.82. They lose:
  //  - a pointwise conv (every kernel extent 1), where conv2d_implicit_gemm reads NCHW in
  //    place (problems/71: 2.15x torch.compile) and this module's layout copies dominate
  //    (0.77x cuDNN);
  //  - channels without a 16-byte access (problems/72 and 73, 3 input channels read 4 bytes
  //    at a time with one tap per reduction step, 13 of 16 lanes masked: 0.09-0.15x
  //    cuDNN). A stem now pads its channels to 16 bytes for the fixed-channels iterators
  //    (PAD_CHANNELS, 4 taps per step of 16) and is taken here: on an H100 (session 33,
  //    conv_sweep.py --all-variants --brain conv2d_implicit_gemm) 72 1.29x and 73 1.30x
  //    cuDNN with the fp32 tile below (the fastest of the six; 256 x 64 x 32 1.21x and
  //    1.13x), where the Triton implicit GEMM's render ran 0.22x and 0.27x; through kagentd
  //    1.93x and 1.79x torch.compile.
  const ChannelAccess access =
      CutlassConvAccess(op, ConvRank(op), op.input_shape[1], op.weight_shape[0]);
  if (access.align != (Is16Bit(op.dtype) ? 8 : 4) || access.fold) return false;
  return Prod(op.weight_shape, 2, op.weight_shape.size()) > 1;  // the kernel's taps
}

absl::StatusOr<TemplateParams> ConvSm90FpropParams(const TemplateInfo& t,
                                                   const RecognizedOp& op,
                                                   const GpuSpec* gpu) {
  if (std::string why = Sm90ConvRefusal(op, gpu); !why.empty()) return Precondition(t, why);
  TemplateParams p;
  KAGENT_RETURN_IF_ERROR(ChannelsLastConvParams(t, op, &p));
  // From tests/gpu/conv_sweep.py on an H100 (2026-12-07, x cuDNN): 128 x 128 x 64 tiles;
  // 2-D in 1 x 2 clusters (problems/46 0.70x against 0.67x in 1 x 1, 79 0.80x against
  // 0.75x), 1-D and 3-D in 1 x 1 (50 0.74x, 84 1.29x; 1 x 2 not run there). 64 x 128
  // tiles 0.57-0.58x on 46, 50 and 79; 128 x 256 and 256 x 128 spilled (0.08-0.15x).
  p["TILE"] = "128x128x64";
  p["CLUSTER"] = ConvRank(op) == 2 ? "1x2" : "1x1";
  return p;
}

bool PrefersSm90Conv(const RecognizedOp& op, const GpuSpec* gpu) {
  if (SmVersion(gpu) != 90 || !Sm90ConvRefusal(op, gpu).empty()) return false;
  if (op.dtype != "bfloat16") return false;  // fp16 unmeasured
  // Against conv_cutlass_fprop's best (mma.sync, the sweep's tiles), x cuDNN: problems/46
  // 0.70 against 0.59, 50 (1-D) 0.74 against 0.64, 79 0.80 against 0.66, 84 (3-D, bias)
  // 1.29 against 0.82. It lost where the output channels leave a ragged 128-wide tile:
  // 74 (160 channels) 0.87 against 1.15 for conv_cutlass_fprop's 256 x 128 x 32. So
  // output channels a multiple of 128, and a kernel larger than 1 x 1 (a pointwise conv is
  // the Triton template's, as for fp32; no 16-bit one was measured). Through kagentd on an
  // H100 (session 33, against session 32's conv_cutlass_fprop, x torch.compile): 46 0.63x
  // (0.53x), 50 0.71x (0.61x), 79 0.71x (0.56x), 84 1.07x (0.69x); still behind cuDNN
  // but on 84: one consumer warpgroup holds at most 128 x 128 accumulators, and CUTLASS's
  // conv kernels take no cooperative or ping-pong schedule yet.
  const int64_t taps = Prod(op.weight_shape, 2, op.weight_shape.size());
  return taps > 1 && op.weight_shape[0] % 128 == 0;
}

bool PrefersPointwiseGemm(const RecognizedOp& op, const GpuSpec* gpu) {
  if (SmVersion(gpu) != 90 || !PointwiseGemmRefusal(op, gpu).empty() || op.has_bias) {
    return false;
  }
  // The sweep (ConvPointwiseGemmParams's tile, x cuDNN 1.27-1.83 on six bias-free fp32
  // shapes with 16-byte accesses); a bias is a second pass over the output and 8- or
  // 4-byte accesses were not measured.
  const int64_t pixels = Prod(op.input_shape, 2, op.input_shape.size());
  return PointwiseAlign(op.input_shape[1], pixels) == 4;
}

absl::StatusOr<TemplateParams> ConvPointwiseGemmParams(const TemplateInfo& t,
                                                       const RecognizedOp& op,
                                                       const GpuSpec* gpu) {
  if (std::string why = PointwiseGemmRefusal(op, gpu); !why.empty()) return Precondition(t, why);
  TemplateParams p;
  KAGENT_RETURN_IF_ERROR(ChannelsLastConvParams(t, op, &p));
  const int64_t pixels = Prod(op.input_shape, 2, op.input_shape.size());
  p["ALIGN"] = std::to_string(PointwiseAlign(op.input_shape[1], pixels));
  // M is the output channels, N the pixels. Swept on an H100 (session 36, .gpu/pw.py's
  // in-process do_bench against cuDNN with TF32 off, seven tiles x six shapes, every
  // render within the gate): 64 x 128 x 16 with 32 x 64 warp tiles and 4 stages was the
  // fastest or within 2 % of it on all six, x cuDNN: problems/71 (8 x 64 -> 128 x 1024 x
  // 384) 1.53 (1.23 ms against 1.88), 8 x 64 -> 128 x 1024 x 1024 1.43, 16 x 256 -> 64 x
  // 56 x 56 1.43, 32 x 128 -> 512 x 28 x 28 1.27, 16 x 512 -> 256 x 14 x 14 1.83, 3-D 4 x
  // 32 -> 64 x 16 x 64 x 64 1.62. 128 x 128 (the earlier pick for 128+ channels) 0.79-1.23;
  // 128 x 64 tied on the wide images, 64 x 256 lost where K or the pixels are few,
  // 256 x 64 (3 stages) 0.51-1.20, 128 x 128 x 32 and 6 stages no better than 128 x 128.
  p["TILE"] = "64x128x16_32x64x16";
  p["num_stages"] = "4";
  return p;
}

}  // namespace kagent::rules
