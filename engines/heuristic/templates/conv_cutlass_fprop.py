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
// weight, K of the output): the largest that divides both channel counts.
constexpr int kAlign = {{ALIGN}};

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

using ThreadblockShape = cutlass::gemm::GemmShape<KnobNumber(kTile, 0), KnobNumber(kTile, 1),
                                                  KnobNumber(kTile, 2)>;
using WarpShape = cutlass::gemm::GemmShape<KnobNumber(kTile, 3), KnobNumber(kTile, 4),
                                           KnobNumber(kTile, 5)>;
static_assert(ThreadblockShape::kK % Instruction::kK == 0 && WarpShape::kK == ThreadblockShape::kK,
              "TILE's K must be a multiple of the tensor-core instruction's (8 fp32, 16 bf16/fp16)");
// D = acc + bias (beta 1 with a stride-0 bias as the source), or acc (beta 0: no source).
using Epilogue = cutlass::epilogue::thread::LinearCombination<Element, kAlign, float, float>;
using Swizzle = cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<{{SWIZZLE}}>;

#if {{DIMS}} == 3
static_assert(kAlign * cutlass::sizeof_bits<Element>::value == 128,
              "CUTLASS's 3-D fprop reads channels in 16-byte accesses only (ALIGN 4 fp32, 8 16-bit)");
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
    /*Stages=*/{{num_stages}}, MathOp, cutlass::conv::IteratorAlgorithm::kOptimized,
    cutlass::conv::StrideSupport::kStrided, kAlign, kAlign>::Kernel;
#endif

static_assert(sizeof(Kernel::SharedStorage) <= 227 * 1024,
              "TILE x STAGES needs more shared memory than an sm_90 block has (227 KB)");

