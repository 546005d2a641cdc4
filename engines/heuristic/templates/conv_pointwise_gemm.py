# kagent-template: conv_pointwise_gemm
# A pointwise convolution (1-D, 2-D or 3-D; every kernel extent 1, stride 1, no padding,
# groups 1) on fp32 as one batched GEMM over the NC(D)HW tensors in place: for each image n,
# y[n] (K, P) = W (K, C) @ x[n] (C, P), P the pixels, all row-major, W's batch stride 0. No
# layout copy: the input is read and the output written in the reference's own layout
# (CUTLASS's channels-last convolutions copy both, which dominates a 1 x 1 convolution's
# time). On the tensor cores through 3xTF32 (CUTLASS 2.x GemmUniversal in batched mode,
# OpClassTensorOp, Sm80 kernels with OpMultiplyAddFastF32: each operand split into a high
# and a low TF32 part, three products summed in fp32), an error close to fp32's. A bias is
# added by a second pass over the output (torch's broadcast add). CUDA C++ built with
# torch.utils.cpp_extension.load_inline at import, for sm_90a, against the CUTLASS headers of
# the nvidia-cutlass package; the build directory is named by a hash of the sources and
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
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/device/gemm_universal.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"

namespace kagent_pointwise {

// TILE is "TBMxTBNxTBK_WMxWNxWK" (threadblock, then warp tile): M output channels, N pixels,
// K input channels.
{{> cuda_knob_number}}

constexpr char kTile[] = "{{TILE}}";
{{> cutlass_sm80_tile}}

// Elements per access of W's rows (input channels), x's and y's rows (pixels).
constexpr int kAlign = {{ALIGN}};

using Gemm = cutlass::gemm::device::GemmUniversal<
    float, cutlass::layout::RowMajor, float, cutlass::layout::RowMajor,
    float, cutlass::layout::RowMajor, float,
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, ThreadblockShape, WarpShape,
    cutlass::gemm::GemmShape<16, 8, 8>,
    cutlass::epilogue::thread::LinearCombination<float, kAlign, float, float>, Swizzle,
    /*Stages=*/{{num_stages}}, /*AlignmentA=*/kAlign, /*AlignmentB=*/kAlign,
    cutlass::arch::OpMultiplyAddFastF32>;
using GemmKernel = Gemm::GemmKernel;

static_assert(sizeof(GemmKernel::SharedStorage) <= 227 * 1024,
              "TILE x STAGES needs more shared memory than an sm_90 block has (227 KB)");

}  // namespace kagent_pointwise

// The kernel is the candidate's own (cutlass::Kernel's body): one threadblock tile of output
// channels x pixels of one image each.
__global__ void kagent_pointwise_gemm_kernel(kagent_pointwise::GemmKernel::Params params) {
  extern __shared__ int shared_storage[];
  kagent_pointwise::GemmKernel op;
  op(params, *reinterpret_cast<kagent_pointwise::GemmKernel::SharedStorage*>(shared_storage));
}

