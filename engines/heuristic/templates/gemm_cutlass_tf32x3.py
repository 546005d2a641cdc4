# kagent-template: gemm_cutlass_tf32x3
# C = A @ B for fp32 operands, 2-D (M, K) @ (K, N) or batched (L, M, K) @ (L, K, N), each
# operand row-major or transposed (read through its storage order: A_EXPR / B_EXPR are
# A.mT / B.mT when the reference transposes it, compiled as a column-major layout, no copy),
# on the tensor cores through 3xTF32 (CUTLASS 2.x GemmUniversal, OpClassTensorOp, Sm80
# kernels with OpMultiplyAddFastF32: each operand split into a high and a low TF32 part,
# three products summed in fp32), an error close to fp32's. A 2-D product's K can be cut
# into SPLIT_K slices reduced in order into C (serial split-K), for small outputs over a
# long K. TRIANGLE keeps torch.triu / torch.tril of the product (DIAGONAL as theirs): a
# threadblock tile wholly outside the kept triangle computes nothing, and one small kernel
# writes the zeros. CUDA C++ built with torch.utils.cpp_extension.load_inline at import,
# for sm_90a, against the CUTLASS headers of the nvidia-cutlass package; the build directory
# is named by a hash of the sources and flags, so identical renders reuse one build (in one
# extensions directory).
import hashlib
import importlib.util
import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cutlass/cutlass.h"
#include "cutlass/epilogue/thread/linear_combination.h"
#include "cutlass/gemm/device/gemm_universal.h"
#include "cutlass/gemm/threadblock/threadblock_swizzle.h"

namespace kagent_tf32x3 {

// TILE is "TBMxTBNxTBK_WMxWNxWK" (threadblock, then warp tile).
{{> cuda_knob_number}}

constexpr char kTile[] = "{{TILE}}";
{{> cutlass_sm80_tile}}

// An operand the reference transposes (its expression A.mT / B.mT, not the bare name) is
// read through its storage order: column-major in the product's terms.
constexpr char kAExpr[] = "{{A_EXPR}}";
constexpr char kBExpr[] = "{{B_EXPR}}";
constexpr bool kAColumn = kAExpr[1] != '\0';
constexpr bool kBColumn = kBExpr[1] != '\0';
using LayoutA = std::conditional_t<kAColumn, cutlass::layout::ColumnMajor,
                                   cutlass::layout::RowMajor>;
using LayoutB = std::conditional_t<kBColumn, cutlass::layout::ColumnMajor,
                                   cutlass::layout::RowMajor>;

// The triangle of C kept (torch.triu: 1, torch.tril: -1, none: 0) and its diagonal:
// element (i, j) is kept when j - i >= kDiagonal (upper) or j - i <= kDiagonal (lower).
constexpr char kTriangle[] = "{{TRIANGLE}}";
constexpr int kKeep = kTriangle[0] == 'u' ? 1 : kTriangle[0] == 'l' ? -1 : 0;
constexpr long long kDiagonal = {{DIAGONAL}};

using Gemm = cutlass::gemm::device::GemmUniversal<
    float, LayoutA, float, LayoutB,
    float, cutlass::layout::RowMajor, float,
    cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, ThreadblockShape, WarpShape,
    cutlass::gemm::GemmShape<16, 8, 8>,
    cutlass::epilogue::thread::LinearCombination<float, 4, float, float>, Swizzle,
    /*Stages=*/{{num_stages}}, /*AlignmentA=*/4, /*AlignmentB=*/4,
    cutlass::arch::OpMultiplyAddFastF32>;
using GemmKernel = Gemm::GemmKernel;

// K slices of a 2-D product (1: none), reduced in slice order into C by the kernel's
// epilogue (serial split-K: a semaphore per output tile).
constexpr int kSplitK = {{SPLIT_K}};

static_assert(sizeof(GemmKernel::SharedStorage) <= 227 * 1024,
              "TILE x STAGES needs more shared memory than an sm_90 block has (227 KB)");

// Whether the rows [row0, row0 + rows) and columns [col0, col0 + cols) of C hold no kept
// element (always false without a triangle).
__host__ __device__ constexpr bool OutsideTriangle(long long row0, long long rows,
                                                   long long col0, long long cols) {
  if (kKeep > 0) return (col0 + cols - 1) - row0 < kDiagonal;
  if (kKeep < 0) return col0 - (row0 + rows - 1) > kDiagonal;
  return false;
}

// The kernel's parameters for C[l] = A[l] @ B[l], l < batch (each operand contiguous in its
// layout, C row-major); a 2-D product (batch 1) in kSplitK slices.
GemmKernel::Params MakeParams(const float* A, const float* B, float* C, int M, int N, int K,
                              int batch) {
  const bool batched = batch > 1;
  const int64_t lda = kAColumn ? M : K, ldb = kBColumn ? K : N, ldc = N;
  Gemm::Arguments args(
      batched ? cutlass::gemm::GemmUniversalMode::kBatched
              : cutlass::gemm::GemmUniversalMode::kGemm,
      cutlass::gemm::GemmCoord(M, N, K), batched ? batch : kSplitK, {1.0f, 0.0f}, A, B, C,
      C, int64_t(M) * K, int64_t(K) * N, int64_t(M) * N, int64_t(M) * N, lda, ldb, ldc, ldc);
  // The SM count and occupancy are read by stream-K kernels only, not this one.
  return GemmKernel::Params(args, /*device_sms=*/0, /*sm_occupancy=*/0);
}

}  // namespace kagent_tf32x3

