# Starting kernel for 69_diag_broadcast_matmul_fp32: one program per row of B, walking its
# columns in chunks and multiplying by the row's diagonal entry.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_scale_kernel(a_ptr, b_ptr, c_ptr, M, stride_b, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    d = tl.load(a_ptr + row)
    offs = tl.arange(0, BLOCK)
    for c in range(0, M, BLOCK):
        mask = c + offs < M
        b = tl.load(b_ptr + row * stride_b + c + offs, mask=mask, other=0.0)
        tl.store(c_ptr + row * M + c + offs, b * d, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        B = B.contiguous()
        n, m = B.shape
        C = torch.empty_like(B)
        row_scale_kernel[(n,)](A.contiguous(), B, C, m, B.stride(0), BLOCK=1024, num_warps=4)
        return C
