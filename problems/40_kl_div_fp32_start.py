# Starting kernel for 40_kl_div_fp32: one program per row, then a one-program sum divided by the batch.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def kl_row_kernel(p_ptr, t_ptr, part_ptr, N, stride, BLOCK: tl.constexpr):
    # One program per row: sum of t * (log t - log p), with 0 where t == 0 (xlogy).
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for c in range(0, N, BLOCK):
        mask = c + offs < N
        p = tl.load(p_ptr + row * stride + c + offs, mask=mask, other=1.0).to(tl.float32)
        t = tl.load(t_ptr + row * stride + c + offs, mask=mask, other=0.0).to(tl.float32)
        tlogt = tl.where(t > 0, t * tl.log(tl.where(t > 0, t, 1.0)), 0.0)
        acc += tl.where(mask, tlogt - t * tl.log(p), 0.0)
    tl.store(part_ptr + row, tl.sum(acc, axis=0))


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
        p = predictions.contiguous()
        t = targets.contiguous()
        rows, n = p.shape
        part = torch.empty((rows,), dtype=torch.float32, device=p.device)
        kl_row_kernel[(rows,)](p, t, part, n, p.stride(0), BLOCK=1024, num_warps=4)
        out = torch.empty((), dtype=p.dtype, device=p.device)
        sum_partials_kernel[(1,)](part, out, rows, 1.0 / rows, BLOCK=1024, num_warps=4)
        return out
