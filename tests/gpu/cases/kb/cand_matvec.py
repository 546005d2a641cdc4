# C = A @ B with B one column: program i reduces row i of A in BLOCK_K chunks (fp32).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matvec_kernel(a_ptr, b_ptr, c_ptr, K, stride_am, BLOCK_K: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs = k0 + tl.arange(0, BLOCK_K)
        mask = offs < K
        a = tl.load(a_ptr + row * stride_am + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        acc += a * b
    tl.store(c_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A = A.contiguous()
        B = B.contiguous()
        M, K = A.shape
        c = torch.empty((M, 1), dtype=A.dtype, device=A.device)
        matvec_kernel[(M,)](A, B, c, K, A.stride(0), BLOCK_K=4096, num_warps=8)
        return c
