"""The own-kernel rule: the work of a gate call is the candidate's own, not one launch.

Two halves, one vocabulary (aten op names as the dispatcher sees them, the same as the
reference's op signature in signature.py):
- OpRecorder (runs in the candidate's process, untrusted): a TorchDispatchMode around
  each gate call's forward that tallies every aten op with the element count of its
  largest tensor argument or result, plus two sentinel ops (one before forward, one
  after) that show whether the mode was still recording. The reply carries a bounded
  summary (summary()); nothing in that process decides the verdict.
- judge_ops / judge_kernels (run in the supervisor, trusted): the rule over that summary,
  the reference's signature and, on the GPU, the CUPTI trace of the call. docs/harness.md
  ("Own-kernel rule") lists what is allowed and rejected; its tables are checked against
  the sets below by python/tests/test_own_kernel.py.

Sizes: an op's size is the numel of its largest tensor argument or result, summed over
every call of that op name in one forward (so a reduction split into per-row calls
counts as much as one call on the whole tensor). It is "comparable" to the problem when
it reaches COMPARABLE_FRACTION of the largest tensor the reference reads (its forward's
inputs, parameters and buffers).
"""

# -- the rule's constants (docs/harness.md, "Own-kernel rule") ---------------------------

# An op's summed size is comparable to the problem's at 1/16 of the largest tensor the
# reference reads. Glue measured in the suite's kernels (problems/*_start.py and the
# heuristic templates' first kernels): sums of per-program partials at most 1/128 of the
# input; the full-size ops legit kernels run are all in GLUE_OPS (allocations, views,
# contiguous copies).
COMPARABLE_FRACTION = 1.0 / 16
# On the GPU the candidate's own kernels must do at least this share of a gate call's
# library-plus-own kernel time (copy and fill kernels are glue and not counted).
MIN_OWN_GPU_SHARE = 0.5

# Always allowed, at any size: allocation, views and layout, copies and fills. They
# cannot compute an answer (a copy_ or a dtype move computes nothing but a conversion).
GLUE_OPS = frozenset({
    # allocation
    "empty", "empty_like", "empty_strided", "empty_permuted", "zeros", "zeros_like",
    "ones", "ones_like", "full", "full_like", "new_empty", "new_empty_strided",
    "new_zeros", "new_ones", "new_full", "scalar_tensor", "arange", "resize_",
    # views and layout
    "view", "_unsafe_view", "reshape", "_reshape_alias", "view_as", "as_strided",
    "permute", "transpose", "t", "expand", "expand_as", "squeeze", "unsqueeze", "select",
    "slice", "narrow", "split", "split_with_sizes", "chunk", "unbind", "flatten",
    "unflatten", "unfold", "alias", "detach", "lift_fresh", "movedim", "swapaxes",
    "view_as_real", "view_as_complex", "_local_scalar_dense", "item", "set_",
    # copies, dtype moves and fills
    "clone", "contiguous", "copy_", "_to_copy", "to", "_copy_from", "_copy_from_and_resize",
    "fill_", "zero_", "lift_fresh_copy", "copy", "promote_types", "result_type",
    "is_same_size", "is_nonzero", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
})

# Matrix products, convolutions, attention: rejected at any size (a kernel needs none of
# them for glue). Exact names, then name prefixes.
HEAVY_OPS = frozenset({
    "mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul", "linear", "einsum", "mv",
    "addmv", "dot", "vdot", "inner", "outer", "ger", "addr", "tensordot", "kron",
    "chain_matmul", "linalg_multi_dot", "bilinear", "_scaled_mm", "_int_mm",
    "_weight_int4pack_mm", "_weight_int8pack_mm", "_addmm_activation", "_mixed_dtypes_linear",
    "_sparse_mm", "fbgemm_linear_fp16_weight", "mkldnn_linear", "_mkldnn_linear",
    "scaled_dot_product_attention", "multi_head_attention_forward", "_native_multi_head_attention",
    "im2col", "col2im",
})
HEAVY_PREFIXES = (
    "conv", "_conv", "cudnn_", "_cudnn_", "mkldnn_", "_mkldnn_", "miopen_", "slow_conv",
    "_slow_conv", "thnn_conv", "_nnpack_", "_scaled_dot_product_", "_flash_attention",
    "_efficient_attention", "_fused_sdp", "_transformer_", "_scaled_grouped_mm",
)

