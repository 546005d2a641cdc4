# Starting kernel for 99_cumsum_wide_odd_fp32: one program per row, block scans with a carried running value.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scan_kernel(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr, PROD: tl.constexpr):
    # One program per row; BLOCK elements at a time, each block scanned and combined with
    # the carry (the last value of the previous block).
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    if PROD:
        carry = tl.sum(tl.zeros([BLOCK], tl.float32), axis=0) + 1.0
    else:
        carry = tl.sum(tl.zeros([BLOCK], tl.float32), axis=0)
    for c in range(0, N, BLOCK):
        mask = c + offs < N
        if PROD:
            x = tl.load(x_ptr + row * stride + c + offs, mask=mask, other=1.0).to(tl.float32)
            s = tl.cumprod(x, axis=0) * carry
        else:
            x = tl.load(x_ptr + row * stride + c + offs, mask=mask, other=0.0).to(tl.float32)
            s = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * stride + c + offs, s.to(y_ptr.dtype.element_ty), mask=mask)
        carry = tl.sum(tl.where(offs == BLOCK - 1, s, 0.0), axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, n = x.shape
        scan_kernel[(rows,)](x, y, n, x.stride(0), BLOCK=1024, PROD=False, num_warps=4)
        return y
