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
        rf = r.detach().to(torch.float64 if r.dtype == torch.float64 else torch.float32)
        cf = c.detach().to(rf.dtype)
        r_fin = torch.isfinite(rf)
        c_fin = torch.isfinite(cf)
        bad_nonfinite = (~c_fin) & r_fin
        if bool(bad_nonfinite.any()):
            flat = int(bad_nonfinite.flatten().to(torch.uint8).argmax())
            res.update(ok=False, worst_index=_index_str(flat, r.shape, i, n),
                       max_abs_error=float("inf"), max_rel_error=float("inf"),
                       reason=f"output {i}: {int(bad_nonfinite.sum())} NaN/Inf values where "
                       "the reference is finite")
            return res
        ref_nonfinite = ~r_fin
        if bool(ref_nonfinite.any()):
            same = (torch.isnan(rf) & torch.isnan(cf)) | (rf == cf)
            mismatch = ref_nonfinite & ~same
            if bool(mismatch.any()):
                flat = int(mismatch.flatten().to(torch.uint8).argmax())
                res.update(ok=False, worst_index=_index_str(flat, r.shape, i, n),
                           reason=f"output {i}: non-finite reference values not matched")
                return res
        both = r_fin & c_fin
        rf = torch.where(both, rf, torch.zeros_like(rf))
        cf = torch.where(both, cf, torch.zeros_like(cf))
        abs_err = (cf - rf).abs()
        tol = atol + rtol * rf.abs()
        excess = abs_err - tol
        rel_err = abs_err / rf.abs().clamp_min(max(atol, 1e-12))
        m_abs = float(abs_err.max())
        m_rel = float(rel_err.max())
        res["max_abs_error"] = max(res["max_abs_error"], m_abs)
        res["max_rel_error"] = max(res["max_rel_error"], m_rel)
        flat = int(excess.flatten().argmax())
        e = float(excess.flatten()[flat])
        if worst_excess is None or e > worst_excess:
            worst_excess = e
            res["worst_index"] = _index_str(flat, r.shape, i, n)
        if e > 0:
            n_bad = int((excess > 0).sum())
            got = float(cf.flatten()[flat])
            want = float(rf.flatten()[flat])
            res.update(ok=False, reason=f"output {i}: {n_bad} of {r.numel()} elements outside "
                       f"atol={atol:g} rtol={rtol:g}; worst at {res['worst_index']}: "
                       f"got {got:.6g}, expected {want:.6g}")
            return res
    return res


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