// y[n] (K, P) = w (K, C) @ x[n] (C, P) for n < batch, all row-major and contiguous, on
// `stream`. nullptr on success, else a static message.
const char* kagent_pointwise_gemm(const float* w, const float* x, float* y, int K, int P, int C,
                                  int batch, cudaStream_t stream) {
  using namespace kagent_pointwise;
  const cutlass::gemm::GemmCoord problem(K, P, C);
  cutlass::Status status = GemmKernel::can_implement(problem);
  if (status != cutlass::Status::kSuccess) return cutlass::cutlassGetStatusString(status);
  // Batched: the filter's batch stride is 0, every image reads the same W.
  Gemm::Arguments args(cutlass::gemm::GemmUniversalMode::kBatched, problem, batch,
                       {1.0f, 0.0f}, w, x, y, y, /*batch_stride_A=*/0, int64_t(C) * P,
                       int64_t(K) * P, int64_t(K) * P, /*lda=*/C, /*ldb=*/P, /*ldc=*/P,
                       /*ldd=*/P);
  // The SM count and occupancy are read by stream-K kernels only, not this one.
  GemmKernel::Params params(args, /*device_sms=*/0, /*sm_occupancy=*/0);
  const int smem = int(sizeof(GemmKernel::SharedStorage));
  static const cudaError_t attribute = cudaFuncSetAttribute(
      kagent_pointwise_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (attribute != cudaSuccess) return cudaGetErrorString(attribute);
  kagent_pointwise_gemm_kernel<<<params.get_grid_dims(), GemmKernel::kThreadCount, smem,
                                 stream>>>(params);
  cudaError_t launched = cudaGetLastError();
  return launched == cudaSuccess ? nullptr : cudaGetErrorString(launched);
}
"""

cpp_source = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>

const char* kagent_pointwise_gemm(const float* w, const float* x, float* y, int K, int P, int C,
                                  int batch, cudaStream_t stream);

// y (N, K, P) = w (K, C) @ x[n] (C, P) for every image n [+ bias (K) along K], fp32, x and w
// contiguous; the batch runs in chunks of at most 65535 images (a grid's z).
torch::Tensor pointwise(torch::Tensor x, torch::Tensor w, c10::optional<torch::Tensor> bias) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda(), "conv_pointwise_gemm: x and w must be CUDA tensors");
  TORCH_CHECK(x.scalar_type() == torch::kFloat && w.scalar_type() == torch::kFloat,
              "conv_pointwise_gemm: x and w must be float32");
  TORCH_CHECK(x.dim() == 3 && w.dim() == 2 && x.size(1) == w.size(1),
              "conv_pointwise_gemm: needs x (N, C, P) and w (K, C), got ", x.sizes(), " and ",
              w.sizes());
  TORCH_CHECK(x.is_contiguous() && w.is_contiguous(),
              "conv_pointwise_gemm: x and w must be contiguous");
  const int64_t N = x.size(0), C = x.size(1), P = x.size(2), K = w.size(0);
  TORCH_CHECK(C < (1LL << 31) && P < (1LL << 31) && K < (1LL << 31),
              "conv_pointwise_gemm: channels and pixels must fit in int");
  const int64_t align = {{ALIGN}};
  const int64_t bytes = align * 4;
  TORCH_CHECK(C % align == 0 && P % align == 0 &&
                  reinterpret_cast<uintptr_t>(x.data_ptr()) % bytes == 0 &&
                  reinterpret_cast<uintptr_t>(w.data_ptr()) % bytes == 0,
              "conv_pointwise_gemm: rendered for ", align, "-element accesses: C (", C,
              ") and the pixels (", P, ") must be multiples of it and x, w aligned to ", bytes,
              " bytes");
  c10::cuda::CUDAGuard guard(x.device());
  auto y = torch::empty({N, K, P}, x.options());
  if (N == 0 || K == 0 || P == 0) return y;
  if (C == 0) return y.zero_();
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  for (int64_t n0 = 0; n0 < N; n0 += 65535) {
    const int64_t n = std::min<int64_t>(65535, N - n0);
    const char* error = kagent_pointwise_gemm(
        w.data_ptr<float>(), x.data_ptr<float>() + n0 * C * P, y.data_ptr<float>() + n0 * K * P,
        int(K), int(P), int(C), int(n), stream);
    TORCH_CHECK(error == nullptr, "conv_pointwise_gemm: ", error);
  }
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->numel() == K && bias->scalar_type() == torch::kFloat,
                "conv_pointwise_gemm: the bias must be K float32 elements");
    y.add_(bias->reshape({1, K, 1}));
  }
  return y;
}
"""

cuda_cflags = ["-O3", "-std=c++20", "-DNDEBUG", "-gencode=arch=compute_90a,code=sm_90a"]


{{> cutlass_include}}


_ext = load_cutlass_extension("kagent_conv_pointwise_gemm_", cuda_source, cpp_source,
                              cuda_cflags, functions=["pointwise"])

_TEMPLATE = "conv_pointwise_gemm"

{{> conv_layer}}


class ModelNew(_ConvLayer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        conv = self.conv
        if (any(k != 1 for k in conv.kernel_size) or any(s != 1 for s in conv.stride) or
                any(p != 0 for p in conv.padding) or conv.groups != 1):
            raise NotImplementedError(f"{_TEMPLATE}: a 1 x 1 kernel, stride 1, no padding and "
                                      f"groups 1 only, the layer is {conv}")

    def forward(self, x):
        dims = self.dims
        if x.dim() == dims + 1:  # an unbatched input, as nn.Conv*d accepts it
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.dim() != dims + 2:
            raise ValueError(f"{_TEMPLATE}: a rank-{x.dim()} input to a {dims}-D conv")
        if x.dtype != torch.float32:
            raise TypeError(f"{_TEMPLATE}: rendered for torch.float32, the input is {x.dtype}")
        w = self.conv.weight
        n, c = x.shape[0], x.shape[1]
        # (N, C, P): a view of a contiguous input; a copy (contiguous, aligned) otherwise.
        x3 = x.reshape(n, c, -1)
        if not x3.is_contiguous() or x3.data_ptr() % ({{ALIGN}} * 4) != 0:
            x3 = x3.clone(memory_format=torch.contiguous_format)
        y3 = _ext.pointwise(x3, w.reshape(w.shape[0], c).contiguous(), self.conv.bias)
        return y3.reshape(n, w.shape[0], *x.shape[2:])