// The kernel is the candidate's own (cutlass::Kernel's body): one threadblock tile (of one
// batch, or of one K slice) each. With a triangle, a tile wholly outside it returns at once
// (every K slice of it alike, so no slice waits on a skipped one's semaphore); the mask
// kernel writes its zeros.
__global__ void kagent_gemm_tf32x3_kernel(kagent_tf32x3::GemmKernel::Params params) {
  using namespace kagent_tf32x3;
  if constexpr (kKeep != 0) {
    const cutlass::gemm::GemmCoord tile = Swizzle().get_tile_offset(params.swizzle_log_tile);
    if (OutsideTriangle(static_cast<long long>(tile.m()) * ThreadblockShape::kM,
                        ThreadblockShape::kM,
                        static_cast<long long>(tile.n()) * ThreadblockShape::kN,
                        ThreadblockShape::kN)) {
      return;
    }
  }
  extern __shared__ int shared_storage[];
  kagent_tf32x3::GemmKernel op;
  op(params, *reinterpret_cast<kagent_tf32x3::GemmKernel::SharedStorage*>(shared_storage));
}

// Zeroes the elements of C (batch of M x N, row-major) outside the kept triangle: the
// skipped tiles' and the diagonal tiles' far side. One thread per column, rows strided.
__global__ void kagent_triangle_mask_kernel(float* C, int M, int N) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= N) return;
  float* c = C + static_cast<int64_t>(blockIdx.z) * M * N;
  for (int i = blockIdx.y; i < M; i += gridDim.y) {
    if (kagent_tf32x3::OutsideTriangle(i, 1, j, 1)) c[static_cast<int64_t>(i) * N + j] = 0.0f;
  }
}

// Whether operand 0 (A) or 1 (B) is read column-major (the reference transposes it).
bool kagent_gemm_tf32x3_column(int operand) {
  return operand == 0 ? kagent_tf32x3::kAColumn : kagent_tf32x3::kBColumn;
}

// Bytes of zeroed workspace the product needs (the split's semaphores; 0 without a split).
size_t kagent_gemm_tf32x3_workspace(int M, int N, int K, int batch) {
  return kagent_tf32x3::MakeParams(nullptr, nullptr, nullptr, M, N, K, batch)
      .get_workspace_size();
}

