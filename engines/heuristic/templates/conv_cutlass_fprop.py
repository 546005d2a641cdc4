# kagent-template: conv_cutlass_fprop
# A standard convolution (1-D, 2-D or 3-D, groups = 1, padding_mode zeros) as CUTLASS 2.x's
# implicit GEMM on the tensor cores (conv::kernel::ImplicitGemmConvolution, Fprop, Sm80
# multistage mainloop with the optimized activation iterator): output pixels are the GEMM's
# M, output channels its N, and the reduction runs over the filter taps times the input
# channels. fp32 through 3xTF32 (OpMultiplyAddFastF32: each operand split into a high and
# a low TF32 part, three products summed in fp32), bf16 and fp16 natively, all accumulated
# in fp32. Operands channels-last: the module's forward permutes the NC(D)HW input and the
# weight to N(D)HWC and K(T)RSC with contiguous copies (counted in its time) and returns the
# N(D)HWC result as an NC(D)HW view (channels-last strides, the values and the shape of
# the reference's). The bias is added in the epilogue (a stride-0 source tensor). A 1-D
# convolution runs as a 2-D one of height 1. CUDA C++ built with
# torch.utils.cpp_extension.load_inline at import, for sm_90a, against the CUTLASS headers
# of the nvidia-cutlass package; the build directory is named by a hash of the sources and
# flags, so identical renders reuse one build.
import hashlib
import importlib.util
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <cuda_runtime.h>

#include <cstdint>

#include "cutlass/cutlass.h"
#include "cutlass/conv/conv2d_problem_size.h"
#include "cutlass/conv/conv3d_problem_size.h"
#include "cutlass/conv/kernel/default_conv2d_fprop.h"
#include "cutlass/conv/kernel/default_conv3d_fprop.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"

