# kagent-template: gemm_cutlass_tf32x3
# C = A @ B for 2-D row-major contiguous fp32 A (M, K) and B (K, N) on the tensor cores
# through 3xTF32 (CUTLASS 2.x cutlass::gemm::device::Gemm, OpClassTensorOp, Sm80 kernels
# with OpMultiplyAddFastF32: each operand split into a high and a low TF32 part, three
# products summed in fp32), an error close to fp32's. CUDA C++ built with
# torch.utils.cpp_extension.load_inline at import, for sm_90a, against the CUTLASS headers
# of the nvidia-cutlass package; the build directory is named by a hash of the sources
# and flags, so identical renders reuse one build (in one extensions directory).
import hashlib
import importlib.util
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <cuda_runtime.h>

#include "cutlass/cutlass.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/device/gemm.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"

namespace kagent_tf32x3 {

// TILE is "TBMxTBNxTBK_WMxWNxWK" (threadblock, then warp tile).
{{> cuda_knob_number}}

constexpr char kTile[] = "{{TILE}}";
using ThreadblockShape = cutlass::gemm::GemmShape<KnobNumber(kTile, 0), KnobNumber(kTile, 1),
                                                  KnobNumber(kTile, 2)>;
using WarpShape = cutlass::gemm::GemmShape<KnobNumber(kTile, 3), KnobNumber(kTile, 4),
                                           KnobNumber(kTile, 5)>;
using Swizzle = cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<{{SWIZZLE}}>;
using Gemm = cutlass::gemm::device::Gemm<
    float, cutlass::layout::RowMajor, float, cutlass::layout::RowMajor,
    float, cutlass::layout::RowMajor, float,
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, ThreadblockShape, WarpShape,
    cutlass::gemm::GemmShape<16, 8, 8>,
    cutlass::epilogue::thread::LinearCombination<float, 4, float, float>, Swizzle,
    /*Stages=*/{{num_stages}}, /*AlignmentA=*/4, /*AlignmentB=*/4, /*SplitKSerial=*/false,
    cutlass::arch::OpMultiplyAddFastF32>;
using GemmKernel = Gemm::GemmKernel;

static_assert(sizeof(GemmKernel::SharedStorage) <= 227 * 1024,
              "TILE x STAGES needs more shared memory than an sm_90 block has (227 KB)");

}  // namespace kagent_tf32x3

// The kernel is the candidate's own (cutlass::Kernel's body): one threadblock tile each.
__global__ void kagent_gemm_tf32x3_kernel(kagent_tf32x3::GemmKernel::Params params) {
  extern __shared__ int shared_storage[];
  kagent_tf32x3::GemmKernel op;
  op(params, *reinterpret_cast<kagent_tf32x3::GemmKernel::SharedStorage*>(shared_storage));
}

// C (M, N) = A (M, K) @ B (K, N), all row-major and contiguous, on `stream`. nullptr on
// success, else a static message.
const char* kagent_gemm_tf32x3(const float* A, const float* B, float* C, int M, int N, int K,
                               cudaStream_t stream) {
  using namespace kagent_tf32x3;
  cutlass::gemm::GemmCoord problem(M, N, K);
  Gemm::Arguments args(problem, {A, K}, {B, N}, {C, N}, {C, N}, {1.0f, 0.0f});
  cutlass::Status status = Gemm::can_implement(args);
  if (status != cutlass::Status::kSuccess) return cutlass::cutlassGetStatusString(status);
  Swizzle swizzle;
  cutlass::gemm::GemmCoord tiles = swizzle.get_tiled_shape(
      problem, {ThreadblockShape::kM, ThreadblockShape::kN, ThreadblockShape::kK}, 1);
  GemmKernel::Params params(problem, tiles, args.ref_A.non_const_ref(),
                            args.ref_B.non_const_ref(), args.ref_C.non_const_ref(), args.ref_D,
                            args.epilogue);
  const int smem = int(sizeof(GemmKernel::SharedStorage));
  static const cudaError_t attribute = cudaFuncSetAttribute(
      kagent_gemm_tf32x3_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (attribute != cudaSuccess) return cudaGetErrorString(attribute);
  kagent_gemm_tf32x3_kernel<<<swizzle.get_grid_shape(tiles), GemmKernel::kThreadCount, smem,
                              stream>>>(params);
  cudaError_t launched = cudaGetLastError();
  return launched == cudaSuccess ? nullptr : cudaGetErrorString(launched);
}
"""

cpp_source = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

const char* kagent_gemm_tf32x3(const float* A, const float* B, float* C, int M, int N, int K,
                               cudaStream_t stream);

torch::Tensor gemm(torch::Tensor A, torch::Tensor B) {
  TORCH_CHECK(A.is_cuda() && B.is_cuda(), "gemm_cutlass_tf32x3: A and B must be CUDA tensors");
  TORCH_CHECK(A.scalar_type() == torch::kFloat && B.scalar_type() == torch::kFloat,
              "gemm_cutlass_tf32x3: A and B must be float32");
  TORCH_CHECK(A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0),
              "gemm_cutlass_tf32x3: needs 2-D A (M, K) and B (K, N), got ", A.sizes(), " and ",
              B.sizes());
  TORCH_CHECK(A.is_contiguous() && B.is_contiguous(),
              "gemm_cutlass_tf32x3: A and B must be row-major contiguous");
  const int64_t M = A.size(0), K = A.size(1), N = B.size(1);
  TORCH_CHECK(M < (1LL << 31) && N < (1LL << 31) && K < (1LL << 31),
              "gemm_cutlass_tf32x3: dims must fit in int");
  TORCH_CHECK(K % 4 == 0 && N % 4 == 0,
              "gemm_cutlass_tf32x3: K and N must be multiples of 4 (16-byte rows), got K=", K,
              " N=", N);
  c10::cuda::CUDAGuard guard(A.device());
  auto C = torch::empty({M, N}, A.options());
  if (M == 0 || N == 0) return C;
  if (K == 0) return C.zero_();
  const char* error = kagent_gemm_tf32x3(A.data_ptr<float>(), B.data_ptr<float>(),
                                         C.data_ptr<float>(), int(M), int(N), int(K),
                                         at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(error == nullptr, "gemm_cutlass_tf32x3: ", error);
  return C;
}
"""

cuda_cflags = ["-O3", "-std=c++20", "-DNDEBUG", "-gencode=arch=compute_90a,code=sm_90a"]


{{> cutlass_include}}


_ext = load_cutlass_extension("kagent_gemm_cutlass_tf32x3_", cuda_source, cpp_source,
                              cuda_cflags)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, A, B):
        if A.dim() == 3 and B.dim() == 2:
            # torch.matmul's 3-D A times a 2-D B: one product of A's rows (a view when A
            # is contiguous, as the module needs), which the reference records as aten::mm.
            return _ext.gemm(A.reshape(-1, A.shape[-1]), B).reshape(*A.shape[:-1], B.shape[1])
        return _ext.gemm(A, B)
