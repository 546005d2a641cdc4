# Starting kernel for 91_tanh_tall_odd_fp32: one 1024-element block per program, fp32 math.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # One BLOCK of elements per program, computed in fp32.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 2.0 * tl.sigmoid(2.0 * x) - 1.0
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        tanh_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, num_warps=4)
        return y
