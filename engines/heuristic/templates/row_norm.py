# kagent-template: row_norm
# LayerNorm / RMSNorm over a contiguous range of dims, and x divided by its 1-norm, 2-norm
# or max-norm along them (NORM l1: x / x.abs().sum(dims, keepdim=True), or the mean with
# MEAN; l2: x / torch.norm(x, p=2, dim=dims, keepdim=True) or x / sqrt(sum(x^2)); max:
# x / x.abs().amax(dims, keepdim=True)). EPS_MODE says where the reference's eps (EPS)
# enters the denominator: none (a zero slice gives nan as in torch), add (norm + eps),
# add_inside (sqrt(sum + eps), l2), clamp (max(norm, eps): F.normalize's clamp_min). The
# denominator is rounded to the input's dtype, as torch's ops return it, then divides in
# fp32.
# The input is viewed as (OUTER, R, INNER) with R the normalized elements; each program
# owns one outer index and BLOCK_I inner columns. Pass 1 walks R in BLOCK_R chunks
# accumulating statistics in fp32 (LayerNorm: chunked Welford merge of mean and M2,
# numerically stable; RMSNorm and l2: sum of squares; l1: sum of |x|; max: max of |x|,
# NaN propagating); pass 2 normalizes and applies the optional affine weight/bias
# (indexed by r).
# When R fits one chunk (R <= BLOCK_R) the program keeps its tile in registers and reads
# the input once (ONE_PASS): statistics, then normalize from the same values.
# Chunk layout (_chunk): INNER == 1 (ROW, the normalized elements are contiguous, e.g. the
# last dim) uses 1-D [BLOCK_R] chunks at base + r, so loads and stores are vectorized
# and every statistic is a scalar; else a [BLOCK_R, BLOCK_I] tile (r along dim 0, inner
# columns along dim 1) with [BLOCK_I] statistics. Both run the same code below, the
# statistics broadcasting against either chunk.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _chunk(base, r0, offs_i, R, INNER, BLOCK_R: tl.constexpr, ROW: tl.constexpr):
    # Elements r0 .. r0 + BLOCK_R - 1 of the normalized range: (r, element offsets, mask).
    # ROW: r and the chunk are [BLOCK_R]; else r is [BLOCK_R, 1], the chunk [BLOCK_R, BLOCK_I].
    r = r0 + tl.arange(0, BLOCK_R)
    if ROW:
        offs = base + r
        mask = r < R
    else:
        r = r[:, None]
        offs = base + r.to(tl.int64) * INNER + offs_i[None, :]
        mask = (r < R) & (offs_i < INNER)[None, :]
    return r, offs, mask


@triton.jit
def _stat(value, BLOCK_I: tl.constexpr, ROW: tl.constexpr):
    # A statistic's initial value: a scalar (ROW) or one per inner column.
    if ROW:
        s = tl.full([], value, tl.float32)
    else:
        s = tl.full([BLOCK_I], value, tl.float32)
    return s


@triton.jit
def _affine(y, w_ptr, b_ptr, r, R, HAS_W: tl.constexpr, HAS_B: tl.constexpr):
    # y times weight[r], plus bias[r] (each when present); r has the chunk's rank.
    if HAS_W:
        y = y * tl.load(w_ptr + r, mask=r < R, other=0.0).to(tl.float32)
    if HAS_B:
        y = y + tl.load(b_ptr + r, mask=r < R, other=0.0).to(tl.float32)
    return y


