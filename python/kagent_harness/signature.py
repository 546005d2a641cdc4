"""The reference's op signature (proto OpSignature): aten ops with shapes, strides and
dtypes, recorded with a TorchDispatchMode around one forward; FLOPs and minimum bytes.

FLOPs: exact for the matmul family (mm, addmm, bmm, baddbmm, mv, addmv, dot, matmul-like
_scaled_mm), convolutions (2 * MACs) and the fused scaled-dot-product attention ops
(2 * (D + Dv) per kept query-key pair: Q @ K^T and P @ V, the top-left triangle only when
is_causal); every other compute op counts one FLOP per output element; views, copies and
allocations count zero.
min_bytes: every tensor the forward reads (its inputs, the module's parameters and
buffers) read once, plus every output written once.
scalars: each op's numeric non-tensor arguments by schema name (see _scalars), so that
torch.selu (aten::elu with alpha 1.6733, scale 1.0507) differs from F.elu (alpha 1) and
leaky_relu's slope, hardtanh's bounds, softplus's beta/threshold are known.
strings: each op's string arguments by schema name (see _strings), e.g. aten::gelu
{approximate: "tanh"}, so that the tanh approximation is known.
"""

import math
import numbers
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kagent_harness.compare import dtype_name
from kagent_harness.loader import flatten_outputs

_ZERO_COST = {
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "as_strided",
    "detach", "alias", "squeeze", "unsqueeze", "slice", "select", "split", "split_with_sizes",
    "chunk", "unbind", "narrow", "flatten", "unflatten", "view_as_real", "view_as_complex",
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like",
    "full", "full_like", "new_empty", "new_zeros", "new_ones", "new_full", "clone", "copy_",
    "_to_copy", "to", "contiguous", "lift_fresh", "scalar_tensor", "_local_scalar_dense",
    "resize_", "set_", "fill_", "zero_", "arange", "cat", "stack", "index_select", "gather",
    "repeat", "expand_as", "_reshape_alias", "unfold", "lift_fresh_copy", "copy",
}


def _info(t, tensor_id=None):
    info = {"shape": list(t.shape), "strides": list(t.stride()), "dtype": dtype_name(t.dtype)}
    if tensor_id is not None:
        info["id"] = tensor_id
    return info


def _tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out.extend(_tensors(v))
        return out
    return []


_MAX_SCALARS = 16  # entries per op
_MAX_LIST = 8      # elements of one list argument


