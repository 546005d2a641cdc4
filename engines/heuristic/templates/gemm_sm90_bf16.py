# kagent-template: gemm_sm90_bf16
# C = A @ B in bf16 or fp16 on Hopper's tensor cores: CUTLASS 3's SM90 GEMM (TMA loads into
# a multistage shared-memory ring, warp-specialized wgmma with fp32 accumulators, persistent
# tiles, thread-block clusters with TMA multicast) launched as the candidate's own
# __global__ kagent_sm90_16bit_wgmma_kernel. The operands are read where they lie: A with K
# or M contiguous (a transposed view), B with N or K contiguous, batched or not; the
# layouts are compiled in from A_EXPR and B_EXPR, and an operand whose strides the compiled
# layout cannot read through (another view, rows not 16-byte aligned) is copied into it
# first; sizes CUTLASS cannot take (a contiguous extent not a multiple of 8) are computed on
# zero-padded copies. CUDA C++ built with torch.utils.cpp_extension.load_inline at import, for sm_90a,
# against the CUTLASS headers of the nvidia-cutlass package; the build directory is named by
# a hash of the sources and flags, so identical renders reuse one build.
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
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/half.h"
#include "cutlass/kernel_hardware_info.h"

namespace kagent_sm90_16bit {

{{> cuda_knob_number}}

constexpr char kTile[] = "{{TILE}}";
constexpr char kCluster[] = "{{CLUSTER}}";
constexpr char kSchedule[] = "{{SCHEDULE}}";
constexpr char kEpilogue[] = "{{EPILOGUE}}";
constexpr char kDtype[] = "{{DTYPE}}";
constexpr char kAExpr[] = "{{A_EXPR}}";
constexpr char kBExpr[] = "{{B_EXPR}}";

{{> sm90_gemm_schedule}}
static_assert(KnobNumber(kTile, 2) % 16 == 0, "TILE's K must be a multiple of 16 (16-bit wgmma)");
// "A" is A (M, K) as the model gets it, K contiguous; a transposed view (A.t(), A.mT) has M
// contiguous. "B" is B (K, N), N contiguous; B.t() / B.mT have K contiguous.
constexpr bool kAKMajor = kAExpr[1] == '\0';
constexpr bool kBNMajor = kBExpr[1] == '\0';
using Element = std::conditional_t<kDtype[0] == 'b', cutlass::bfloat16_t, cutlass::half_t>;
using LayoutA =
    std::conditional_t<kAKMajor, cutlass::layout::RowMajor, cutlass::layout::ColumnMajor>;
using LayoutB =
    std::conditional_t<kBNMajor, cutlass::layout::RowMajor, cutlass::layout::ColumnMajor>;
// TMA reads and writes 16-byte rows: 8 elements.
constexpr int kAlignment = 8;
constexpr int kAlignmentD = kTmaEpilogue ? 8 : 1;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    Element, cutlass::layout::RowMajor, kAlignmentD,
    Element, cutlass::layout::RowMajor, kAlignmentD, EpilogueSchedule>::CollectiveOp;

// fp32 accumulators, as cuBLAS's 16-bit GEMMs; the output rounded once, in the epilogue.
using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp,
    Element, LayoutA, kAlignment,
    Element, LayoutB, kAlignment,
    float, TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<
        static_cast<int>(sizeof(typename CollectiveEpilogue::SharedStorage))>,
    MainloopSchedule>::CollectiveOp;

using GemmKernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>,
                                                        CollectiveMainloop, CollectiveEpilogue>;

// The operands' strides in elements: A's row (K-major) or column (M-major) step and batch
// step, B's the same, D's row step and batch step (D is N-contiguous).
struct Strides {
  long long a_ld, a_batch, b_ld, b_batch, d_ld, d_batch;
};

// The (rows, columns, batch) stride of an operand whose first (kFirstContiguous) or
// second mode is contiguous.
template <bool kFirstContiguous>
auto MajorStride(long long ld, long long batch) {
  if constexpr (kFirstContiguous) {
    return cute::make_stride(cute::Int<1>{}, int64_t(ld), int64_t(batch));
  } else {
    return cute::make_stride(int64_t(ld), cute::Int<1>{}, int64_t(batch));
  }
}

GemmKernel::Arguments MakeArguments(const void* A, const void* B, void* D, int M, int N, int K,
                                    int L, Strides s, int device, int sm_count) {
  cutlass::KernelHardwareInfo hw;
  hw.device_id = device;
  hw.sm_count = sm_count;
  const typename GemmKernel::StrideA stride_a = MajorStride<!kAKMajor>(s.a_ld, s.a_batch);
  // CUTLASS sees B as (N, K): N-major is B (K, N) with N contiguous.
  const typename GemmKernel::StrideB stride_b = MajorStride<kBNMajor>(s.b_ld, s.b_batch);
  const auto stride_d = cute::make_stride(int64_t(s.d_ld), cute::Int<1>{}, int64_t(s.d_batch));
  GemmKernel::Arguments args{
      cutlass::gemm::GemmUniversalMode::kGemm,
      {M, N, K, L},
      {static_cast<const Element*>(A), stride_a, static_cast<const Element*>(B), stride_b},
      { {1.0f, 0.0f}, static_cast<const Element*>(D), stride_d, static_cast<Element*>(D),
       stride_d},
      hw};
  args.scheduler.max_swizzle_size = {{SWIZZLE}};
  return args;
}

{{> sm90_gemm_launch}}

}  // namespace kagent_sm90_16bit