namespace kagent_fprop {

// TILE is "TBMxTBNxTBK_WMxWNxWK" (threadblock, then warp tile).
{{> cuda_knob_number}}

constexpr char kTile[] = "{{TILE}}";
constexpr int kDims = {{DIMS}};
// Elements per 16-, 8- or 4-byte access of the channel dims (C of the input and the
// weight, K of the output): the largest that divides both channel counts, or with
// PAD_CHANNELS the input's channels zero-padded to exactly ALIGN.
constexpr int kAlign = {{ALIGN}};
// True: few input channels (a stem), padded to ALIGN by the forward, read by CUTLASS's
// fixed-channels iterators, which pack the ALIGN channels of several filter taps into each
// reduction step (C must equal ALIGN); False: the optimized iterators (C a multiple of
// ALIGN, one tap per step).
#define KAGENT_PAD_CHANNELS_{{PAD_CHANNELS}} 1
// FOLD_DEPTH True: a 3-D stem (fewer input channels than ALIGN) run as a 2-D convolution
// over (H, W): the forward folds the KD depth taps into the channels (C * KD, zero-padded
// to a multiple of ALIGN) and the batch and output depth into one dim; CUTLASS's
// few-channels iterators flatten (R, S, C) into the reduction, so the padded channels of
// several taps fill each reduction step. (CUTLASS 2.x has no fixed- or few-channels
// iterator for 3-D: the optimized one reads one tap of 16-byte channels per step.)
#define KAGENT_FOLD_DEPTH_{{FOLD_DEPTH}} 1
#if defined(KAGENT_PAD_CHANNELS_True)
constexpr auto kIterator = cutlass::conv::IteratorAlgorithm::kFixedChannels;
#elif defined(KAGENT_FOLD_DEPTH_True)
constexpr auto kIterator = cutlass::conv::IteratorAlgorithm::kFewChannels;
#else
constexpr auto kIterator = cutlass::conv::IteratorAlgorithm::kOptimized;
#endif
#if defined(KAGENT_FOLD_DEPTH_True) && {{DIMS}} != 3
#error "FOLD_DEPTH folds a 3-D convolution's depth taps (DIMS 3 only)"
#endif

#define KAGENT_DTYPE_{{DTYPE}} 1
#if defined(KAGENT_DTYPE_float32)
using Element = float;
using MathOp = cutlass::arch::OpMultiplyAddFastF32;  // 3xTF32
using Instruction = cutlass::gemm::GemmShape<16, 8, 8>;
#elif defined(KAGENT_DTYPE_bfloat16)
using Element = cutlass::bfloat16_t;
using MathOp = cutlass::arch::OpMultiplyAdd;
using Instruction = cutlass::gemm::GemmShape<16, 8, 16>;
#else
using Element = cutlass::half_t;
using MathOp = cutlass::arch::OpMultiplyAdd;
using Instruction = cutlass::gemm::GemmShape<16, 8, 16>;
#endif

{{> cutlass_sm80_tile}}
static_assert(ThreadblockShape::kK % Instruction::kK == 0 && WarpShape::kK == ThreadblockShape::kK,
              "TILE's K must be a multiple of the instruction's (8 fp32, 16 bf16/fp16)");
// D = acc + bias (beta 1 with a stride-0 bias as the source), or acc (beta 0: no source).
using Epilogue = cutlass::epilogue::thread::LinearCombination<Element, kAlign, float, float>;

#if {{DIMS}} == 3 && !defined(KAGENT_FOLD_DEPTH_True)
static_assert(kIterator == cutlass::conv::IteratorAlgorithm::kOptimized,
              "CUTLASS's fixed-channels iterators are 2-D only (PAD_CHANNELS False for 3-D)");
static_assert(kAlign * cutlass::sizeof_bits<Element>::value == 128,
              "CUTLASS's 3-D fprop reads 16-byte channel accesses (ALIGN 4 fp32, 8 16-bit)");
using Layout = cutlass::layout::TensorNDHWC;
using ProblemSize = cutlass::conv::Conv3dProblemSize;
using Kernel = typename cutlass::conv::kernel::DefaultConv3dFprop<
    Element, Layout, Element, Layout, Element, Layout, float, cutlass::arch::OpClassTensorOp,
    cutlass::arch::Sm80, ThreadblockShape, WarpShape, Instruction, Epilogue, Swizzle,
    /*Stages=*/{{num_stages}}, MathOp, cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel;
#else
using Layout = cutlass::layout::TensorNHWC;
using ProblemSize = cutlass::conv::Conv2dProblemSize;
using Kernel = typename cutlass::conv::kernel::DefaultConv2dFprop<
    Element, Layout, Element, Layout, Element, Layout, float, cutlass::arch::OpClassTensorOp,
    cutlass::arch::Sm80, ThreadblockShape, WarpShape, Instruction, Epilogue, Swizzle,
    /*Stages=*/{{num_stages}}, MathOp, kIterator, cutlass::conv::StrideSupport::kStrided, kAlign,
    kAlign>::Kernel;
#endif

static_assert(sizeof(Kernel::SharedStorage) <= 227 * 1024,
              "TILE x STAGES needs more shared memory than an sm_90 block has (227 KB)");

// The problem of one batch chunk: dims[] is N, D, H, W, C, K, T, R, S, Z, P, Q (input
// batch, depth, height, width and channels; output channels; filter depth, height, width;
// output depth, height, width), conv[] is pad_d, pad_h, pad_w, stride_d, stride_h,
// stride_w, dil_d, dil_h, dil_w. A 2-D problem ignores the depth entries.
ProblemSize MakeProblem(const int* d, const int* c) {
#if {{DIMS}} == 3 && !defined(KAGENT_FOLD_DEPTH_True)
  return ProblemSize(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11],
                     c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8],
                     cutlass::conv::Mode::kCrossCorrelation);
#else
  return ProblemSize(d[0], d[2], d[3], d[4], d[5], d[7], d[8], d[10], d[11], c[1], c[2], c[4],
                     c[5], c[7], c[8], cutlass::conv::Mode::kCrossCorrelation);
#endif
}

}  // namespace kagent_fprop

