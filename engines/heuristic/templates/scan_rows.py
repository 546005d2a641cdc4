# kagent-template: scan_rows
# cumsum / cumprod along one dim (inclusive or exclusive, forward or reversed, optionally
# masked). The input is viewed as (OUTER, R, INNER) with R the scanned dim. Grid
# (OUTER * cdiv(INNER, BLOCK_I), SPLIT_R): each program walks its BLOCK_I columns along
# its slice of R in BLOCK_R chunks; tl.associative_scan scans a chunk in fp32 and the
# running total of the chunks before it (the carry) is combined in. SPLIT_R == 1: one
# pass. SPLIT_R > 1 (blocked two-level scan, for few long rows): a first kernel reduces
# every slice to its total, and each slice's scan starts from the totals of the slices
# before it (reads the input twice). Exclusive scans store each inclusive value one
# position further along the scan and the identity at its start.
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
def _chunk(x_ptr, m_ptr, base, step, offs_i, imask, R, INNER,
           OP: tl.constexpr, REVERSE: tl.constexpr, MASKED: tl.constexpr):
    """Loads a [BLOCK_I, BLOCK_R] chunk at scan positions `step` (identity off the end)."""
    if REVERSE:
        r = R - 1 - step
    else:
        r = step
    mask = imask[:, None] & (step < R)[None, :]
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
    return x, r, offs, mask


@triton.jit
def scan_totals_kernel(x_ptr, m_ptr, tot_ptr, R, INNER, num_inner_blocks, R_PER_SPLIT, N_COLS,
                       BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, OP: tl.constexpr,
                       REVERSE: tl.constexpr, MASKED: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    outer = pid // num_inner_blocks
    offs_i = (pid % num_inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    imask = offs_i < INNER
    base = outer.to(tl.int64) * R * INNER
    offs_r = tl.arange(0, BLOCK_R)
    if OP == "cumsum":
        total = tl.zeros([BLOCK_I], dtype=tl.float32)
    else:
        total = tl.full([BLOCK_I], 1.0, tl.float32)
    for r0 in range(0, R_PER_SPLIT, BLOCK_R):
        step = split * R_PER_SPLIT + r0 + offs_r
        x, r, offs, mask = _chunk(x_ptr, m_ptr, base, step, offs_i, imask, R, INNER,
                                  OP, REVERSE, MASKED)
        if OP == "cumsum":
            total += tl.sum(x, axis=1)
        else:
            total *= tl.reduce(x, 1, _mul)
    tl.store(tot_ptr + split.to(tl.int64) * N_COLS + outer.to(tl.int64) * INNER + offs_i, total,
             mask=imask)


@triton.jit
def scan_kernel(x_ptr, m_ptr, tot_ptr, y_ptr, R, INNER, num_inner_blocks, R_PER_SPLIT, N_COLS,
                BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, OP: tl.constexpr,
                REVERSE: tl.constexpr, EXCLUSIVE: tl.constexpr, MASKED: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    outer = pid // num_inner_blocks
    offs_i = (pid % num_inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    imask = offs_i < INNER
    base = outer.to(tl.int64) * R * INNER
    offs_r = tl.arange(0, BLOCK_R)
    if OP == "cumsum":
        carry = tl.zeros([BLOCK_I], dtype=tl.float32)
    else:
        carry = tl.full([BLOCK_I], 1.0, tl.float32)
    # The totals of the slices before this one, in scan order (none when SPLIT_R == 1).
    for prev in range(0, split):
        t = tl.load(tot_ptr + prev * N_COLS + outer.to(tl.int64) * INNER + offs_i, mask=imask,
                    other=0.0)
        if OP == "cumsum":
            carry += t
        else:
            carry *= t
    if EXCLUSIVE:
        # The first element along the scan is the identity (written by the first slice).
        first = R - 1 if REVERSE else 0
        first_slice = (offs_i * 0 + split) == 0
        tl.store(y_ptr + base + first * INNER + offs_i, carry.to(y_ptr.dtype.element_ty),
                 mask=imask & first_slice)
    # Tiles are [BLOCK_I, BLOCK_R] with the scan along the last axis: for INNER == 1 (the
    # scanned dim is the last one) that is the canonical contiguous row scan.
    for r0 in range(0, R_PER_SPLIT, BLOCK_R):
        step = split * R_PER_SPLIT + r0 + offs_r   # position along the scan order
        x, r, offs, mask = _chunk(x_ptr, m_ptr, base, step, offs_i, imask, R, INNER,
                                  OP, REVERSE, MASKED)
        if OP == "cumsum":
            scanned = tl.associative_scan(x, 1, _add) + carry[:, None]
            carry += tl.sum(x, axis=1)
        else:
            scanned = tl.associative_scan(x, 1, _mul) * carry[:, None]
            carry *= tl.reduce(x, 1, _mul)
        if EXCLUSIVE:
            if REVERSE:
                r_out = r - 1
            else:
                r_out = r + 1
            omask = imask[:, None] & (step + 1 < R)[None, :]
            tl.store(y_ptr + base + offs_i[:, None] + r_out[None, :].to(tl.int64) * INNER,
                     scanned.to(y_ptr.dtype.element_ty), mask=omask)
        else:
            tl.store(y_ptr + offs, scanned.to(y_ptr.dtype.element_ty), mask=mask)


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
        SPLIT_R = min({{SPLIT_R}}, triton.cdiv(R, BLOCK_R))
        r_per_split = triton.cdiv(triton.cdiv(R, SPLIT_R), BLOCK_R) * BLOCK_R
        splits = triton.cdiv(R, r_per_split)   # no empty slice
        num_inner_blocks = triton.cdiv(INNER, BLOCK_I)
        n_cols = OUTER * INNER
        grid = (OUTER * num_inner_blocks, splits)
        if splits > 1:
            totals = torch.empty((splits, n_cols), device=x.device, dtype=torch.float32)
            scan_totals_kernel[grid](
                x, mask, totals, R, INNER, num_inner_blocks, r_per_split, n_cols,
                BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, OP="{{OP}}", REVERSE={{REVERSE}}, MASKED=masked,
                num_warps={{num_warps}}, num_stages={{num_stages}})
        else:
            totals = y
        scan_kernel[grid](
            x, mask, totals, y, R, INNER, num_inner_blocks, r_per_split, n_cols,
            BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, OP="{{OP}}", REVERSE={{REVERSE}},
            EXCLUSIVE={{EXCLUSIVE}}, MASKED=masked,
            num_warps={{num_warps}}, num_stages={{num_stages}})
        return y
