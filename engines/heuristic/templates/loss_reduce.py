# kagent-template: loss_reduce
# Elementwise loss of (predictions, targets) reduced to a scalar (mean, sum or batchmean)
# in two deterministic stages: grid (SPLIT_N,), each program streams a contiguous slice
# of the flattened inputs in BLOCK chunks into a BLOCK-wide fp32 accumulator and writes
# one partial sum; a second one-program kernel adds the SPLIT_N partials in order, scales
# and casts. No atomics: the result is the same run to run.
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _folded(offs0, period, BLOCK: tl.constexpr, MODE: tl.constexpr):
    """Offsets offs0 + arange(BLOCK) of the flattened broadcast shape, read in an input
    that repeats every `period` elements. MODE 0: no repeat; 1: period >= BLOCK (one
    scalar modulo, at most one wrap inside the block); 2: a shorter period (32-bit
    modulo per element on values below period + BLOCK). No 64-bit division per element."""
    if MODE == 0:
        return offs0 + tl.arange(0, BLOCK)
    base = offs0 % period
    if MODE == 1:
        r = base + tl.arange(0, BLOCK)
        return tl.where(r >= period, r - period, r)
    return (base.to(tl.int32) + tl.arange(0, BLOCK)) % period


@triton.jit
def loss_partial_kernel(p_ptr, t_ptr, part_ptr, n, per_program, beta, p_period, t_period,
                        BLOCK: tl.constexpr, LOSS: tl.constexpr, LOG_INPUT: tl.constexpr,
                        P_MODE: tl.constexpr, T_MODE: tl.constexpr):
    pid = tl.program_id(0)
    start = pid.to(tl.int64) * per_program
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, per_program, BLOCK):
        offs = start + i + tl.arange(0, BLOCK)
        mask = offs < n
        # An input broadcast over leading dims repeats every `period` elements of the
        # flattened broadcast shape: read in place, never expanded.
        p_offs = _folded(start + i, p_period, BLOCK, P_MODE)
        t_offs = _folded(start + i, t_period, BLOCK, T_MODE)
        p = tl.load(p_ptr + p_offs, mask=mask, other=1.0).to(tl.float32)  # log(1) = 0 off the end
        t = tl.load(t_ptr + t_offs, mask=mask, other=0.0).to(tl.float32)
        if LOSS == "mse":
            d = p - t
            v = d * d
        elif LOSS == "smooth_l1":
            d = tl.abs(p - t)
            v = tl.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
        elif LOSS == "huber":
            d = tl.abs(p - t)
            v = tl.where(d < beta, 0.5 * d * d, beta * (d - 0.5 * beta))
        elif LOSS == "hinge":
            v = tl.maximum(1.0 - p * t, 0.0)
        elif LOSS == "kl_div":
            # torch.kl_div(input, target) = xlogy(target, target) - target * input, where
            # input is log(predictions) when the reference takes the log itself.
            if LOG_INPUT:
                logp = tl.log(p)
            else:
                logp = p
            tlogt = tl.where(t > 0.0, t * tl.log(tl.where(t > 0.0, t, 1.0)), 0.0)
            v = tlogt - t * logp
        else:
            tl.static_assert(False, "unknown loss")
        acc += tl.where(mask, v, 0.0)
    tl.store(part_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def loss_final_kernel(part_ptr, out_ptr, num_parts, scale, BLOCK_P: tl.constexpr):
    offs = tl.arange(0, BLOCK_P)
    parts = tl.load(part_ptr + offs, mask=offs < num_parts, other=0.0)
    total = tl.sum(parts, axis=0) * scale
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def _operand(x, shape):
    """(tensor, period, repeats) for reading x as its broadcast to `shape` flattened: x
    itself (contiguous) with period x.numel() when its dims, leading ones dropped, are
    shape's trailing dims and it has fewer elements; else x expanded to shape."""
    dims = list(x.shape)
    while dims and dims[0] == 1:
        dims.pop(0)
    if (x.numel() > 0 and x.numel() < math.prod(shape) and
            tuple(dims) == tuple(shape[len(shape) - len(dims):])):
        return x.contiguous(), x.numel(), True
    return x.expand(shape).contiguous(), 1, False


def _fold_mode(repeats, period, block):
    """_folded's MODE for an operand read with `period` (repeats) or as it is."""
    return 0 if not repeats else 1 if period >= block else 2


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.beta = float(kwargs.get("beta", kwargs.get("delta", {{BETA}})))

    def forward(self, predictions, targets):
        p, t = predictions, targets
        out_dtype = torch.promote_types(p.dtype, t.dtype)
        shape = torch.broadcast_shapes(p.shape, t.shape)
        # An input whose shape is the broadcast shape's trailing dims (targets (N,) against
        # predictions (M, N)) is read in place with a period; any other broadcast is
        # expanded (KernelBench's hinge loss expanded a 128 KB target to 4 GiB, tripling
        # the traffic).
        p, p_period, p_repeats = _operand(p, shape)
        t, t_period, t_repeats = _operand(t, shape)
        n = math.prod(shape)
        reduction = "{{REDUCTION}}"
        if reduction == "mean":
            scale = 1.0 / max(n, 1)
        elif reduction == "batchmean":
            scale = 1.0 / (shape[0] if len(shape) > 0 else 1)
        else:
            scale = 1.0
        out = torch.empty((), device=p.device, dtype=out_dtype)
        BLOCK = {{BLOCK}}
        SPLIT_N = {{SPLIT_N}}
        parts = min(SPLIT_N, max(1, triton.cdiv(n, BLOCK)))
        per_program = triton.cdiv(triton.cdiv(n, parts), BLOCK) * BLOCK
        partials = torch.empty(parts, device=p.device, dtype=torch.float32)
        loss_partial_kernel[(parts,)](
            p, t, partials, n, per_program, self.beta, p_period, t_period,
            BLOCK=BLOCK, LOSS="{{LOSS}}", LOG_INPUT={{LOG_INPUT}},
            P_MODE=_fold_mode(p_repeats, p_period, BLOCK),
            T_MODE=_fold_mode(t_repeats, t_period, BLOCK),
            num_warps={{num_warps}}, num_stages={{num_stages}})
        loss_final_kernel[(1,)](partials, out, parts, scale,
                                BLOCK_P=triton.next_power_of_2(parts))
        return out
