# Starting kernel for 17_selu_bf16: one 1024-element block per program, fp32 math.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def selu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # One BLOCK of elements per program, computed in fp32.
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    neg = 1.6732632423543772 * (tl.exp(tl.minimum(x, 0.0)) - 1.0)
    y = 1.0507009873554805 * tl.where(x > 0, x, neg)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        selu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, num_warps=4)
        return y