// The kernel is the candidate's own (cutlass::Kernel's body): one threadblock tile of output
// pixels x output channels each.
__global__ void kagent_conv_fprop_kernel(kagent_fprop::Kernel::Params params) {
  extern __shared__ int shared_storage[];
  kagent_fprop::Kernel op;
  op(params, *reinterpret_cast<kagent_fprop::Kernel::SharedStorage*>(shared_storage));
}

// y (N(D)HWC, output) = conv(x (N(D)HWC), w (K(T)RSC)) [+ bias (K)] for one batch chunk, on
// `stream`; dims and conv as MakeProblem's. nullptr on success, else a static message.
const char* kagent_conv_fprop(const void* x, const void* w, const void* bias, void* y,
                              const int* dims, const int* conv, cudaStream_t stream) {
  using namespace kagent_fprop;
  const ProblemSize problem = MakeProblem(dims, conv);
  using TensorRef = cutlass::TensorRef<Element, Layout>;
  auto packed = [](const void* p, const auto& extent) {
    return TensorRef(static_cast<Element*>(const_cast<void*>(p)), Layout::packed(extent));
  };
  const TensorRef ref_x = packed(x, cutlass::conv::implicit_gemm_tensor_a_extent(
                                        cutlass::conv::Operator::kFprop, problem));
  const TensorRef ref_w = packed(w, cutlass::conv::implicit_gemm_tensor_b_extent(
                                        cutlass::conv::Operator::kFprop, problem));
  const TensorRef ref_y = packed(y, cutlass::conv::implicit_gemm_tensor_c_extent(
                                        cutlass::conv::Operator::kFprop, problem));
  // The bias as a source of stride 0: element (n, ..., k) reads bias[k].
  const TensorRef ref_bias(static_cast<Element*>(const_cast<void*>(bias)),
                           Layout(Layout::Stride(0)));
  typename Kernel::Arguments args(problem, ref_x, ref_w, bias ? ref_bias : ref_y, ref_y,
                                  {1.0f, bias ? 1.0f : 0.0f});
  // What ImplicitGemmConvolution::can_implement checks besides the iterators: the
  // epilogue's accesses of the output channels (the batch chunks keep the sizes in range).
  if (problem.K % kAlign != 0) return "output channels not a multiple of ALIGN";
  cutlass::Status status = Kernel::Mma::IteratorA::can_implement(problem);
  if (status == cutlass::Status::kSuccess) status = Kernel::Mma::IteratorB::can_implement(problem);
  if (status != cutlass::Status::kSuccess) return cutlass::cutlassGetStatusString(status);
  Kernel::Params params(args, nullptr);
  const int smem = int(sizeof(Kernel::SharedStorage));
  static const cudaError_t attribute = cudaFuncSetAttribute(
      kagent_conv_fprop_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (attribute != cudaSuccess) return cudaGetErrorString(attribute);
  Swizzle swizzle;
  kagent_conv_fprop_kernel<<<swizzle.get_grid_shape(params.grid_tiled_shape),
                             Kernel::kThreadCount, smem, stream>>>(params);
  cudaError_t launched = cudaGetLastError();
  return launched == cudaSuccess ? nullptr : cudaGetErrorString(launched);
}
"""

cpp_source = r"""
#define KAGENT_CONV_TEMPLATE "conv_cutlass_fprop"
{{> conv_channels_last_wrapper}}
"""

cuda_cflags = ["-O3", "-std=c++20", "-DNDEBUG", "-gencode=arch=compute_90a,code=sm_90a"]


{{> cutlass_include}}


_ext = load_cutlass_extension("kagent_conv_cutlass_fprop_", cuda_source, cpp_source,
                              cuda_cflags, functions=["conv"])

_TEMPLATE = "conv_cutlass_fprop"
# The forward pads the input channels (and the weight's) with zeros to this many (0: none).
_PAD_CHANNELS_TO = {{ALIGN}} if {{PAD_CHANNELS}} else 0
# The forward folds a 3-D convolution's depth taps into the channels, padded to a multiple
# of this many (0: no folding).
_FOLD_DEPTH_ALIGN = {{ALIGN}} if {{FOLD_DEPTH}} else 0

{{> conv_layer}}


{{> conv_channels_last_module}}