// The problem of one batch chunk: dims[] is N, D, H, W, C, K, T, R, S, Z, P, Q (input
// batch, depth, height, width and channels; output channels; filter depth, height, width;
// output depth, height, width), conv[] is pad_d, pad_h, pad_w, stride_d, stride_h,
// stride_w, dil_d, dil_h, dil_w. A 2-D problem ignores the depth entries.
ProblemSize MakeProblem(const int* d, const int* c) {
#if {{DIMS}} == 3
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
  const TensorRef ref_bias(static_cast<Element*>(const_cast<void*>(bias)), Layout(Layout::Stride(0)));
  typename Kernel::Arguments args(problem, ref_x, ref_w, bias ? ref_bias : ref_y, ref_y,
                                  {1.0f, bias ? 1.0f : 0.0f});
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
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <vector>

const char* kagent_conv_fprop(const void* x, const void* w, const void* bias, void* y,
                              const int* dims, const int* conv, cudaStream_t stream);

// y (N, Z, P, Q, K) = conv(x (N, D, H, W, C), w (K, T, R, S, C)) [+ bias (K)], all
// contiguous channels-last of the module's dtype; a 2-D conv passes D = T = Z = 1.
// geometry: pad_d, pad_h, pad_w, stride_d, stride_h, stride_w, dil_d, dil_h, dil_w.
torch::Tensor conv(torch::Tensor x, torch::Tensor w, c10::optional<torch::Tensor> bias,
                   std::vector<int64_t> geometry) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda(), "conv_cutlass_fprop: x and w must be CUDA tensors");
  TORCH_CHECK(x.dim() == 5 && w.dim() == 5 && x.size(4) == w.size(4) && geometry.size() == 9,
              "conv_cutlass_fprop: needs x (N, D, H, W, C), w (K, T, R, S, C) and 9 "
              "geometry values, got ", x.sizes(), ", ", w.sizes());
  TORCH_CHECK(x.scalar_type() == w.scalar_type(), "conv_cutlass_fprop: x and w differ in dtype");
  TORCH_CHECK(x.is_contiguous() && w.is_contiguous(), "conv_cutlass_fprop: x and w must be contiguous");
  const int64_t N = x.size(0), K = w.size(0);
  int64_t out[3];
  for (int i = 0; i < 3; ++i) {
    const int64_t in = x.size(1 + i), k = w.size(1 + i);
    out[i] = (in + 2 * geometry[i] - geometry[6 + i] * (k - 1) - 1) / geometry[3 + i] + 1;
    TORCH_CHECK(out[i] > 0, "conv_cutlass_fprop: an empty output along spatial dim ", i);
  }
  auto y = torch::empty({N, out[0], out[1], out[2], K}, x.options());
  if (N == 0 || K == 0) return y;
  TORCH_CHECK(x.size(4) > 0, "conv_cutlass_fprop: no input channels");
  const void* b = nullptr;
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->is_contiguous() && bias->numel() == K &&
                    bias->scalar_type() == x.scalar_type(),
                "conv_cutlass_fprop: the bias must be K contiguous elements of x's dtype");
    b = bias->data_ptr();
  }
  // CUTLASS's iterators address a tensor with 32-bit offsets (its can_implement refuses
  // 2 GiB or more): the batch runs in chunks that keep the input and output below that.
  const int64_t per_in = x.numel() / N * x.element_size(), per_out = y.numel() / N * y.element_size();
  const int64_t limit = (int64_t(1) << 31) - 1;
  TORCH_CHECK(w.numel() * w.element_size() <= limit && per_in <= limit && per_out <= limit,
              "conv_cutlass_fprop: one image or the filter holds 2 GiB or more");
  const int64_t chunk = std::max<int64_t>(1, std::min(limit / per_in, limit / per_out));
  c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  int conv[9];
  for (int i = 0; i < 9; ++i) conv[i] = int(geometry[i]);
  const char* base_x = static_cast<const char*>(x.data_ptr());
  char* base_y = static_cast<char*>(y.data_ptr());
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t n = std::min(chunk, N - n0);
    const int dims[12] = {int(n), int(x.size(1)), int(x.size(2)), int(x.size(3)), int(x.size(4)),
                          int(K), int(w.size(1)), int(w.size(2)), int(w.size(3)),
                          int(out[0]), int(out[1]), int(out[2])};
    const char* error = kagent_conv_fprop(base_x + n0 * per_in, w.data_ptr(), b,
                                          base_y + n0 * per_out, dims, conv, stream);
    TORCH_CHECK(error == nullptr, "conv_cutlass_fprop: ", error);
  }
  return y;
}
"""

cuda_cflags = ["-O3", "-std=c++20", "-DNDEBUG", "-gencode=arch=compute_90a,code=sm_90a"]


{{> cutlass_include}}


_ext = load_cutlass_extension("kagent_conv_cutlass_fprop_", cuda_source, cpp_source,
                              cuda_cflags, functions=["conv"])

_DTYPE = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _per_dim(dims, d, h, w):
    """The module's per-dim value: an int for Conv1d, an (H, W) or (D, H, W) tuple."""
    return (w,) if dims == 1 else (h, w) if dims == 2 else (d, h, w)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # The layer comes from the params alone (CTOR recorded: channels, kernel, stride,
        # padding, dilation and bias as the recorded aten::convolution had them), whatever
        # the order of the reference's constructor, and is built as the reference's, so the
        # same seed gives the same weights (stride and the like draw nothing).
        dims = {{DIMS}}
        self.dims = dims
        if kwargs.get("padding_mode", "zeros") != "zeros":
            raise NotImplementedError("conv_cutlass_fprop: only padding_mode='zeros'")
        module = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[dims]
        self.conv = module(
            {{IN_CHANNELS}}, {{OUT_CHANNELS}},
            _per_dim(dims, {{KERNEL_D}}, {{KERNEL_H}}, {{KERNEL_W}}),
            stride=_per_dim(dims, {{STRIDE_D}}, {{STRIDE_H}}, {{STRIDE_W}}),
            padding=_per_dim(dims, {{PADDING_D}}, {{PADDING_H}}, {{PADDING_W}}),
            dilation=_per_dim(dims, {{DILATION_D}}, {{DILATION_H}}, {{DILATION_W}}),
            bias={{BIAS}})
        # The geometry the kernel takes: padding, stride, dilation as (D, H, W), the
        # missing leading dims unit.
        lead = 3 - dims
        self.geometry = ([0] * lead + list(self.conv.padding) + [1] * lead +
                         list(self.conv.stride) + [1] * lead + list(self.conv.dilation))

    def forward(self, x):
        dims = self.dims
        if x.dim() == dims + 1:  # an unbatched input, as nn.Conv*d accepts it
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.dim() != dims + 2:
            raise ValueError(f"conv_cutlass_fprop: a rank-{x.dim()} input to a {dims}-D conv")
        dtype = _DTYPE["{{DTYPE}}"]
        if x.dtype != dtype:
            raise TypeError(f"conv_cutlass_fprop: rendered for {dtype}, the input is {x.dtype}")
        w = self.conv.weight
        bias = self.conv.bias
        if w.dtype != dtype:
            w = w.to(dtype)
            bias = bias.to(dtype) if bias is not None else None
        # Channels last, as 5-D (N, D, H, W, C) and (K, T, R, S, C) with unit leading dims.
        lead = (1,) * (3 - dims)
        x5 = x.reshape(x.shape[0], x.shape[1], *lead, *x.shape[2:])
        w5 = w.reshape(w.shape[0], w.shape[1], *lead, *w.shape[2:])
        y5 = _ext.conv(x5.permute(0, 2, 3, 4, 1).contiguous(),
                       w5.permute(0, 2, 3, 4, 1).contiguous(), bias, self.geometry)
        # (N, Z, P, Q, K) back to the reference's (N, K, *spatial) as a view.
        y = y5.permute(0, 4, 1, 2, 3)
        return y.reshape(y.shape[0], y.shape[1], *y.shape[2 + 3 - dims:]) if dims < 3 else y
