# kagent-template: conv_sm90_fprop
# A standard 16-bit convolution (1-D, 2-D or 3-D, groups = 1, padding_mode zeros) as
# CUTLASS 3.x's Hopper implicit GEMM (conv::kernel::ConvUniversal over the SM90 TMA
# warp-specialized mainloop: TMA im2col loads of the activations, wgmma on the tensor
# cores, fp32 accumulation, a TMA epilogue adding the bias per output channel). Output
# pixels are the GEMM's M, output channels its N, the reduction runs over the filter taps
# times the input channels. Operands channels-last: the module's forward permutes the
# NC(D)HW input and the weight to N(D)HWC and K(T)RSC with contiguous copies (counted in its
# time) and returns the N(D)HWC result as an NC(D)HW view (a 1-D convolution reaches the
# kernel as NWC). CUDA C++ built with torch.utils.cpp_extension.load_inline at import,
# for sm_90a, against the CUTLASS headers of the nvidia-cutlass package; the build
# directory is named by a hash of the sources and flags, so identical renders reuse one
# build.
import hashlib
import importlib.util
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <cuda_runtime.h>

#include <type_traits>

#include "cute/tensor.hpp"
#include "cutlass/bfloat16.h"
#include "cutlass/kernel_hardware_info.h"
#include "cutlass/conv/collective/collective_builder.hpp"
#include "cutlass/conv/convnd_problem_shape.hpp"
#include "cutlass/conv/dispatch_policy.hpp"
#include "cutlass/conv/kernel/conv_universal.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/half.h"
#include "cutlass/kernel_hardware_info.h"

namespace kagent_sm90_conv {

{{> cuda_knob_number}}

constexpr char kTile[] = "{{TILE}}";
constexpr char kCluster[] = "{{CLUSTER}}";
constexpr char kDtype[] = "{{DTYPE}}";
constexpr bool kBias = "{{BIAS}}"[0] == 'T';
constexpr int kClusterM = KnobNumber(kCluster, 0);
constexpr int kClusterN = KnobNumber(kCluster, 1);
static_assert(KnobNumber(kTile, 2) % 16 == 0, "TILE's K must be a multiple of 16 (16-bit wgmma)");
using Element = std::conditional_t<kDtype[0] == 'b', cutlass::bfloat16_t, cutlass::half_t>;
// TMA moves 16-byte rows of channels: 8 elements.
constexpr int kAlignment = 8;
#if {{DIMS}} == 3
using Layout = cutlass::layout::TensorNDHWC;
#elif {{DIMS}} == 2
using Layout = cutlass::layout::TensorNHWC;
#else
using Layout = cutlass::layout::TensorNWC;  // TMA's im2col takes no unit height
#endif
using TileShape = cute::Shape<cute::Int<KnobNumber(kTile, 0)>, cute::Int<KnobNumber(kTile, 1)>,
                              cute::Shape<cute::Int<KnobNumber(kTile, 2)>>>;
using ClusterShape = cute::Shape<cute::Int<kClusterM>, cute::Int<kClusterN>, cute::_1>;
// D = acc (+ bias[k], a per-output-channel broadcast); no source tensor C.
using Fusion = std::conditional_t<
    kBias, cutlass::epilogue::fusion::LinCombPerColBias<Element, float, Element, Element, float>,
    cutlass::epilogue::fusion::LinearCombination<Element, float, Element, float>>;
using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, Layout, kAlignment,
    Element, Layout, kAlignment, cutlass::epilogue::TmaWarpSpecialized, Fusion>::CollectiveOp;
using CollectiveMainloop = typename cutlass::conv::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cutlass::conv::Operator::kFprop,
    Element, Layout, kAlignment, Element, Layout, kAlignment, float, TileShape, ClusterShape,
    cutlass::conv::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    cutlass::conv::KernelImplicitTmaWarpSpecializedSm90>::CollectiveOp;
using ProblemShape =
    cutlass::conv::ConvProblemShape<cutlass::conv::Operator::kFprop,
                                    CollectiveMainloop::DispatchPolicy::NumSpatialDimensions>;
using GemmKernel =
    cutlass::conv::kernel::ConvUniversal<ProblemShape, CollectiveMainloop, CollectiveEpilogue>;

{{> sm90_gemm_launch}}

// The bias of the epilogue's fusion (LinCombPerColBias), when the layer has one.
template <class FusionArguments>
void SetBias(FusionArguments& thread, const void* bias) {
  if constexpr (kBias) thread.bias_ptr = static_cast<const Element*>(bias);
}

// The kernel's arguments for one batch chunk (dims and conv as in kagent_conv_fprop).
typename GemmKernel::Arguments MakeArguments(const void* x, const void* w, const void* bias,
                                             void* y, const int* d, const int* c) {
#if {{DIMS}} == 3
  ProblemShape problem(cutlass::conv::Mode::kCrossCorrelation, {d[0], d[1], d[2], d[3], d[4]},
                       {d[5], d[6], d[7], d[8], d[4]}, {c[0], c[1], c[2]}, {c[0], c[1], c[2]},
                       {c[3], c[4], c[5]}, {c[6], c[7], c[8]}, 1);
#elif {{DIMS}} == 2
  ProblemShape problem(cutlass::conv::Mode::kCrossCorrelation, {d[0], d[2], d[3], d[4]},
                       {d[5], d[7], d[8], d[4]}, {c[1], c[2]}, {c[1], c[2]}, {c[4], c[5]},
                       {c[7], c[8]}, 1);
#else
  ProblemShape problem(cutlass::conv::Mode::kCrossCorrelation, {d[0], d[3], d[4]},
                       {d[5], d[8], d[4]}, {c[2]}, {c[2]}, {c[5]}, {c[8]}, 1);
#endif
  typename GemmKernel::StrideD stride_d;
  cute::for_each(cute::make_seq<cute::rank<0>(typename GemmKernel::StrideD{})>{}, [&](auto i) {
    cute::get<0, i>(stride_d) = problem.stride_C[ProblemShape::RankT - 2 - i];
  });
  typename GemmKernel::Arguments args{
      problem,
      {static_cast<const Element*>(x), static_cast<const Element*>(w)},
      { {}, nullptr, typename GemmKernel::StrideC{}, static_cast<Element*>(y), stride_d } };
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  SetBias(args.epilogue.thread, bias);
  return args;
}

}  // namespace kagent_sm90_conv

