# CUDA C++ candidate through torch.utils.cpp_extension.load_inline (language "cuda"):
# one warp per row, fp32 accumulation, warp-shuffle reduction. Built at import (needs
# nvcc and ninja), so it runs on a GPU machine only.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_bf16.h>

__global__ void matvec_warp_kernel(const __nv_bfloat16* __restrict__ A,
                                   const __nv_bfloat16* __restrict__ x,
                                   __nv_bfloat16* __restrict__ c, long M, long K) {
  long row = (long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= M) return;
  const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(A + row * K);
  const __nv_bfloat162* x2 = reinterpret_cast<const __nv_bfloat162*>(x);
  float acc = 0.f;
  for (long k = lane; k < K / 2; k += 32) {
    float2 av = __bfloat1622float2(a2[k]);
    float2 xv = __bfloat1622float2(x2[k]);
    acc += av.x * xv.x + av.y * xv.y;
  }
  if ((K & 1) && lane == 0) acc += __bfloat162float(A[row * K + K - 1]) * __bfloat162float(x[K - 1]);
  for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffff, acc, off);
  if (lane == 0) c[row] = __float2bfloat16(acc);
}

torch::Tensor matvec(torch::Tensor A, torch::Tensor x) {
  A = A.contiguous();
  x = x.contiguous();
  long M = A.size(0), K = A.size(1);
  auto c = torch::empty({M, 1}, A.options());
  const int warps = 8;
  dim3 grid((M + warps - 1) / warps);
  matvec_warp_kernel<<<grid, warps * 32, 0, at::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<const __nv_bfloat16*>(A.data_ptr<at::BFloat16>()),
      reinterpret_cast<const __nv_bfloat16*>(x.data_ptr<at::BFloat16>()),
      reinterpret_cast<__nv_bfloat16*>(c.data_ptr<at::BFloat16>()), M, K);
  return c;
}
"""

_ext = load_inline(name="kagent_matvec_cuda",
                   cpp_sources="torch::Tensor matvec(torch::Tensor A, torch::Tensor x);",
                   cuda_sources=cuda_source, functions=["matvec"],
                   extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, x):
        return _ext.matvec(A, x)