# Reductions, normalizations, softmax, scans, pooling and losses: rejected when their
# summed size is comparable (the work the op is about); allowed on small tensors (the
# final sum of a kernel's per-program partials). Exact names, then prefixes.
REDUCTION_OPS = frozenset({
    "sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "max", "min", "aminmax",
    "argmax", "argmin", "std", "var", "std_mean", "var_mean", "norm", "linalg_vector_norm",
    "linalg_norm", "frobenius_norm", "nuclear_norm", "renorm", "logsumexp", "softmax",
    "_softmax", "log_softmax", "_log_softmax", "_safe_softmax", "cumsum", "cumprod",
    "cummax", "cummin", "logcumsumexp", "_logcumsumexp", "layer_norm", "native_layer_norm",
    "group_norm", "native_group_norm", "batch_norm", "native_batch_norm",
    "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
    "_batch_norm_impl_index", "instance_norm", "rms_norm", "_fused_rms_norm", "normalize",
    "cosine_similarity", "pairwise_distance", "cdist", "_cdist_forward", "pdist",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "nll_loss_forward",
    "nll_loss2d", "nll_loss2d_forward", "cross_entropy_loss", "kl_div", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "hinge_embedding_loss", "margin_ranking_loss",
    "triplet_margin_loss", "soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "cosine_embedding_loss", "poisson_nll_loss", "sort", "argsort", "topk", "kthvalue",
    "median", "nanmedian", "mode", "histc", "bincount", "trace", "embedding_bag",
    "_embedding_bag",
})
# Not in REDUCTION_OPS: all, any, count_nonzero (checks on the inputs, not an op's
# work; rejected at the problem's size only when the reference itself runs them).
REDUCTION_PREFIXES = (
    "max_pool", "avg_pool", "adaptive_max_pool", "adaptive_avg_pool", "lp_pool",
    "fractional_max_pool", "_adaptive_avg_pool", "_softmax", "_log_softmax",
    "_native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm", "_segment_reduce",
)

# CUPTI / torch.profiler kernel names that are a library's matrix product, convolution
# or attention (the GPU-side twin of HEAVY_OPS); an own kernel's name never counts.
HEAVY_KERNEL_PATTERNS = (
    "cublas", "cutlass", "cudnn", "gemm", "gemv", "xmma", "nvjet", "cutensor", "flash_fwd",
    "fmha", "conv2d", "conv3d", "convolve", "implicit_convolve", "winograd", "dot_kernel",
    "splitkreduce", "sm80_xmma", "sm90_xmma", "triton_tem_",
)
# Library kernels that only move or fill memory: glue, left out of the GPU-time share.
GLUE_KERNEL_PATTERNS = ("copy", "memcpy", "memset", "fillfunctor", "fill_kernel")


def base_name(op):
    """'aten::sum.dim_IntList' -> 'sum'; 'aten::relu_' -> 'relu' (in-place as out-of-place)."""
    name = str(op)
    if "::" in name:
        name = name.split("::", 1)[1]
    name = name.split(".", 1)[0]
    if name.endswith("_") and not name.endswith("__") and name[:-1] and \
            name not in GLUE_OPS:
        name = name[:-1]
    return name


def op_class(op):
    """'glue', 'heavy', 'reduction', 'device_move' or 'compute' for an op name."""
    if op == DEVICE_MOVE:
        return "device_move"
    b = base_name(op)
    raw = str(op).split("::", 1)[-1].split(".", 1)[0]
    if b in GLUE_OPS or raw in GLUE_OPS:
        return "glue"
    if b in HEAVY_OPS or b.startswith(HEAVY_PREFIXES):
        return "heavy"
    if b in REDUCTION_OPS or b.startswith(REDUCTION_PREFIXES):
        return "reduction"
    return "compute"


def reference_compute_ops(signature):
    """Base names of the reference's non-glue ops (signature: signature.record's dict)."""
    out = set()
    for rec in (signature or {}).get("ops", []):
        name = rec.get("op", "")
        if op_class(name) != "glue":
            out.add(base_name(name))
    return out


# -- the recorder (the candidate's process) -----------------------------------------------

MAX_OPS = 256          # op names in a summary
DEVICE_MOVE = "harness::device_move"   # a copy between devices (recorded under this name)
SENTINEL = "kagent_sentinel"