def _number(v):
    """v as a float when it is a finite real number (bools 0/1), else None."""
    if isinstance(v, bool):
        return 1.0 if v else 0.0
    if not isinstance(v, numbers.Real):
        return None
    try:
        f = float(v)
    except (OverflowError, TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _schema_values(func, args, kwargs):
    """(name, value) of each schema argument, in schema order: passed positionally or by
    keyword, else its default; arguments with neither are skipped (none without a schema)."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return
    for i, arg in enumerate(schema.arguments):
        if i < len(args):
            yield arg.name, args[i]
        elif arg.name in kwargs:
            yield arg.name, kwargs[arg.name]
        elif arg.has_default_value():
            yield arg.name, arg.default_value


def _scalars(func, args, kwargs):
    """The op's numeric non-tensor arguments by schema name (proto OpRecord.scalars).

    Values passed positionally or by keyword, else the schema's default; bools as 0/1; a
    Python number passed where the schema takes a tensor (mul's `other`) counts. A list of
    numbers (dim, stride) of at most _MAX_LIST elements is recorded as name.0, name.1, ...
    Strings, dtypes, devices, None and non-finite values are left out; at most
    _MAX_SCALARS entries, in schema order (a list that would not fit is left out whole).
    """
    out = {}
    for name, v in _schema_values(func, args, kwargs):
        if isinstance(v, (list, tuple)):
            if not v or len(v) > _MAX_LIST:
                continue
            nums = [_number(e) for e in v]
            if any(n is None for n in nums) or len(out) + len(nums) > _MAX_SCALARS:
                continue
            for j, n in enumerate(nums):
                out[f"{name}.{j}"] = n
            continue
        n = _number(v)
        if n is not None and len(out) < _MAX_SCALARS:
            out[name] = n
    return out


_MAX_STRINGS = 8
_MAX_STRING_LEN = 32


def _strings(func, args, kwargs):
    """The op's string arguments by schema name (proto OpRecord.strings).

    Values passed positionally or by keyword, else the schema's string default (gelu's
    approximate="none"); strings over _MAX_STRING_LEN characters are left out; at most
    _MAX_STRINGS entries, in schema order.
    """
    out = {}
    for name, v in _schema_values(func, args, kwargs):
        if isinstance(v, str) and len(v) <= _MAX_STRING_LEN and len(out) < _MAX_STRINGS:
            out[name] = v
    return out


def _prod(xs):
    return math.prod(int(v) for v in xs)


_ATTENTION = {
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_fused_attention_overrideable", "scaled_dot_product_attention",
}


def _attention_pairs(lq, lk, causal):
    """Query-key pairs an attention computes: all, or torch's top-left causal triangle
    (key j kept for query i when j <= i)."""
    if not causal:
        return lq * lk
    if lq <= lk:
        return lq * (lq + 1) // 2
    return lk * (lk + 1) // 2 + (lq - lk) * lk


def op_flops(name, args, outs, scalars=None):
    """FLOPs of one aten op given its args, outputs (tensors or infos) and recorded
    scalars (is_causal for attention)."""
    base = name.split(".")[0]
    if base.startswith("aten::"):
        base = base[6:]
    try:
        if base in _ATTENTION:
            q, k, v = args[0], args[1], args[2]
            heads = _prod(q.shape[:-2])
            causal = bool((scalars or {}).get("is_causal", 0))
            pairs = _attention_pairs(q.shape[-2], k.shape[-2], causal)
            return 2.0 * heads * pairs * (q.shape[-1] + v.shape[-1])
        if base in ("mm", "_scaled_mm"):
            a, b = args[0], args[1]
            return 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
        if base == "addmm":
            a, b = args[1], args[2]
            return 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
        if base == "bmm":
            a, b = args[0], args[1]
            return 2.0 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
        if base == "baddbmm":
            a, b = args[1], args[2]
            return 2.0 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
        if base == "mv":
            a = args[0]
            return 2.0 * a.shape[0] * a.shape[1]
        if base == "addmv":
            a = args[1]
            return 2.0 * a.shape[0] * a.shape[1]
        if base in ("dot", "vdot"):
            return 2.0 * args[0].shape[0]
        if base in ("convolution", "_convolution", "conv2d", "conv1d", "conv3d",
                    "cudnn_convolution", "mkldnn_convolution"):
            x, w = args[0], args[1]
            transposed = bool(args[6]) if len(args) > 6 and isinstance(args[6], bool) else False
            if transposed:
                return 2.0 * _prod(x.shape) * w.shape[1] * _prod(w.shape[2:])
            return 2.0 * _prod(outs[0].shape) * w.shape[1] * _prod(w.shape[2:])
    except (AttributeError, IndexError, TypeError):
        return 0.0
    if base.rstrip("_") in _ZERO_COST or base in _ZERO_COST:
        return 0.0
    return float(sum(_prod(o.shape) for o in outs))


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []
        self.flops = 0.0
        # id(tensor) -> (number, weak reference). The entry goes when its tensor dies, so a
        # later tensor that Python gives the same id() gets a number of its own; tensors
        # are not kept alive (a reference's intermediates are freed as they would be).
        self._ids = {}
        self._next_id = 1

    def _id(self, t):
        key = id(t)
        entry = self._ids.get(key)
        if entry is None:
            def forget(_, key=key, ids=self._ids):
                ids.pop(key, None)
            entry = self._ids[key] = (self._next_id, weakref.ref(t, forget))
            self._next_id += 1
        return entry[0]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = "aten::" + str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") \
            else str(func)
        ins = _tensors(list(args)) + _tensors(list(kwargs.values()))
        outs = _tensors(out)
        rec = {"op": name, "inputs": [_info(t, self._id(t)) for t in ins],
               "outputs": [_info(t, self._id(t)) for t in outs]}
        try:
            scalars = _scalars(func, args, kwargs)
        except Exception:  # noqa: BLE001 - an odd schema never costs the signature
            scalars = {}
        if scalars:
            rec["scalars"] = scalars
        try:
            strings = _strings(func, args, kwargs)
        except Exception:  # noqa: BLE001 - as for scalars
            strings = {}
        if strings:
            rec["strings"] = strings
        self.ops.append(rec)
        self.flops += op_flops(name, list(args), outs, scalars)
        return out


def _nbytes(t):
    return t.numel() * t.element_size()


def record(model, inputs):
    """Runs model(*inputs) once under the recorder; returns an OpSignature dict."""
    rec = _Recorder()
    with torch.no_grad():
        with rec:
            out = model(*inputs)
    outs = flatten_outputs(out)
    read = sum(_nbytes(t) for t in _tensors(list(inputs)))
    if isinstance(model, torch.nn.Module):
        seen = set()
        for t in list(model.parameters()) + list(model.buffers()):
            if id(t) not in seen:
                seen.add(id(t))
                read += _nbytes(t)
    written = sum(_nbytes(t) for t in outs)
    return {"ops": rec.ops, "flops": float(rec.flops), "min_bytes": float(read + written),
            "op_class": ""}
