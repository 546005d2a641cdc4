# Starting kernel for 93_sum_last_dim_odd_fp32: one program per (outer index, 64 columns), one pass over the reduced dim.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def reduce_kernel(x_ptr, out_ptr, R, INNER, n_inner_blocks, scale,
                  BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, OP: tl.constexpr,
                  NEUTRAL: tl.constexpr):
    # The input viewed as (OUTER, R, INNER), R reduced. One program per (outer, BLOCK_I
    # columns), a single pass over R in BLOCK_R chunks, fp32 accumulation.
    pid = tl.program_id(0)
    outer = pid // n_inner_blocks
    offs_i = (pid % n_inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    imask = offs_i < INNER
    base = outer.to(tl.int64) * R * INNER
    offs_r = tl.arange(0, BLOCK_R)
    acc = tl.full([BLOCK_I], NEUTRAL, tl.float32)
    best = tl.zeros([BLOCK_I], dtype=tl.int64)
    for r0 in range(0, R, BLOCK_R):
        r = r0 + offs_r
        mask = (r < R)[:, None] & imask[None, :]
        x = tl.load(x_ptr + base + r.to(tl.int64)[:, None] * INNER + offs_i[None, :],
                    mask=mask, other=NEUTRAL).to(tl.float32)
        if OP == "sum":
            acc += tl.sum(x, axis=0)
        elif OP == "max":
            acc = tl.maximum(acc, tl.max(x, axis=0))
        elif OP == "min":
            acc = tl.minimum(acc, tl.min(x, axis=0))
        else:  # argmax: the first index of the maximum, like torch
            c_val = tl.max(x, axis=0)
            c_idx = tl.argmax(x, axis=0).to(tl.int64) + r0
            take = c_val > acc
            best = tl.where(take, c_idx, best)
            acc = tl.where(take, c_val, acc)
    o = outer.to(tl.int64) * INNER + offs_i
    if OP == "argmax":
        tl.store(out_ptr + o, best, mask=imask)
    else:
        tl.store(out_ptr + o, (acc * scale).to(out_ptr.dtype.element_ty), mask=imask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        dim = self.dim % x.dim()
        R = x.shape[dim]
        outer = 1
        for s in x.shape[:dim]:
            outer *= s
        inner = 1
        for s in x.shape[dim + 1:]:
            inner *= s
        out_shape = x.shape[:dim] + x.shape[dim + 1:]
        out_dtype = torch.int64 if "sum" == "argmax" else x.dtype
        out = torch.empty(out_shape, dtype=out_dtype, device=x.device)
        block_i = 1 if inner == 1 else 64
        block_r = 1024 if inner == 1 else 32
        n_inner_blocks = triton.cdiv(inner, block_i)
        reduce_kernel[(outer * n_inner_blocks,)](x, out, R, inner, n_inner_blocks, 1.0,
                                                 BLOCK_R=block_r, BLOCK_I=block_i, OP="sum",
                                                 NEUTRAL=0.0, num_warps=4)
        return out
