# Starting kernel for 53_l2_norm_fp32: one program per row, two passes (sum of squares, then divide).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l2norm_kernel(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    # One program per row: ||x||_2 over the row, then x / ||x||_2.
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    ss = tl.zeros([BLOCK], tl.float32)
    for c in range(0, N, BLOCK):
        x = tl.load(x_ptr + row * stride + c + offs, mask=c + offs < N, other=0.0).to(tl.float32)
        ss += x * x
    norm = tl.sqrt(tl.sum(ss, axis=0))
    for c in range(0, N, BLOCK):
        mask = c + offs < N
        x = tl.load(x_ptr + row * stride + c + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride + c + offs, (x / norm).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, n = x.shape
        l2norm_kernel[(rows,)](x, y, n, x.stride(0), BLOCK=1024, num_warps=4)
        return y
