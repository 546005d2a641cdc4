# A * s, one block of BLOCK elements per program.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(a_ptr, c_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        A = A.contiguous()
        c = torch.empty_like(A)
        n = A.numel()
        scale_kernel[(triton.cdiv(n, 4096),)](A, c, n, s, BLOCK=4096, num_warps=8)
        return c