@triton.jit
def _max_nan(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _lp_stat(x, NORM: tl.constexpr):
    # One chunk's statistic along axis 0: max |x| (max), else the sum of |x| (l1) or x^2.
    if NORM == "max":
        s = tl.reduce(tl.abs(x), 0, _max_nan)
    elif NORM == "l1":
        s = tl.sum(tl.abs(x), axis=0)
    else:
        s = tl.sum(x * x, axis=0)
    return s


@triton.jit
def _lp_norm(s, dtype, R, eps, NORM: tl.constexpr, MEAN: tl.constexpr,
             EPS_MODE: tl.constexpr):
    # The denominator from its fp32 statistic (sum of |x| or x^2, max |x|): the mean (MEAN),
    # eps inside the root (add_inside), the root (l2), eps added or clamped below (add,
    # clamp), rounded to the input's dtype (torch's ops return it in that dtype), back in
    # fp32 for the division.
    if MEAN:
        s = s / R
    if EPS_MODE == "add_inside":
        s = s + eps
    if NORM == "l2":
        s = tl.sqrt_rn(s)
    if EPS_MODE == "add":
        s = s + eps
    elif EPS_MODE == "clamp":
        s = tl.maximum(s, eps, propagate_nan=tl.PropagateNan.ALL)
    return s.to(dtype).to(tl.float32)


@triton.jit
def row_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, R, INNER, num_inner_blocks, eps,
                    BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, NORM: tl.constexpr,
                    HAS_W: tl.constexpr, HAS_B: tl.constexpr, ONE_PASS: tl.constexpr,
                    ROW: tl.constexpr, MEAN: tl.constexpr, EPS_MODE: tl.constexpr):
    pid = tl.program_id(0)
    outer = pid // num_inner_blocks
    offs_i = (pid % num_inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    base = outer.to(tl.int64) * R * INNER
    if ONE_PASS:
        r, offs, mask = _chunk(base, 0, offs_i, R, INNER, BLOCK_R, ROW)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        if NORM == "l1" or NORM == "l2" or NORM == "max":
            den = _lp_norm(_lp_stat(x, NORM), y_ptr.dtype.element_ty, R, eps, NORM, MEAN,
                           EPS_MODE)
            y = tl.div_rn(x, den)
        else:
            if NORM == "layer":
                mean = tl.sum(x, axis=0) / R
                x = tl.where(mask, x - mean, 0.0)
            rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / R + eps)
            y = _affine(x * rstd, w_ptr, b_ptr, r, R, HAS_W, HAS_B)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
        return
    mean = _stat(0.0, BLOCK_I, ROW)
    m2 = _stat(0.0, BLOCK_I, ROW)
    for r0 in range(0, R, BLOCK_R):
        r, offs, mask = _chunk(base, r0, offs_i, R, INNER, BLOCK_R, ROW)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        if NORM == "layer":
            n_chunk = tl.minimum(R - r0, BLOCK_R).to(tl.float32)  # elements in this chunk
            c_mean = tl.sum(x, axis=0) / n_chunk
            d = tl.where(mask, x - c_mean, 0.0)
            c_m2 = tl.sum(d * d, axis=0)
            count = r0 * 1.0  # every earlier chunk was full
            n_new = count + n_chunk
            delta = c_mean - mean
            mean = mean + delta * (n_chunk / n_new)
            m2 = m2 + c_m2 + delta * delta * (count * n_chunk / n_new)
        elif NORM == "max":
            m2 = _max_nan(m2, _lp_stat(x, NORM))
        else:
            m2 += _lp_stat(x, NORM)
    if NORM == "l1" or NORM == "l2" or NORM == "max":
        den = _lp_norm(m2, y_ptr.dtype.element_ty, R, eps, NORM, MEAN, EPS_MODE)
    else:
        rstd = 1.0 / tl.sqrt(m2 / R + eps)
    for r0 in range(0, R, BLOCK_R):
        r, offs, mask = _chunk(base, r0, offs_i, R, INNER, BLOCK_R, ROW)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        if NORM == "l1" or NORM == "l2" or NORM == "max":
            y = tl.div_rn(x, den)
        else:
            if NORM == "layer":
                x = x - mean
            y = _affine(x * rstd, w_ptr, b_ptr, r, R, HAS_W, HAS_B)
        tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _arg(args, kwargs, index, name, default):
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else default


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.affine = "{{AFFINE}}"
        # The harness copies the reference's state_dict only when the keys match, else the
        # seed alone gives the weights: the LayerNorm is `ln` like the references' (this
        # suite's and KernelBench's `self.ln = nn.LayerNorm(...)`); `norm` reads either.
        # A constructor that gives no normalized_shape (a module with its sizes inside,
        # Model() with no arguments) gets the recorded one: NORM_SHAPE_0..3 (0: no such
        # dim), the recorded eps (EPS; negative: torch's default, None for RMSNorm) and
        # LN_BIAS (LayerNorm(bias=False) records no bias input).
        given = bool(args) or "normalized_shape" in kwargs
        if self.affine != "none" and not given:
            shape = tuple(d for d in ({{NORM_SHAPE_0}}, {{NORM_SHAPE_1}}, {{NORM_SHAPE_2}},
                                      {{NORM_SHAPE_3}}) if d > 0)
            if not shape:
                raise TypeError("row_norm: the constructor gives no normalized_shape and none "
                                "was recorded (more than four normalized dims)")
            eps = {{EPS}}
            args = (shape,)
            kwargs = dict(kwargs, eps=None if eps < 0 else eps)
            if self.affine == "layernorm_module":
                kwargs.setdefault("bias", {{LN_BIAS}})
                if kwargs["eps"] is None:
                    kwargs["eps"] = 1e-05
        if self.affine == "layernorm_module":
            self.ln = nn.LayerNorm(*args, **kwargs)
        elif self.affine == "rmsnorm_module":
            self.norm = nn.RMSNorm(*args, **kwargs)
        else:
            self.eps = float(_arg(args, kwargs, 1, "eps", {{EPS}}))

    @property
    def norm(self):
        return self._modules.get("ln", self._modules.get("norm"))

    def forward(self, x):
        x = x.contiguous()
        if self.affine == "none":
            d0 = {{DIM}} % x.dim()
            d1 = d0 + {{NUM_DIMS}}
            w = b = None
            # l1 / l2 / max: the reference's eps as recorded (EPS_MODE says where it goes).
            eps = {{EPS}} if "{{NORM}}" in ("l1", "l2", "max") else self.eps
        else:
            d1 = x.dim()
            d0 = d1 - len(self.norm.normalized_shape)
            w = self.norm.weight
            b = getattr(self.norm, "bias", None)
            eps = self.norm.eps
            if eps is None:
                eps = torch.finfo(x.dtype).eps
        R = 1
        for s in x.shape[d0:d1]:
            R *= s
        INNER = 1
        for s in x.shape[d1:]:
            INNER *= s
        OUTER = x.numel() // max(1, R * INNER)
        {{> rows_grid}}
        row_norm_kernel[grid](
            x, w if w is not None else x, b if b is not None else x, y,
            R, INNER, num_inner_blocks, float(eps),
            BLOCK_R=BLOCK_R, BLOCK_I=BLOCK_I, NORM="{{NORM}}",
            HAS_W=w is not None, HAS_B=b is not None, ONE_PASS=R <= BLOCK_R, ROW=INNER == 1,
            MEAN={{MEAN}}, EPS_MODE="{{EPS_MODE}}", num_warps={{num_warps}}, num_stages={{num_stages}})
        return y
