# Starting kernel for 97_cross_entropy_odd_fp32: one program per row (two passes for logsumexp), then a one-program mean.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ce_row_kernel(x_ptr, tgt_ptr, part_ptr, N, stride, BLOCK: tl.constexpr):
    # One program per row: logsumexp in two passes, minus the target's logit.
    row = tl.program_id(0).to(tl.int64)
    xr = x_ptr + row * stride
    offs = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for c in range(0, N, BLOCK):
        m = tl.maximum(m, tl.load(xr + c + offs, mask=c + offs < N, other=float("-inf")).to(tl.float32))
    mx = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], tl.float32)
    for c in range(0, N, BLOCK):
        x = tl.load(xr + c + offs, mask=c + offs < N, other=float("-inf")).to(tl.float32)
        s += tl.exp(x - mx)
    lse = mx + tl.log(tl.sum(s, axis=0))
    t = tl.load(tgt_ptr + row)
    xt = tl.load(xr + t).to(tl.float32)
    tl.store(part_ptr + row, lse - xt)


@triton.jit
def sum_partials_kernel(part_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    # One program: the sum of n fp32 partials, times scale, into a 0-d output.
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for c in range(0, n, BLOCK):
        acc += tl.load(part_ptr + c + offs, mask=c + offs < n, other=0.0)
    tl.store(out_ptr, (tl.sum(acc, axis=0) * scale).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        x = predictions.contiguous()
        t = targets.contiguous()
        rows, n = x.shape
        part = torch.empty((rows,), dtype=torch.float32, device=x.device)
        ce_row_kernel[(rows,)](x, t, part, n, x.stride(0), BLOCK=1024, num_warps=4)
        out = torch.empty((), dtype=x.dtype, device=x.device)
        sum_partials_kernel[(1,)](part, out, rows, 1.0 / rows, BLOCK=1024, num_warps=4)
        return out
