# kagent-template: reduce_dim
# sum / mean / max / min / prod / argmax / argmin / norm / var / std along one dim. The
# input is viewed as (OUTER, R, INNER) with R the reduced dim. Grid
# (OUTER * cdiv(INNER, BLOCK_I), SPLIT_R): each program reduces BLOCK_I columns over its
# slice of R in BLOCK_R chunks, in fp32.
# - values (sum, mean, max, min, prod, norm): chunks combined element by element (AGG:
#   sum / prod / max / min), one reduction across rows at the end. norm (ORD, like
#   torch.linalg.vector_norm / torch.norm over one dim): 2 = sqrt(sum x^2), 1 = sum |x|,
#   inf = max |x|, -inf = min |x|, 0 = count of nonzeros; the squares are summed in fp32
#   without rescaling, so like torch's kernels the 2-norm is inf once sum x^2 overflows
#   fp32 (|x| beyond ~1.8e19).
# - argmax / argmin: each chunk reduced as it arrives, keeping its index (first index
#   wins ties, like torch).
# - NaN, like torch: max / min (and the inf / -inf norms) return NaN for a slice holding
#   one (the chunks combine with NaN-propagating maximum / minimum; the final reduction
#   across rows, NaN-ignoring in Triton, is overridden by a NaN flag); argmax / argmin
#   return the index of the slice's first NaN (they reduce order-preserving int32 keys
#   of the values that rank NaN past every value, _key; partials hold NaN for it).
#   sum / mean / prod / 2- and 1-norms / var / std propagate NaN by arithmetic.
# - var / std (CORRECTION, like torch.var / torch.std(x, dim, correction=)): each chunk's
#   mean and M2 merged into the running ones (Chan's parallel Welford, fp32);
#   var = M2 / max(0, R - CORRECTION) (0/0 = nan, x/0 = inf, like torch), std = sqrt(var).
# Chunk layout (_chunk): INNER == 1 (ROW, reduction over contiguous elements, e.g. the
# last dim) gives each program one row and runs 1-D [BLOCK_R] chunks at x + base + r, so
# loads are vectorized and every running statistic is a scalar; else a [BLOCK_R, BLOCK_I]
# tile (r along dim 0, inner columns along dim 1) with [BLOCK_I] statistics. Both run the
# same code below, the statistics broadcasting against either chunk.
# SPLIT_R == 1 is single pass (writes the result); SPLIT_R > 1 is two pass: partials
# (value and index; var/std: mean and M2) go to a [SPLIT_R, OUTER*INNER] workspace that a
# second kernel combines in split order, so ties keep the first index like torch.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _chunk(ptr, r, offs_i, R, INNER, ROW: tl.constexpr):
    # Pointers and mask of the chunk at reduced indices r ([BLOCK_R]); ptr is the slice's
    # element 0 (x_ptr + base). ROW: a [BLOCK_R] chunk at ptr + r; else a
    # [BLOCK_R, BLOCK_I] tile. (Pointers, not offsets: x_ptr + (int64 offsets) cost the
    # 2-D tile 8 bytes of stack at 128 x 64 on sm_90.)
    if ROW:
        ptrs = ptr + r
        mask = r < R
    else:
        ptrs = ptr + r[:, None].to(tl.int64) * INNER + offs_i[None, :]
        mask = (r < R)[:, None] & (offs_i < INNER)[None, :]
    return ptrs, mask


@triton.jit
def _stat(value, dtype: tl.constexpr, BLOCK_I: tl.constexpr, ROW: tl.constexpr):
    # A running statistic's initial value: a scalar (ROW) or one per inner column.
    if ROW:
        s = tl.full([], value, dtype)
    else:
        s = tl.full([BLOCK_I], value, dtype)
    return s


@triton.jit
def _tile(value, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, ROW: tl.constexpr):
    # The element-by-element accumulator of the value reductions, shaped like a chunk.
    if ROW:
        t = tl.full([BLOCK_R], value, tl.float32)
    else:
        t = tl.full([BLOCK_R, BLOCK_I], value, tl.float32)
    return t


@triton.jit
def _out(outer, offs_i, INNER, N_OUT, ROW: tl.constexpr):
    # Output offsets and mask of this program: one (ROW) or BLOCK_I outputs.
    if ROW:
        o = outer.to(tl.int64)
        omask = o < N_OUT
    else:
        o = outer.to(tl.int64) * INNER + offs_i
        omask = offs_i < INNER
    return o, omask


