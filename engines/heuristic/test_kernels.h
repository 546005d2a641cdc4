// Triton sources used by the tests: a user's 32-row tile matvec (the flagship starting
// kernel: BLOCK_M=32, BLOCK_K=512, num_stages=1) and variants.
#ifndef KAGENT_ENGINES_HEURISTIC_TEST_KERNELS_H_
#define KAGENT_ENGINES_HEURISTIC_TEST_KERNELS_H_

namespace kagent::testing {

inline constexpr char kUserMatvec[] = R"py(import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matvec_tile_kernel(a_ptr, x_ptr, y_ptr, M, K, stride_am,
                       BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    # "BLOCK_M=999" in a comment and a string must be ignored
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rows[:, None] * stride_am + cols[None, :],
                    mask=(rows[:, None] < M) & (cols[None, :] < K), other=0.0)
        x = tl.load(x_ptr + cols, mask=cols < K, other=0.0)
        acc += a.to(tl.float32) * x.to(tl.float32)[None, :]
    tl.store(y_ptr + rows, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=rows < M)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, x):
        M, K = A.shape
        y = torch.empty((M, 1), device=A.device, dtype=A.dtype)
        note = "BLOCK_M=999, num_warps=1"
        BLOCK_M = 32
        grid = (triton.cdiv(M, BLOCK_M),)
        matvec_tile_kernel[grid](A, x, y, M, K, A.stride(0),
                                 BLOCK_M=BLOCK_M, BLOCK_K=512, num_stages=1)
        return y
)py";

// A user's autotuned elementwise kernel: its configs list is a module-level variable; the
// second config has no num_warps (Triton's default, 4).
inline constexpr char kUserAutotunedRelu[] = R"py(import torch
import torch.nn as nn
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_SIZE": 256}, num_warps=2),
    triton.Config({'BLOCK_SIZE': 1024, "EVEN": False}),  # 'BLOCK_SIZE': 99 in a comment
]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
        relu_kernel[grid](x, y, n)
        return y
)py";

}  // namespace kagent::testing

#endif  // KAGENT_ENGINES_HEURISTIC_TEST_KERNELS_H_
