# Starting kernel for 92_softmax_wide_odd_fp32: one program per row, three passes (max, sum of exp, write), fp32 math.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr, LOG: tl.constexpr):
    # One program per row, three passes over it: max, sum of exp, write.
    row = tl.program_id(0).to(tl.int64)
    xr = x_ptr + row * stride
    yr = y_ptr + row * stride
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for c in range(0, N, BLOCK):
        x = tl.load(xr + c + offs, mask=c + offs < N, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, x)
    mx = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], tl.float32)
    for c in range(0, N, BLOCK):
        x = tl.load(xr + c + offs, mask=c + offs < N, other=float("-inf")).to(tl.float32)
        s += tl.exp(x - mx)
    total = tl.sum(s, axis=0)
    for c in range(0, N, BLOCK):
        mask = c + offs < N
        x = tl.load(xr + c + offs, mask=mask, other=0.0).to(tl.float32)
        if LOG:
            y = x - mx - tl.log(total)
        else:
            y = tl.exp(x - mx) / total
        tl.store(yr + c + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, n = x.shape
        softmax_kernel[(rows,)](x, y, n, x.stride(0), BLOCK=1024, LOG=False, num_warps=4)
        return y