@triton.jit
def _pre(x, OP: tl.constexpr, ORD: tl.constexpr):
    # What the value reductions accumulate for an element: x, or |x|, x^2, x != 0 (norm).
    if OP == "norm":
        if ORD == "2":
            x = x * x
        elif ORD == "0":
            x = (x != 0).to(tl.float32)
        else:
            x = tl.abs(x)
    return x


@triton.jit
def _combine(acc, v, AGG: tl.constexpr):
    # acc (AGG) v for the value reductions, element by element.
    if AGG == "sum":
        acc = acc + v
    elif AGG == "prod":
        acc = acc * v
    elif AGG == "max":
        acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)
    else:
        acc = tl.minimum(acc, v, propagate_nan=tl.PropagateNan.ALL)
    return acc


@triton.jit
def _reduce(tile, AGG: tl.constexpr):
    # The accumulator reduced across its rows (dim 0). tl.max / tl.min ignore NaN: a
    # column holding one (kept by _combine) gives NaN through the flag.
    if AGG == "sum":
        acc = tl.sum(tile, axis=0)
    elif AGG == "prod":
        acc = tl.reduce(tile, 0, _mul)
    else:
        # (NaNs out of tl.max / tl.min's way first: the interpreter warns on all-NaN columns.)
        is_nan = tile != tile
        if AGG == "max":
            acc = tl.max(tl.where(is_nan, float("-inf"), tile), axis=0)
        else:
            acc = tl.min(tl.where(is_nan, float("inf"), tile), axis=0)
        acc = tl.where(tl.max(is_nan.to(tl.int32), axis=0) != 0, float("nan"), acc)
    return acc


@triton.jit
def _key(x, OP: tl.constexpr):
    # argmax / argmin: an int32 key of fp32 x ordered like x, with -0.0 and +0.0 equal
    # (torch ties them) and NaN above every value (argmax) or below (argmin): sign and
    # magnitude of the bits as a signed int.
    k = x.to(tl.int32, bitcast=True)
    m = k & 0x7FFFFFFF
    k = tl.where(k < 0, -m, m)
    if OP == "argmax":
        k = tl.where(x != x, 0x7FFFFFFF, k)
    else:
        k = tl.where(x != x, -0x7FFFFFFF, k)
    return k


@triton.jit
def _unkey(k):
    # The fp32 value of a _key (NaN keys give NaN; 0 gives +0.0).
    m = tl.abs(k)
    return tl.where(k < 0, m | -0x80000000, m).to(tl.float32, bitcast=True)


@triton.jit
def _chan(mean, m2, n_a, mean_b, m2_b, n_b):
    # Merges (mean_b, m2_b) of n_b elements into (mean, m2) of n_a elements; n_b may be 0.
    n = n_a + n_b
    delta = mean_b - mean
    f = n_b / tl.maximum(n, 1.0)
    mean = mean + delta * f
    m2 = m2 + m2_b + delta * delta * (n_a * f)
    return mean, m2


@triton.jit
def _finish(acc, m2, OP: tl.constexpr, ORD: tl.constexpr, scale, divisor):
    # The result from the fp32 statistics (not for argmax/argmin).
    if OP == "mean":
        acc = acc * scale
    elif OP == "norm":
        if ORD == "2":
            acc = tl.sqrt(acc)
    elif OP == "var":
        acc = m2 / divisor
    elif OP == "std":
        acc = tl.sqrt(m2 / divisor)
    return acc