// C[l] (M, N) = A[l] (M, K) @ B[l] (K, N) for l < batch, each operand contiguous in its
// layout and C row-major, then the triangle's zeros, on `stream`; `workspace` holds
// kagent_gemm_tf32x3_workspace()'s bytes (zeroed here). nullptr on success, else a static
// message.
const char* kagent_gemm_tf32x3(const float* A, const float* B, float* C, int M, int N, int K,
                               int batch, void* workspace, cudaStream_t stream) {
  using namespace kagent_tf32x3;
  cutlass::Status status = GemmKernel::can_implement(cutlass::gemm::GemmCoord(M, N, K));
  if (status != cutlass::Status::kSuccess) return cutlass::cutlassGetStatusString(status);
  GemmKernel::Params params = MakeParams(A, B, C, M, N, K, batch);
  status = params.init_workspace(workspace, stream);
  if (status != cutlass::Status::kSuccess) return cutlass::cutlassGetStatusString(status);
  const int smem = int(sizeof(GemmKernel::SharedStorage));
  static const cudaError_t attribute = cudaFuncSetAttribute(
      kagent_gemm_tf32x3_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (attribute != cudaSuccess) return cudaGetErrorString(attribute);
  kagent_gemm_tf32x3_kernel<<<params.get_grid_dims(), GemmKernel::kThreadCount, smem,
                              stream>>>(params);
  if constexpr (kKeep != 0) {
    const dim3 grid((N + 255) / 256, M < 65535 ? M : 65535, batch);
    kagent_triangle_mask_kernel<<<grid, 256, 0, stream>>>(C, M, N);
  }
  cudaError_t launched = cudaGetLastError();
  return launched == cudaSuccess ? nullptr : cudaGetErrorString(launched);
}
"""

cpp_source = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

size_t kagent_gemm_tf32x3_workspace(int M, int N, int K, int batch);
bool kagent_gemm_tf32x3_column(int operand);
const char* kagent_gemm_tf32x3(const float* A, const float* B, float* C, int M, int N, int K,
                               int batch, void* workspace, cudaStream_t stream);

torch::Tensor gemm(torch::Tensor A, torch::Tensor B) {
  TORCH_CHECK(A.is_cuda() && B.is_cuda(), "gemm_cutlass_tf32x3: A and B must be CUDA tensors");
  TORCH_CHECK(A.scalar_type() == torch::kFloat && B.scalar_type() == torch::kFloat,
              "gemm_cutlass_tf32x3: A and B must be float32");
  TORCH_CHECK((A.dim() == 2 || A.dim() == 3) && B.dim() == A.dim() &&
                  A.size(-1) == B.size(-2) && (A.dim() == 2 || A.size(0) == B.size(0)),
              "gemm_cutlass_tf32x3: needs A (M, K) and B (K, N), or A (L, M, K) and "
              "B (L, K, N), got ", A.sizes(), " and ", B.sizes());
  const bool a_column = kagent_gemm_tf32x3_column(0), b_column = kagent_gemm_tf32x3_column(1);
  TORCH_CHECK((a_column ? A.mT() : A).is_contiguous() && (b_column ? B.mT() : B).is_contiguous(),
              "gemm_cutlass_tf32x3: A must be ", a_column ? "a transposed contiguous tensor" :
              "row-major contiguous", " and B ", b_column ? "a transposed contiguous tensor" :
              "row-major contiguous", " (the layouts this render compiled)");
  const int64_t L = A.dim() == 3 ? A.size(0) : 1;
  const int64_t M = A.size(-2), K = A.size(-1), N = B.size(-1);
  TORCH_CHECK(M < (1LL << 31) && N < (1LL << 31) && K < (1LL << 31) && L < 65536,
              "gemm_cutlass_tf32x3: dims must fit in int, the batch in a grid's z");
  // 16-byte accesses along each operand's contiguous dimension.
  const int64_t a_lead = a_column ? M : K, b_lead = b_column ? K : N;
  TORCH_CHECK(a_lead % 4 == 0 && b_lead % 4 == 0 && N % 4 == 0,
              "gemm_cutlass_tf32x3: A's and B's contiguous dims and N must be multiples of 4 "
              "(16-byte rows), got ", a_lead, ", ", b_lead, " and N=", N);
  c10::cuda::CUDAGuard guard(A.device());
  auto C = A.dim() == 3 ? torch::empty({L, M, N}, A.options()) : torch::empty({M, N}, A.options());
  if (M == 0 || N == 0 || L == 0) return C;
  if (K == 0) return C.zero_();
  const size_t bytes = kagent_gemm_tf32x3_workspace(int(M), int(N), int(K), int(L));
  torch::Tensor workspace;
  if (bytes > 0) workspace = torch::empty({int64_t(bytes)}, A.options().dtype(torch::kByte));
  const char* error = kagent_gemm_tf32x3(
      A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), int(M), int(N), int(K),
      int(L), bytes > 0 ? workspace.data_ptr() : nullptr, at::cuda::getCurrentCUDAStream());
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
        A, B = {{A_EXPR}}, {{B_EXPR}}
        if A.dim() > 2 and B.dim() == 2 and A.is_contiguous() and "{{TRIANGLE}}" == "none":
            # torch.matmul's 3-D (or einsum's 4-D) A times a 2-D B: one product of A's rows
            # (a view when A is contiguous, as the module needs), which the reference
            # records as aten::mm.
            return _ext.gemm(A.reshape(-1, A.shape[-1]), B).reshape(*A.shape[:-1], B.shape[1])
        # 2-D, or a batch of products (torch.bmm / a 3-D matmul).
        return _ext.gemm(A, B)
