# Starting kernel for 98_smooth_l1_loss_odd_fp32: per-block partial sums (4096 elements) in one kernel, their sum in a second, fp32.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def loss_partial_kernel(p_ptr, t_ptr, part_ptr, n, BLOCK: tl.constexpr):
    # One program per BLOCK elements: the block's sum of per-element losses, fp32.
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    d = tl.abs(p - t)
    v = tl.where(d < 1.0, 0.5 * d * d, d - 0.5)
    v = tl.where(mask, v, 0.0)
    tl.store(part_ptr + pid, tl.sum(v, axis=0))


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
        n = p.numel()
        nblocks = triton.cdiv(n, 4096)
        part = torch.empty((nblocks,), dtype=torch.float32, device=p.device)
        loss_partial_kernel[(nblocks,)](p, t, part, n, BLOCK=4096, num_warps=8)
        out = torch.empty((), dtype=p.dtype, device=p.device)
        sum_partials_kernel[(1,)](part, out, nblocks, 1.0 / n, BLOCK=1024, num_warps=4)
        return out