@triton.jit
def reduce_kernel(x_ptr, val_ptr, idx_ptr, out_ptr, R, INNER, num_inner_blocks, R_PER_SPLIT,
                  N_OUT, scale, divisor, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr,
                  OP: tl.constexpr, AGG: tl.constexpr, ORD: tl.constexpr,
                  NEUTRAL: tl.constexpr, FINAL: tl.constexpr, ROW: tl.constexpr):
    pid = tl.program_id(0)
    split = tl.program_id(1)
    outer = pid // num_inner_blocks
    offs_i = (pid % num_inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    base = outer.to(tl.int64) * R * INNER
    offs_r = tl.arange(0, BLOCK_R)
    r_begin = split * R_PER_SPLIT
    best = _stat(0, tl.int64, BLOCK_I, ROW)
    m2 = _stat(0.0, tl.float32, BLOCK_I, ROW)
    if OP == "argmax" or OP == "argmin":
        # Index tracking: each chunk is reduced as it arrives (first index wins ties), on
        # order-preserving int32 keys (_key) that put NaN past every value, so one
        # tl.max / tl.min with indices finds the first NaN like torch, and nothing replaces
        # a NaN across chunks.
        acc = _key(_stat(NEUTRAL, tl.float32, BLOCK_I, ROW), OP)
        for r0 in range(0, R_PER_SPLIT, BLOCK_R):
            ptrs, mask = _chunk(x_ptr + base, r_begin + r0 + offs_r, offs_i, R, INNER, ROW)
            k = _key(tl.load(ptrs, mask=mask, other=NEUTRAL).to(tl.float32), OP)
            if OP == "argmax":
                c_key, c_idx = tl.max(k, axis=0, return_indices=True)
                take = c_key > acc
            else:
                c_key, c_idx = tl.min(k, axis=0, return_indices=True)
                take = c_key < acc
            best = tl.where(take, c_idx.to(tl.int64) + r_begin + r0, best)
            acc = tl.where(take, c_key, acc)
        acc = _unkey(acc)  # the partial's value
    elif OP == "var" or OP == "std":
        # Each chunk's mean and M2 (centered on the chunk mean), merged into the running
        # ones (acc is the mean). Every earlier chunk of the slice was full.
        acc = _stat(0.0, tl.float32, BLOCK_I, ROW)
        for r0 in range(0, R_PER_SPLIT, BLOCK_R):
            ptrs, mask = _chunk(x_ptr + base, r_begin + r0 + offs_r, offs_i, R, INNER, ROW)
            x = tl.load(ptrs, mask=mask, other=0.0).to(tl.float32)
            n_c = tl.minimum(tl.maximum(R - r_begin - r0, 0), BLOCK_R).to(tl.float32)
            c_mean = tl.sum(x, axis=0) / tl.maximum(n_c, 1.0)
            d = tl.where(mask, x - c_mean, 0.0)
            acc, m2 = _chan(acc, m2, r0 * 1.0, c_mean, tl.sum(d * d, axis=0), n_c)
    else:
        # Values only: combine chunks element by element in a chunk-shaped accumulator and
        # reduce across rows once at the end, so the loop is loads and FMAs/compares with
        # no cross-thread reduction between one chunk's load and the next.
        tile = _tile(NEUTRAL, BLOCK_R, BLOCK_I, ROW)
        for r0 in range(0, R_PER_SPLIT, BLOCK_R):
            ptrs, mask = _chunk(x_ptr + base, r_begin + r0 + offs_r, offs_i, R, INNER, ROW)
            x = tl.load(ptrs, mask=mask, other=NEUTRAL).to(tl.float32)
            tile = _combine(tile, _pre(x, OP, ORD), AGG)
        acc = _reduce(tile, AGG)
    o, omask = _out(outer, offs_i, INNER, N_OUT, ROW)
    if FINAL:
        if OP == "argmax" or OP == "argmin":
            tl.store(out_ptr + o, best, mask=omask)
        else:
            acc = _finish(acc, m2, OP, ORD, scale, divisor)
            tl.store(out_ptr + o, acc.to(out_ptr.dtype.element_ty), mask=omask)
    else:
        s = split.to(tl.int64)
        tl.store(val_ptr + s * N_OUT + o, acc, mask=omask)
        if OP == "argmax" or OP == "argmin":
            tl.store(idx_ptr + s * N_OUT + o, best, mask=omask)
        elif OP == "var" or OP == "std":
            tl.store(val_ptr + (tl.num_programs(1) + s) * N_OUT + o, m2, mask=omask)


@triton.jit
def reduce_combine_kernel(val_ptr, idx_ptr, out_ptr, N_OUT, SPLIT, R, R_PER_SPLIT, scale,
                          divisor, BLOCK: tl.constexpr, OP: tl.constexpr, AGG: tl.constexpr,
                          ORD: tl.constexpr, NEUTRAL: tl.constexpr):
    o = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = o < N_OUT
    acc = tl.full([BLOCK], NEUTRAL, tl.float32)
    m2 = tl.zeros([BLOCK], dtype=tl.float32)
    best = tl.zeros([BLOCK], dtype=tl.int64)
    for s in range(0, SPLIT):
        v = tl.load(val_ptr + s * N_OUT + o, mask=mask, other=0.0)
        if OP == "argmax" or OP == "argmin":
            i = tl.load(idx_ptr + s * N_OUT + o, mask=mask, other=0)
            # Splits in index order: the first one holding a NaN (value NaN, index its
            # first NaN) wins, and nothing replaces a NaN.
            if OP == "argmax":
                take = (v > acc) | ((v != v) & (acc == acc))
            else:
                take = (v < acc) | ((v != v) & (acc == acc))
            best = tl.where(take, i, best)
            acc = tl.where(take, v, acc)
        elif OP == "var" or OP == "std":
            m2_s = tl.load(val_ptr + (SPLIT + s) * N_OUT + o, mask=mask, other=0.0)
            n_s = tl.minimum(tl.maximum(R - s * R_PER_SPLIT, 0), R_PER_SPLIT).to(tl.float32)
            acc, m2 = _chan(acc, m2, s * R_PER_SPLIT * 1.0, v, m2_s, n_s)
        else:
            acc = _combine(acc, v, AGG)
    if OP == "argmax" or OP == "argmin":
        tl.store(out_ptr + o, best, mask=mask)
    else:
        acc = _finish(acc, m2, OP, ORD, scale, divisor)
        tl.store(out_ptr + o, acc.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        dim = kwargs.get("dim", args[0] if args else {{DIM}})
        self.dim = dim if isinstance(dim, int) else {{DIM}}

    def forward(self, x):
        {{> dim_view}}
        op = "{{OP}}"
        order = "{{ORD}}"  # norm only
        correction = {{CORRECTION}}  # var / std only
        if op == "norm":
            agg = {"inf": "max", "-inf": "min"}.get(order, "sum")
            neutral = float("inf") if order == "-inf" else 0.0  # max |x| >= 0
        else:
            agg = {"prod": "prod", "max": "max", "min": "min"}.get(op, "sum")
            neutral = {"max": float("-inf"), "argmax": float("-inf"), "min": float("inf"),
                       "argmin": float("inf"), "prod": 1.0}.get(op, 0.0)
        out_shape = list(x.shape)
        if {{KEEPDIM}}:
            out_shape[dim] = 1
        else:
            del out_shape[dim]
        out_dtype = torch.int64 if op in ("argmax", "argmin") else x.dtype
        out = torch.empty(out_shape, device=x.device, dtype=out_dtype)
        if R == 0:
            # An empty reduced dim, like torch: ops without an identity raise; sum and the
            # 2-, 1- and 0-norms are 0, prod 1, mean / var / std nan (0 / 0).
            if op in ("max", "min", "argmax", "argmin"):
                raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size.")
            if op == "norm" and order in ("inf", "-inf"):
                raise RuntimeError(f"linalg.vector_norm cannot compute the {order} norm on the "
                                   f"dimension {dim} because this dimension is empty and the "
                                   "operation does not have an identity")
            return out.fill_({"sum": 0.0, "norm": 0.0, "prod": 1.0}.get(op, float("nan")))
        n_out = OUTER * INNER
        if n_out == 0:
            return out
        BLOCK_R = min({{BLOCK_R}}, triton.next_power_of_2(R))
        BLOCK_I = min({{BLOCK_I}}, triton.next_power_of_2(INNER))
        SPLIT_R = min({{SPLIT_R}}, triton.cdiv(R, BLOCK_R))
        r_per_split = triton.cdiv(triton.cdiv(R, SPLIT_R), BLOCK_R) * BLOCK_R
        num_inner_blocks = triton.cdiv(INNER, BLOCK_I)  # 1 when INNER == 1: a row per program
        grid = (OUTER * num_inner_blocks, SPLIT_R)
        divisor = float(max(0, R - correction))
        if SPLIT_R == 1:
            val = idx = out
        else:
            # var/std: means in rows [0, SPLIT_R), M2 in rows [SPLIT_R, 2 * SPLIT_R).
            rows = 2 * SPLIT_R if op in ("var", "std") else SPLIT_R
            val = torch.empty((rows, n_out), device=x.device, dtype=torch.float32)
            idx = val  # indices: argmax/argmin only
            if op in ("argmax", "argmin"):
                idx = torch.empty((SPLIT_R, n_out), device=x.device, dtype=torch.int64)
        reduce_kernel[grid](
            x, val, idx, out, R, INNER, num_inner_blocks, r_per_split, n_out, 1.0 / R, divisor,
            BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, OP=op, AGG=agg, ORD=order, NEUTRAL=neutral,
            FINAL=SPLIT_R == 1, ROW=INNER == 1,
            num_warps={{num_warps}}, num_stages={{num_stages}})
        if SPLIT_R > 1:
            COMBINE_BLOCK = 256
            reduce_combine_kernel[(triton.cdiv(n_out, COMBINE_BLOCK),)](
                val, idx, out, n_out, SPLIT_R, R, r_per_split, 1.0 / R, divisor,
                BLOCK=COMBINE_BLOCK, OP=op, AGG=agg, ORD=order, NEUTRAL=neutral)
        return out
