# kagent-template: scan_rows
# cumsum / cumprod along one dim (inclusive or exclusive, forward or reversed, optionally
# masked). The input is viewed as (OUTER, R, INNER) with R the scanned dim. Grid
# (OUTER * cdiv(INNER, BLOCK_I),): each program walks its BLOCK_I columns along R in
# BLOCK_R chunks; tl.associative_scan scans a chunk in fp32 and the running total of the
# chunks before it (the carry) is combined in. Exclusive scans store each inclusive value
# one position further along the scan and the identity at its start.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def scan_kernel(x_ptr, m_ptr, y_ptr, R, INNER, num_inner_blocks,
                BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, OP: tl.constexpr,
                REVERSE: tl.constexpr, EXCLUSIVE: tl.constexpr, MASKED: tl.constexpr):
    pid = tl.program_id(0)
    outer = pid // num_inner_blocks
    offs_i = (pid % num_inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    imask = offs_i < INNER
    base = outer.to(tl.int64) * R * INNER
    offs_r = tl.arange(0, BLOCK_R)
    if OP == "cumsum":
        carry = tl.zeros([BLOCK_I], dtype=tl.float32)
    else:
        carry = tl.full([BLOCK_I], 1.0, tl.float32)
    if EXCLUSIVE:
        # The first element along the scan is the identity.
        first = R - 1 if REVERSE else 0
        tl.store(y_ptr + base + first * INNER + offs_i, carry.to(y_ptr.dtype.element_ty),
                 mask=imask)
    # Tiles are [BLOCK_I, BLOCK_R] with the scan along the last axis: for INNER == 1 (the
    # scanned dim is the last one) that is the canonical contiguous row scan.
    for r0 in range(0, R, BLOCK_R):
        step = r0 + offs_r                      # position along the scan order
        if REVERSE:
            r = R - 1 - step
        else:
            r = step
        rmask = step < R
        mask = imask[:, None] & rmask[None, :]
        offs = base + offs_i[:, None] + r[None, :].to(tl.int64) * INNER
        if OP == "cumsum":
            x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        else:
            x = tl.load(x_ptr + offs, mask=mask, other=1.0).to(tl.float32)
        if MASKED:
            keep = tl.load(m_ptr + offs, mask=mask, other=0) != 0
            if OP == "cumsum":
                x = tl.where(keep, x, 0.0)
            else:
                x = tl.where(keep, x, 1.0)
        if OP == "cumsum":
            s = tl.associative_scan(x, 1, _add) + carry[:, None]
            carry += tl.sum(x, axis=1)
        else:
            s = tl.associative_scan(x, 1, _mul) * carry[:, None]
            carry *= tl.reduce(x, 1, _mul)
        if EXCLUSIVE:
            if REVERSE:
                r_out = r - 1
            else:
                r_out = r + 1
            omask = imask[:, None] & (step + 1 < R)[None, :]
            tl.store(y_ptr + base + offs_i[:, None] + r_out[None, :].to(tl.int64) * INNER,
                     s.to(y_ptr.dtype.element_ty), mask=omask)
        else:
            tl.store(y_ptr + offs, s.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        dim = kwargs.get("dim", args[0] if args else {{DIM}})
        self.dim = dim if isinstance(dim, int) else {{DIM}}

    def forward(self, x, *rest):
        x = x.contiguous()
        masked = {{MASKED}}
        mask = rest[0].expand(x.shape).contiguous() if masked else x
        y = torch.empty_like(x)
        if x.numel() == 0:
            return y
        if x.dim() == 0:
            x, mask, y = x.reshape(1), mask.reshape(1), y.reshape(1)
        dim = self.dim % x.dim()
        R = x.shape[dim]
        INNER = 1
        for s in x.shape[dim + 1:]:
            INNER *= s
        OUTER = x.numel() // (R * INNER)
        BLOCK_R = min({{BLOCK_R}}, triton.next_power_of_2(R))
        BLOCK_I = min({{BLOCK_I}}, triton.next_power_of_2(INNER))
        num_inner_blocks = triton.cdiv(INNER, BLOCK_I)
        grid = (OUTER * num_inner_blocks,)
        scan_kernel[grid](
            x, mask, y, R, INNER, num_inner_blocks,
            BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, OP="{{OP}}", REVERSE={{REVERSE}},
            EXCLUSIVE={{EXCLUSIVE}}, MASKED=masked,
            num_warps={{num_warps}}, num_stages={{num_stages}})
        return y
