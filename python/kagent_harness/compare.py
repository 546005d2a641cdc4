"""Output comparison: exact shape and dtype, NaN/Inf, per-dtype atol/rtol.

Runs only in the supervisor, on tensors it loaded itself (weights_only) from the child.
"""

import torch

from kagent_harness.protocol import default_tolerance


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def tolerances(ref_outputs, atol=None, rtol=None):
    """The request's atol/rtol where given, else the loosest default over output dtypes."""
    da, dr = 0.0, 0.0
    for r in ref_outputs:
        a, b = default_tolerance(dtype_name(r.dtype))
        da, dr = max(da, a), max(dr, b)
    return (da if atol is None else atol), (dr if rtol is None else rtol)


def _index_str(flat_index, shape, which, n_outputs):
    idx = []
    for dim in reversed(shape):
        idx.append(flat_index % dim if dim else 0)
        flat_index //= dim if dim else 1
    s = "[" + ", ".join(str(i) for i in reversed(idx)) + "]"
    return f"output {which} {s}" if n_outputs > 1 else s


# Elements compared at once: the comparison's temporaries (a handful of fp32 copies of
# the chunk) stay near 2 GiB however large the output (a 6 GiB output compared whole
# took ~50 GiB of temporaries next to a job's kept trials).
CHUNK_ELEMENTS = 1 << 26


def _float_stats(r, c, atol, rtol):
    """The statistics _float_stats_torch describes: on the GPU for fp32, fp16 and bf16
    outputs from one fused kernel (compare_fused.py), else from torch's kernels."""
    if r.is_cuda:
        from kagent_harness import compare_fused
        if r.dtype in compare_fused.DTYPES:
            return compare_fused.float_stats(r, c, atol, rtol)
    return _float_stats_torch(r, c, atol, rtol)


def _float_stats_torch(r, c, atol, rtol):
    """One pass over a floating output in chunks of CHUNK_ELEMENTS (flat order): NaN/Inf
    where the reference is finite (count, first index), unmatched non-finite reference
    values (first index), and over the elements finite in both: max |c - r|, max
    relative error, the largest excess over atol + rtol*|r| with its index and values,
    and how many elements exceed it."""
    wide = torch.float64 if r.dtype == torch.float64 else torch.float32
    rflat, cflat = r.detach().reshape(-1), c.detach().reshape(-1)
    st = {"bad_nonfinite": 0, "bad_nonfinite_first": None, "ref_mismatch_first": None,
          "max_abs": 0.0, "max_rel": 0.0, "worst_flat": 0, "worst_excess": None,
          "worst_got": 0.0, "worst_want": 0.0, "n_bad": 0}
    for lo in range(0, rflat.numel(), CHUNK_ELEMENTS):
        rf = rflat[lo:lo + CHUNK_ELEMENTS].to(wide)
        cf = cflat[lo:lo + CHUNK_ELEMENTS].to(wide)
        r_fin = torch.isfinite(rf)
        c_fin = torch.isfinite(cf)
        bad = (~c_fin) & r_fin
        nb = int(bad.sum())
        if nb:
            if st["bad_nonfinite_first"] is None:
                st["bad_nonfinite_first"] = lo + int(bad.to(torch.uint8).argmax())
            st["bad_nonfinite"] += nb
        if st["ref_mismatch_first"] is None and not bool(r_fin.all()):
            same = (torch.isnan(rf) & torch.isnan(cf)) | (rf == cf)
            mismatch = (~r_fin) & ~same
            if bool(mismatch.any()):
                st["ref_mismatch_first"] = lo + int(mismatch.to(torch.uint8).argmax())
        both = r_fin & c_fin
        rf = torch.where(both, rf, torch.zeros_like(rf))
        cf = torch.where(both, cf, torch.zeros_like(cf))
        abs_err = (cf - rf).abs()
        excess = abs_err - (atol + rtol * rf.abs())
        rel_err = abs_err / rf.abs().clamp_min(max(atol, 1e-12))
        st["max_abs"] = max(st["max_abs"], float(abs_err.max()))
        st["max_rel"] = max(st["max_rel"], float(rel_err.max()))
        k = int(excess.argmax())
        e = float(excess[k])
        if st["worst_excess"] is None or e > st["worst_excess"]:
            st.update(worst_excess=e, worst_flat=lo + k, worst_got=float(cf[k]),
                      worst_want=float(rf[k]))
        st["n_bad"] += int((excess > 0).sum())
    return st