def make_recorder():
    """An OpRecorder (imports torch; only the candidate's process calls this)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    def tensors(x, out):
        if isinstance(x, torch.Tensor):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            for v in x:
                tensors(v, out)
        elif isinstance(x, dict):
            for v in x.values():
                tensors(v, out)
        return out

    class OpRecorder(TorchDispatchMode):
        """Tallies aten ops: {name: [calls, summed size, largest size]}."""

        def __init__(self):
            super().__init__()
            self.ops = {}
            self.events = 0
            self.sentinels = 0
            self._probe = torch.zeros(1, device="cpu")

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if args and args[0] is self._probe:
                self.sentinels += 1
                return out
            self.events += 1
            name = "aten::" + str(func.overloadpacket.__name__) \
                if hasattr(func, "overloadpacket") else str(func)
            ts = tensors([args, kwargs, out], [])
            size = max((t.numel() for t in ts), default=0)
            if name in ("aten::_to_copy", "aten::copy_", "aten::_copy_from",
                        "aten::_copy_from_and_resize") and \
                    len({str(t.device) for t in ts}) > 1:
                name = DEVICE_MOVE   # host <-> device: the work may go to the host
            e = self.ops.get(name)
            if e is None:
                if len(self.ops) >= MAX_OPS:
                    name = "aten::<more ops>"
                    e = self.ops.setdefault(name, [0, 0, 0])
                else:
                    e = self.ops[name] = [0, 0, 0]
            e[0] += 1
            e[1] += size
            e[2] = max(e[2], size)
            return out

        def __enter__(self):
            self.tampered = None
            self._exiting = False
            _ACTIVE[0] = self
            return super().__enter__()

        def __exit__(self, *exc):
            self._exiting = True
            try:
                return super().__exit__(*exc)
            finally:
                _ACTIVE[0] = None

        def sentinel(self):
            """An op on a tensor of the recorder's own: counted (in `sentinels`, not in
            the ops) only while the mode is still recording."""
            self._probe.add(1)   # a one-element CPU op; the result is dropped

        def summary(self, mode_on_stack):
            return {"ops": {k: list(v) for k, v in self.ops.items()},
                    "events": self.events, "sentinels": self.sentinels,
                    "on_stack": bool(mode_on_stack), "tampered": self.tampered}

    return OpRecorder()


_ACTIVE = [None]   # the recorder of the gate call in progress


def warm_up(torch, device):
    """One recording like a gate call's, over a few small ops of the harness's own on
    `device` (one that torch runs from C++ too: stack's cat; no BLAS call, which could
    start a thread pool in the candidate's process), so that what the first op
    under a dispatch mode costs a process is paid before the GPU slot: torch imports
    torch._dynamo then (1.4 s on this project's CPU machine). Measured on an H100, a CUDA
    C++ candidate's first forward under the recorder took 2.9-5.1 s, and 0.8 ms after this
    warm-up on CPU tensors (tests/gpu/first_call.py); a Triton candidate paid it in its
    compile dry run, under another dispatch mode, and a CUDA C++ candidate has none.
    Returns seconds."""
    import time
    t0 = time.perf_counter()
    rec = make_recorder()
    with rec:
        rec.sentinel()
        a = torch.ones(8, 8, device=device)
        b = torch.empty_like(a)
        b.copy_(torch.stack([a, a]).sum(0).relu())
        rec.sentinel()
    rec.summary(False)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def _flag(what):
    rec = _ACTIVE[0]
    if rec is not None and not getattr(rec, "_exiting", True) and rec.tampered is None:
        rec.tampered = what


def install_guards():
    """Wraps the ways torch offers to step around a dispatch mode (popping it, disabling
    Python dispatch, excluding its dispatch key), so that using them while a gate call
    is recorded marks the recording as tampered. Installed before the candidate is
    imported; a candidate can still reach the originals (through the garbage collector
    or ctypes): best effort, the CUPTI trace is the GPU's backstop. Returns the names
    wrapped."""
    import torch
    import torch.utils._python_dispatch as pd
    done = []
    orig_pop = torch._C._pop_torch_dispatch_stack
    if getattr(orig_pop, "_kagent_guard", False):
        return done   # installed already

    def pop(*args, **kwargs):
        mode = orig_pop(*args, **kwargs)
        if mode is not None and mode is _ACTIVE[0]:
            _flag("the dispatch mode was popped")
        return mode

    pop._kagent_guard = True
    torch._C._pop_torch_dispatch_stack = pop
    if getattr(pd, "_pop_torch_dispatch_stack", None) is orig_pop:
        pd._pop_torch_dispatch_stack = pop
    done.append("_pop_torch_dispatch_stack")

    def guard(name, why):
        orig = getattr(torch._C, name, None)
        if orig is None:
            return

        class Guarded:
            def __init__(self, *args, **kwargs):
                self._inner = orig(*args, **kwargs)

            def __enter__(self):
                _flag(why)
                return self._inner.__enter__()

            def __exit__(self, *exc):
                return self._inner.__exit__(*exc)

        Guarded.__name__ = name
        setattr(torch._C, name, Guarded)
        done.append(name)

    guard("_DisableTorchDispatch", "Python dispatch was disabled")
    guard("_ExcludeDispatchKeyGuard", "a dispatch key was excluded")
    return done


def mode_on_stack(mode):
    """Whether `mode` is on torch's dispatch-mode stack (the candidate may have popped it)."""
    try:
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
        return any(m is mode for m in _get_current_dispatch_mode_stack())
    except Exception:  # noqa: BLE001 - an older torch: the sentinels still tell
        return True


# -- the rule (the supervisor) ------------------------------------------------------------

class Verdict:
    """A broken rule: `reason` names the op (REJECTED), or None when the call passes."""

    def __init__(self, reason=None, detail=None):
        self.reason = reason
        self.detail = detail or {}

    def __bool__(self):
        return self.reason is None


def _valid_summary(s):
    if not isinstance(s, dict) or not isinstance(s.get("ops"), dict):
        return False
    for k, v in s["ops"].items():
        if not isinstance(k, str) or not isinstance(v, list) or len(v) != 3 or \
                not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in v):
            return False
    return isinstance(s.get("sentinels"), int) and isinstance(s.get("events"), int)


TAMPERED = "the candidate disabled the harness's op recorder"


def judge_ops(summary, ref_ops, largest_ref_numel, what):
    """The op rule on one gate call's recorder summary (untrusted data).

    ref_ops: reference_compute_ops(signature); largest_ref_numel: numel of the largest
    tensor the reference reads. Returns a Verdict (falsy when rejected)."""
    if not _valid_summary(summary):
        return Verdict(f"{what}: {TAMPERED} (its summary is missing or malformed)")
    if summary.get("tampered"):
        return Verdict(f"{what}: {TAMPERED} ({str(summary['tampered'])[:200]} during "
                       "forward)")
    if summary["sentinels"] < 2 or not summary.get("on_stack", False):
        return Verdict(f"{what}: {TAMPERED} (the dispatch mode was popped or disabled "
                       f"during forward: {summary['sentinels']} of 2 sentinel ops seen)")
    limit = max(1, int(largest_ref_numel * COMPARABLE_FRACTION))
    heavy, big = [], []
    for name, (calls, total, largest) in sorted(summary["ops"].items()):
        cls = op_class(name)
        if cls == "heavy":
            heavy.append((name, calls, largest))
        elif cls in ("reduction", "device_move") or \
                (cls == "compute" and base_name(name) in ref_ops):
            if total >= limit:
                big.append((name, calls, total, cls))
    if heavy:
        name, calls, largest = heavy[0]
        return Verdict(f"{what}: forward ran the library op {name} ({calls} call(s), "
                       f"largest operand {largest} elements): matrix products, convolutions "
                       "and attention must be the candidate's own kernels")
    if big:
        name, calls, total, cls = big[0]
        if cls == "device_move":
            return Verdict(f"{what}: forward copied {total} elements between devices in "
                           f"{calls} call(s), comparable to the problem (>= {limit}): the "
                           "work is not the candidate's own kernels on the device")
        kind = "reduction/normalization" if cls == "reduction" else "the reference's op"
        return Verdict(f"{what}: forward computed with torch's {name} ({kind}) on "
                       f"{total} elements in {calls} call(s), comparable to the problem "
                       f"(>= {limit}: 1/{round(1 / COMPARABLE_FRACTION)} of its largest "
                       f"input, {largest_ref_numel} elements): the hot path is not the "
                       "candidate's own kernels")
    return Verdict()


def kernel_class(name, is_own):
    """'own', 'heavy', 'glue' or 'library' for a GPU kernel name (is_own: a predicate)."""
    if is_own(name):
        return "own"
    low = name.lower()
    if any(p in low for p in HEAVY_KERNEL_PATTERNS):
        return "heavy"
    if any(p in low for p in GLUE_KERNEL_PATTERNS):
        return "glue"
    return "library"


def split_busy(kernels, is_own):
    """{'own','heavy','glue','library'}: summed GPU ms of [(name, ms)]; plus the heavy
    kernels' names."""
    busy = {"own": 0.0, "heavy": 0.0, "glue": 0.0, "library": 0.0}
    heavy = []
    for name, ms in kernels:
        c = kernel_class(name, is_own)
        busy[c] += float(ms)
        if c == "heavy" and name not in heavy:
            heavy.append(name)
    return busy, heavy


def judge_kernels(busy, heavy_names, what, share_rule=True):
    """The GPU rule on one gate call's kernel time split (split_busy)."""
    if heavy_names:
        return Verdict(f"{what}: a library matrix-product/convolution/attention kernel ran "
                       f"({', '.join(heavy_names[:3])}): the hot path is not the "
                       "candidate's own kernels")
    work = busy["own"] + busy["heavy"] + busy["library"]
    if share_rule and work > 0 and busy["own"] < MIN_OWN_GPU_SHARE * work:
        return Verdict(f"{what}: the candidate's own kernels did {busy['own']:.3f} ms of "
                       f"{work:.3f} ms of GPU work ({100 * busy['own'] / work:.0f}% < "
                       f"{100 * MIN_OWN_GPU_SHARE:.0f}%); library kernels did the rest")
    return Verdict()

