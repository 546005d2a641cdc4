# kagent-template: softmax_online
# softmax / log-softmax along one dim. The input is viewed as (OUTER, R, INNER) with R the
# softmax dim; each program owns one outer index and BLOCK_I inner columns and walks R in
# BLOCK_R chunks with an online (running max, rescaled sum) pass, then writes
# exp(x - max) / sum (or x - max - log(sum)). When R fits in one BLOCK_R chunk the input
# is read once (ONE_PASS), else twice.
# Chunk layout (_chunk): INNER == 1 (ROW, softmax over the contiguous last dim) uses 1-D
# [BLOCK_R] chunks at base + r, so loads and stores are vectorized and the max and sum
# are scalars; else a [BLOCK_R, BLOCK_I] tile (r along dim 0, inner columns along dim 1)
# with [BLOCK_I] max and sum. Both run the same code below, the running max and sum
# broadcasting against either chunk.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _chunk(base, r0, offs_i, R, INNER, BLOCK_R: tl.constexpr, ROW: tl.constexpr):
    # Elements r0 .. r0 + BLOCK_R - 1 of the softmax dim: (element offsets, mask).
    # ROW: the chunk is [BLOCK_R]; else [BLOCK_R, BLOCK_I].
    r = r0 + tl.arange(0, BLOCK_R)
    if ROW:
        offs = base + r
        mask = r < R
    else:
        offs = base + r[:, None].to(tl.int64) * INNER + offs_i[None, :]
        mask = (r < R)[:, None] & (offs_i < INNER)[None, :]
    return offs, mask


@triton.jit
def _stat(value, BLOCK_I: tl.constexpr, ROW: tl.constexpr):
    # A running statistic's initial value: a scalar (ROW) or one per inner column.
    if ROW:
        s = tl.full([], value, tl.float32)
    else:
        s = tl.full([BLOCK_I], value, tl.float32)
    return s


@triton.jit
def softmax_kernel(x_ptr, y_ptr, R, INNER, num_inner_blocks,
                   BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,
                   LOG: tl.constexpr, ONE_PASS: tl.constexpr, ROW: tl.constexpr):
    pid = tl.program_id(0)
    outer = pid // num_inner_blocks
    offs_i = (pid % num_inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    base = outer.to(tl.int64) * R * INNER
    if ONE_PASS:
        offs, mask = _chunk(base, 0, offs_i, R, INNER, BLOCK_R, ROW)
        x = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(tl.float32)
        m = tl.max(x, axis=0)
        m = tl.where(m == float("-inf"), 0.0, m)
        e = tl.exp(x - m)
        s = tl.sum(e, axis=0)
        if LOG:
            y = x - m - tl.log(s)
        else:
            y = e / s
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        m = _stat(float("-inf"), BLOCK_I, ROW)
        s = _stat(0.0, BLOCK_I, ROW)
        for r0 in range(0, R, BLOCK_R):
            offs, mask = _chunk(base, r0, offs_i, R, INNER, BLOCK_R, ROW)
            x = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            s = s * tl.exp(m - m_safe) + tl.sum(tl.exp(x - m_safe), axis=0)
            m = m_new
        m = tl.where(m == float("-inf"), 0.0, m)
        log_s = tl.log(s)
        for r0 in range(0, R, BLOCK_R):
            offs, mask = _chunk(base, r0, offs_i, R, INNER, BLOCK_R, ROW)
            x = tl.load(x_ptr + offs, mask=mask, other=float("-inf")).to(tl.float32)
            if LOG:
                y = x - m - log_s
            else:
                y = tl.exp(x - m) / s
            tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.dim = {{DIM}}

    def forward(self, x):
        {{> dim_view}}
        {{> rows_grid}}
        softmax_kernel[grid](
            x, y, R, INNER, num_inner_blocks,
            BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, LOG={{LOG}}, ONE_PASS=R <= BLOCK_R, ROW=INNER == 1,
            num_warps={{num_warps}}, num_stages={{num_stages}})
        return y
