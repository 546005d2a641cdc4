# Starting kernel for 66_max_norm_bf16: one program per row, two passes (max of |x|, then
# divide by it rounded to bf16 as torch's max returns it).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_norm_kernel(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for c in range(0, N, BLOCK):
        x = tl.load(x_ptr + row * stride + c + offs, mask=c + offs < N, other=0.0).to(tl.float32)
        acc = tl.maximum(acc, tl.abs(x))
    m = tl.max(acc, axis=0)
    for c in range(0, N, BLOCK):
        mask = c + offs < N
        x = tl.load(x_ptr + row * stride + c + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride + c + offs, (x / m).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.shape[-1]
        rows = x.numel() // max(1, n)
        max_norm_kernel[(rows,)](x, y, n, n, BLOCK=1024, num_warps=4)
        return y