// The CUTLASS kernel's body, as the candidate's own kernel (cutlass::device_kernel's).
__global__ __launch_bounds__(kagent_sm90_16bit::GemmKernel::MaxThreadsPerBlock,
                             kagent_sm90_16bit::GemmKernel::MinBlocksPerMultiprocessor)
void kagent_sm90_16bit_wgmma_kernel(
    const __grid_constant__ kagent_sm90_16bit::GemmKernel::Params params) {
  extern __shared__ char shared_storage[];
  kagent_sm90_16bit::GemmKernel op;
  op(params, shared_storage);
}

// Bytes of workspace the GEMM below needs for these sizes.
size_t kagent_sm90_16bit_workspace(int M, int N, int K, int L, int sm_count) {
  auto args = kagent_sm90_16bit::MakeArguments(nullptr, nullptr, nullptr, M, N, K, L,
                                               {K, int64_t(M) * K, N, int64_t(K) * N, N,
                                                int64_t(M) * N},
                                               0, sm_count);
  return kagent_sm90_16bit::GemmKernel::get_workspace_size(args);
}

// D (L, M, N) = A (L, M, K) @ B (L, K, N) through the strides in `ld` (A's lda and batch
// step, B's ldb and batch step, D's row and batch step, in elements) on `stream`. nullptr
// on success, else a message.
const char* kagent_sm90_16bit_gemm(const void* A, const void* B, void* D, int M, int N, int K,
                                   int L, const long long* ld, int device, int sm_count,
                                   void* workspace, cudaStream_t stream) {
  using kagent_sm90_16bit::GemmKernel;
  auto args = kagent_sm90_16bit::MakeArguments(A, B, D, M, N, K, L,
                                               {ld[0], ld[1], ld[2], ld[3], ld[4], ld[5]}, device,
                                               sm_count);
  return kagent_sm90_16bit::LaunchGemm<GemmKernel>(kagent_sm90_16bit_wgmma_kernel, args,
                                                  workspace, stream);
}
"""

cpp_source = r"""
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <string>

size_t kagent_sm90_16bit_workspace(int M, int N, int K, int L, int sm_count);
const char* kagent_sm90_16bit_gemm(const void* A, const void* B, void* D, int M, int N, int K,
                                   int L, const long long* ld, int device, int sm_count,
                                   void* workspace, cudaStream_t stream);

