# Starting kernel for 57_reverse_cumsum_fp32: one program per row, block scans from the row's end with a carried running value.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def reverse_scan_kernel(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    # One program per row, walking it from the end: BLOCK elements at a time, loaded in
    # reverse order (lane i holds column N - 1 - (c + i)), scanned and combined with the
    # carry (the sum of every column after the block).
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    carry = tl.sum(tl.zeros([BLOCK], tl.float32), axis=0)
    for c in range(0, N, BLOCK):
        mask = c + offs < N
        col = N - 1 - (c + offs)
        x = tl.load(x_ptr + row * stride + col, mask=mask, other=0.0).to(tl.float32)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(y_ptr + row * stride + col, s.to(y_ptr.dtype.element_ty), mask=mask)
        carry = tl.sum(tl.where(offs == BLOCK - 1, s, 0.0), axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, n = x.shape
        reverse_scan_kernel[(rows,)](x, y, n, x.stride(0), BLOCK=1024, num_warps=4)
        return y