def compare(ref_outputs, cand_outputs, atol, rtol):
    """Compares candidate outputs with reference outputs.

    Returns a dict: ok, max_abs_error, max_rel_error, worst_index, reason.
    allclose semantics: |c - r| <= atol + rtol * |r| elementwise; non-finite reference
    values must be matched exactly; non-finite candidate values where the reference is
    finite fail.
    """
    res = {"ok": True, "max_abs_error": 0.0, "max_rel_error": 0.0, "worst_index": "",
           "reason": ""}
    if len(ref_outputs) != len(cand_outputs):
        res.update(ok=False, reason=f"forward returned {len(cand_outputs)} tensors, "
                   f"the reference {len(ref_outputs)}")
        return res
    worst_excess = None
    n = len(ref_outputs)
    for i, (r, c) in enumerate(zip(ref_outputs, cand_outputs)):
        if not isinstance(c, torch.Tensor):
            res.update(ok=False, reason=f"output {i} is not a tensor")
            return res
        if tuple(c.shape) != tuple(r.shape):
            res.update(ok=False, reason=f"output {i} has shape {list(c.shape)}, "
                       f"expected {list(r.shape)}")
            return res
        if c.dtype != r.dtype:
            res.update(ok=False, reason=f"output {i} has dtype {dtype_name(c.dtype)}, "
                       f"expected {dtype_name(r.dtype)}")
            return res
        if r.numel() == 0:
            continue
        c = c.to(r.device)
        if r.dtype == torch.bool or not (r.is_floating_point() or r.is_complex()):
            diff = (c.to(torch.int64) - r.to(torch.int64)).abs().to(torch.float64) \
                if r.dtype != torch.bool else (c != r).to(torch.float64)
            m = float(diff.max())
            if m > res["max_abs_error"]:
                res["max_abs_error"] = m
                res["max_rel_error"] = m
            if m > atol:
                flat = int(diff.flatten().argmax())
                res.update(ok=False, worst_index=_index_str(flat, r.shape, i, n),
                           reason=f"output {i}: {int((diff > atol).sum())} of {r.numel()} "
                           f"elements differ (max {m})")
                return res
            continue
        st = _float_stats(r, c, atol, rtol)
        if st["bad_nonfinite"]:
            res.update(ok=False, worst_index=_index_str(st["bad_nonfinite_first"], r.shape, i, n),
                       max_abs_error=float("inf"), max_rel_error=float("inf"),
                       reason=f"output {i}: {st['bad_nonfinite']} NaN/Inf values where "
                       "the reference is finite")
            return res
        if st["ref_mismatch_first"] is not None:
            res.update(ok=False, worst_index=_index_str(st["ref_mismatch_first"], r.shape, i, n),
                       reason=f"output {i}: non-finite reference values not matched")
            return res
        res["max_abs_error"] = max(res["max_abs_error"], st["max_abs"])
        res["max_rel_error"] = max(res["max_rel_error"], st["max_rel"])
        flat, e = st["worst_flat"], st["worst_excess"]
        if worst_excess is None or e > worst_excess:
            worst_excess = e
            res["worst_index"] = _index_str(flat, r.shape, i, n)
        if e > 0:
            res.update(ok=False, reason=f"output {i}: {st['n_bad']} of {r.numel()} elements "
                       f"outside atol={atol:g} rtol={rtol:g}; worst at {res['worst_index']}: "
                       f"got {st['worst_got']:.6g}, expected {st['worst_want']:.6g}")
            return res
    return res


def output_spec(outputs):
    """[[shape, dtype name], ...] of a list of output tensors: what receive buffers and
    the child's poisoning are made from."""
    return [[list(o.shape), dtype_name(o.dtype)] for o in outputs]


def all_finite(outputs):
    for o in outputs:
        if (o.is_floating_point() or o.is_complex()) and not bool(torch.isfinite(o).all()):
            return False
    return True


def storage_span(t):
    """[start, end) byte range of the memory a tensor can touch, or None when empty."""
    if t.numel() == 0:
        return None
    start = t.data_ptr()
    extent = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))
    return start, start + extent * t.element_size()


def overlaps(a, b):
    sa, sb = storage_span(a), storage_span(b)
    if sa is None or sb is None or a.device != b.device:
        return False
    return sa[0] < sb[1] and sb[0] < sa[1]