namespace {

// Whether TMA can read t (L, R, C) or (R, C) with dim `unit` (-1 or -2) contiguous: unit
// stride there, the other strides and the address on 16 bytes (8 elements).
bool Readable(const torch::Tensor& t, int unit) {
  const int other = unit == -1 ? -2 : -1;
  if (t.stride(unit) != 1 && t.size(unit) > 1) return false;
  if (t.stride(other) % 8 != 0 || t.stride(other) < t.size(unit)) return false;
  if (t.dim() == 3 && t.size(0) > 1 && t.stride(0) % 8 != 0) return false;
  return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

// t, or a copy of it with dim `unit` contiguous and the other dim's rows padded to 8
// elements (TMA's 16-byte rows; the padding is never read: the GEMM's extents stop short
// of it).
torch::Tensor Staged(const torch::Tensor& t, int unit) {
  if (Readable(t, unit)) return t;
  const int64_t inner = t.size(unit), outer = t.size(unit == -1 ? -2 : -1);
  const int64_t ld = (inner + 7) / 8 * 8;
  std::vector<int64_t> sizes = t.sizes().vec(), strides;
  if (unit == -1) {
    strides = {outer * ld, ld, 1};
  } else {
    strides = {outer * ld, 1, ld};
  }
  if (t.dim() == 2) strides.erase(strides.begin());
  auto staged = torch::empty_strided(sizes, strides, t.options());
  staged.copy_(t);
  return staged;
}

// t (.., R, C) copied into the corner of zeros (.., rows, cols) with dim `unit` (-1 or -2)
// contiguous: an operand whose extents CUTLASS cannot take (not multiples of 8), padded
// with zeros that add nothing to the product.
torch::Tensor ZeroPadded(const torch::Tensor& t, int64_t rows, int64_t cols, int unit) {
  std::vector<int64_t> sizes = t.sizes().vec();
  sizes[sizes.size() - 2] = unit == -1 ? rows : cols;
  sizes[sizes.size() - 1] = unit == -1 ? cols : rows;
  auto padded = torch::zeros(sizes, t.options());
  if (unit == -2) padded = padded.mT();
  padded.narrow(-2, 0, t.size(-2)).narrow(-1, 0, t.size(-1)).copy_(t);
  return padded;
}

int64_t Up8(int64_t n) { return (n + 7) / 8 * 8; }

}  // namespace

// C = A @ B: A (M, K) or (L, M, K), B (K, N) or (L, K, N), bfloat16 or float16 as compiled.
torch::Tensor gemm(torch::Tensor A, torch::Tensor B) {
  const bool bf16 = std::string("{{DTYPE}}") == "bfloat16";
  const auto dtype = bf16 ? torch::kBFloat16 : torch::kHalf;
  TORCH_CHECK(A.is_cuda() && B.is_cuda(), "gemm_sm90_bf16: A and B must be CUDA tensors");
  TORCH_CHECK(A.scalar_type() == dtype && B.scalar_type() == dtype,
              "gemm_sm90_bf16: A and B must be {{DTYPE}} (compiled for it)");
  TORCH_CHECK((A.dim() == 2 || A.dim() == 3) && (B.dim() == 2 || B.dim() == 3) &&
                  B.dim() <= A.dim(),
              "gemm_sm90_bf16: needs A (M, K) or (L, M, K) and B (K, N) or (L, K, N), got ",
              A.sizes(), " and ", B.sizes());
  TORCH_CHECK(A.size(-1) == B.size(-2), "gemm_sm90_bf16: inner dims differ: ", A.sizes(),
              " @ ", B.sizes());
  TORCH_CHECK(B.dim() == 2 || A.size(0) == B.size(0), "gemm_sm90_bf16: batch sizes differ: ",
              A.sizes(), " @ ", B.sizes());
  c10::cuda::CUDAGuard guard(A.device());
  const bool a_k_major = std::string("{{A_EXPR}}") == "A";
  const bool b_n_major = std::string("{{B_EXPR}}") == "B";
  const bool tma_epilogue = std::string("{{EPILOGUE}}") == "tma";
  const bool batched = A.dim() == 3;
  int64_t L = batched ? A.size(0) : 1, M = A.size(-2);
  const int64_t K = A.size(-1), N = B.size(-1);
  auto C = batched ? torch::empty({L, M, N}, A.options()) : torch::empty({M, N}, A.options());
  if (L == 0 || M == 0 || N == 0) return C;
  if (K == 0) return C.zero_();
  torch::Tensor a = A;
  if (batched && B.dim() == 2) {  // a 3-D A times a 2-D B: one GEMM of L x M rows
    a = A.reshape({L * M, K});
    M *= L;
    L = 1;
  }
  // CUTLASS's SM90 kernel needs each operand's contiguous extent a multiple of 8 (K for a
  // K-major A or B, M for an M-major A, N for an N-major B and for D under the TMA
  // epilogue): other sizes are computed on zero-padded copies, D then copied out.
  const int a_unit = a_k_major ? -1 : -2, b_unit = b_n_major ? -1 : -2;
  const int64_t Kp = (a_k_major || !b_n_major) ? Up8(K) : K;
  const int64_t Mp = a_k_major ? M : Up8(M);
  const int64_t Np = (b_n_major || tma_epilogue) ? Up8(N) : N;
  a = (Mp != M || Kp != K) ? ZeroPadded(a, Mp, Kp, a_unit) : Staged(a, a_unit);
  const torch::Tensor b =
      (Kp != K || Np != N) ? ZeroPadded(B, Kp, Np, b_unit) : Staged(B, b_unit);
  TORCH_CHECK(L < 65536 && Mp < (1LL << 31) && Np < (1LL << 31) && Kp < (1LL << 31),
              "gemm_sm90_bf16: sizes must fit in int (and the batch in 65535)");
  const bool padded_d = Mp != M || Np != N;
  torch::Tensor D = padded_d ? torch::empty({L, Mp, Np}, A.options()) : C;
  const long long ld[6] = {a.stride(a_k_major ? -2 : -1), a.dim() == 3 ? a.stride(0) : 0,
                           b.stride(b_n_major ? -2 : -1), b.dim() == 3 ? b.stride(0) : 0,
                           Np, Mp * Np};
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const int device = A.get_device();
  static int sm_count = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const size_t bytes = kagent_sm90_16bit_workspace(int(Mp), int(Np), int(Kp), int(L), sm_count);
  torch::Tensor workspace;
  if (bytes > 0) workspace = torch::empty({int64_t(bytes)}, A.options().dtype(torch::kUInt8));
  const char* error = kagent_sm90_16bit_gemm(
      a.data_ptr(), b.data_ptr(), D.data_ptr(), int(Mp), int(Np), int(Kp), int(L), ld, device,
      sm_count, bytes > 0 ? workspace.data_ptr() : nullptr, stream);
  TORCH_CHECK(error == nullptr, "gemm_sm90_bf16: ", error);
  if (padded_d) C.view({L, M, N}).copy_(D.narrow(-2, 0, M).narrow(-1, 0, N));
  return C;
}
"""

cuda_cflags = ["-O3", "-std=c++20", "-DNDEBUG", "--expt-relaxed-constexpr",
               "-gencode=arch=compute_90a,code=sm_90a"]


{{> cutlass_include}}


_ext = load_cutlass_extension("kagent_gemm_sm90_bf16_", cuda_source, cpp_source,
                              cuda_cflags)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, A, B):
        A, B = {{A_EXPR}}, {{B_EXPR}}
        {{> sm90_gemm_forward}}