// The CUTLASS kernel's body, as the candidate's own kernel (cutlass::device_kernel's).
__global__ __launch_bounds__(kagent_sm90_conv::GemmKernel::MaxThreadsPerBlock,
                             kagent_sm90_conv::GemmKernel::MinBlocksPerMultiprocessor)
void kagent_conv_sm90_kernel(const __grid_constant__ kagent_sm90_conv::GemmKernel::Params params) {
  extern __shared__ char shared_storage[];
  kagent_sm90_conv::GemmKernel op;
  op(params, shared_storage);
}

// y (N(D)HWC) = conv(x (N(D)HWC), w (K(T)RSC)) [+ bias (K)] for one batch chunk, on `stream`.
// dims[] is N, D, H, W, C, K, T, R, S, Z, P, Q; conv[] pad_d, pad_h, pad_w, stride_d,
// stride_h, stride_w, dil_d, dil_h, dil_w (a 2-D problem ignores the depth entries).
// nullptr on success, else a static message.
const char* kagent_conv_fprop(const void* x, const void* w, const void* bias, void* y,
                              const int* dims, const int* conv, cudaStream_t stream) {
  using namespace kagent_sm90_conv;
  auto args = MakeArguments(x, w, bias, y, dims, conv);
  if (GemmKernel::get_workspace_size(args) != 0) return "the kernel asks for a workspace";
  return LaunchGemm<GemmKernel>(kagent_conv_sm90_kernel, args, nullptr, stream);
}
"""

cpp_source = r"""
#define KAGENT_CONV_TEMPLATE "conv_sm90_fprop"
{{> conv_channels_last_wrapper}}
"""

cuda_cflags = ["-O3", "-std=c++20", "-DNDEBUG", "-gencode=arch=compute_90a,code=sm_90a"]


{{> cutlass_include}}


_ext = load_cutlass_extension("kagent_conv_sm90_fprop_", cuda_source, cpp_source,
                              cuda_cflags, functions=["conv"])

_TEMPLATE = "conv_sm90_fprop"
_PAD_CHANNELS_TO = 0  # the channels as they are (multiples of 8: TMA's 16-byte rows)
_FOLD_DEPTH_ALIGN = 0  # no folding (a 3-D convolution runs as one)

{{> conv_layer}}


{{> conv_channels_last_module}}
