"""A compile dry run of the candidate's forward: its Triton kernels compiled, nothing
launched on the GPU. Runs in the candidate's process (child.py), before the worker takes
the GPU slot, so the first gate call does not spend GPU-held time compiling and a
compilation error costs no GPU time at all.

The forward is called on stand-ins of the timing inputs (the right shapes, strides and
dtypes, no values; on the GPU phantom tensors, phantom.py, which cost no device memory
but one shared chunk, else torch.empty_strided). While it runs:
  - every ATen op goes through NoKernels (a TorchDispatchMode): view ops run for real
    (they only compute metadata), in-place and out= ops return their destination
    untouched, every other op computes its outputs' metadata on the meta device and
    returns uninitialised tensors of that metadata on the real device (phantom ones on
    the GPU) — no kernel runs;
  - every Triton launch is turned into a compilation (JITFunction.run with warmup=True:
    the kernel is compiled for the exact specialisation the real call will use, and not
    launched), then loaded (its module and launcher: a kernel that needs more shared
    memory than the GPU has fails here with OutOfResources, as its first call would);
    an autotuned kernel compiles every config (Autotuner.warmup) without benchmarking,
    loading or caching a choice.
The run is "clean" when nothing in it depended on values: no op read a tensor's data
to the host (item(), tolist(), a copy to the CPU) and no op had data-dependent output
shapes. Only then is a compilation error in it final (the real call compiles the same
kernels); otherwise any exception is ignored and the gate's first call decides.
A CUDA C++ candidate compiles at import (load_inline); it gets no dry run: its
extension's functions bypass the dispatcher and would really run on the stand-ins.
"""

import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map


class DryRunAbort(Exception):
    """Raised inside the forward when the dry run cannot go on without values."""


def _is_tensor(x):
    return isinstance(x, torch.Tensor)


def _meta(x):
    if _is_tensor(x):
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    return x


class NoKernels(TorchDispatchMode):
    """Runs ATen ops without launching kernels (see the module comment)."""

    def __init__(self, device, alloc=None):
        super().__init__()
        self.device = device
        # alloc(shape, stride, dtype) for the outputs on `device` (on the GPU,
        # phantom.PhantomArena's empty_strided); torch.empty_strided when None.
        self.alloc = alloc
        self.data_dependent = []  # op names that needed values
        self.ops = 0

    def _values_needed(self, name):
        self.data_dependent.append(name)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops += 1
        name = str(func.overloadpacket.__name__) if hasattr(func, "overloadpacket") \
            else str(func)
        schema = func._schema
        rets = list(schema.returns)
        if name == "_local_scalar_dense":
            self._values_needed(name)
            t = args[0]
            if t.dtype == torch.bool:
                return False
            return 0.0 if (t.is_floating_point() or t.is_complex()) else 0
        if name in ("resize_", "resize_as_", "set_", "as_strided_"):
            return func(*args, **kwargs)  # storage and metadata only, no kernel
        aliasing = [r.alias_info for r in rets]
        if rets and all(a is not None and not a.is_write for a in aliasing):
            return func(*args, **kwargs)  # a view: metadata only
        # Where the op writes (in-place, out=): return the destination, untouched.
        if any(a is not None and a.is_write for a in aliasing):
            written = []
            for i, arg in enumerate(schema.arguments):
                if arg.alias_info is not None and arg.alias_info.is_write:
                    value = kwargs.get(arg.name, args[i] if i < len(args) else None)
                    written.append(value)
            dst = written[0] if written else None
            if name in ("copy_",) and _is_tensor(dst) and dst.device.type == "cpu" and \
                    len(args) > 1 and _is_tensor(args[1]) and args[1].device.type != "cpu":
                self._values_needed(name + " to the host")
            return dst if len(rets) == 1 else tuple(written)
        if name in ("_to_copy", "to") and _is_tensor(args[0]) and \
                args[0].device.type != "cpu" and str(kwargs.get("device", "")) == "cpu":
            self._values_needed(name + " to the host")
        out_device = kwargs.get("device")
        if "device" in kwargs and out_device is None:
            out_device = torch.device("cpu")  # a factory op's default
        meta_kwargs = dict(kwargs)
        if "device" in meta_kwargs:
            meta_kwargs["device"] = "meta"
        try:
            meta_out = func(*tree_map(_meta, args), **tree_map(_meta, meta_kwargs))
        except Exception as e:  # noqa: BLE001 - no meta kernel, data-dependent shape, ...
            self._values_needed(name)
            raise DryRunAbort(f"{name}: {type(e).__name__}") from None
        if out_device is None:
            devs = [a.device for a in args if _is_tensor(a) and a.device.type != "meta"]
            out_device = devs[0] if devs else self.device

        alloc = self.alloc if torch.device(out_device).type == \
            torch.device(self.device).type else None

        def real(t):
            if _is_tensor(t) and t.device.type == "meta":
                if alloc is not None:
                    return alloc(t.shape, t.stride(), t.dtype)
                return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype,
                                           device=out_device)
            return t
        return tree_map(real, meta_out)


class _TritonCompileOnly:
    """Within the block, Triton launches compile instead (see the module comment)."""

    def __enter__(self):
        self.saved = []
        try:
            from triton.runtime.jit import JITFunction
        except Exception:  # noqa: BLE001 - no triton
            return self
        kernel_classes = [JITFunction]
        try:
            # Under the interpreter (the CPU) a kernel is an InterpretedFunction, whose
            # run() with warmup=True does nothing: nothing runs on the stand-ins.
            from triton.runtime.interpreter import InterpretedFunction
            kernel_classes.append(InterpretedFunction)
        except Exception:  # noqa: BLE001 - no interpreter
            pass
        tuning = self.tuning = [0]  # > 0 inside an autotuner's warm-up

        def compile_and_load(orig):
            def run(fn_self, *args, **kwargs):
                kernel = orig(fn_self, *args, **dict(kwargs, warmup=True))
                # Loaded too (module and launcher; no GPU work): a kernel over the GPU's
                # shared memory raises OutOfResources here, before the GPU slot, not at
                # its first call. Not an autotuner's configs: it skips those that fail.
                init = getattr(kernel, "_init_handles", None)
                if callable(init) and not tuning[0]:
                    init()
                return kernel
            return run

        for cls in kernel_classes:
            self._patch(cls, compile_and_load)
        try:
            from triton.runtime.autotuner import Autotuner

            def at_run(_orig):
                def run(at_self, *args, **kwargs):
                    kwargs.pop("warmup", None)
                    tuning[0] += 1
                    try:
                        return at_self.warmup(*args, **kwargs)
                    finally:
                        tuning[0] -= 1
                return run
            self._patch(Autotuner, at_run)
        except Exception:  # noqa: BLE001 - no autotuner
            pass
        return self

    def _patch(self, cls, make):
        """cls.run = make(the current cls.run), undone at exit."""
        orig = cls.run
        self.saved.append((cls, "run", orig))
        cls.run = make(orig)

    def __exit__(self, *exc):
        for cls, name, fn in reversed(self.saved):
            setattr(cls, name, fn)
        return False


def stand_ins(spec, device, alloc=None):
    """Inputs of the described shapes, strides and dtypes (uninitialised; those on
    `device` from `alloc(shape, stride, dtype)` when given), and plain values as given."""
    out = []
    for s in spec:
        if "shape" in s:
            dtype = getattr(torch, s["dtype"])
            dev = device if s.get("device", device) != "cpu" else "cpu"
            shape, stride = [int(n) for n in s["shape"]], [int(n) for n in s["stride"]]
            if alloc is not None and dev == device:
                out.append(alloc(shape, stride, dtype))
            else:
                out.append(torch.empty_strided(shape, stride, dtype=dtype, device=dev))
        else:
            out.append(s.get("value"))
    return out


def _run_on_stand_ins(model, spec, device, mode):
    """model(*stand-ins) under `mode`; the stand-ins and the outputs die here."""
    inputs = stand_ins(spec, device, mode.alloc)
    with torch.no_grad(), _TritonCompileOnly(), mode:
        model(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    return {"clean": not mode.data_dependent}


def compile_dry_run(model, spec, device, phantom=False):
    """Runs model(*stand-ins) with no kernel launched. Returns {"clean", "seconds",
    "ops", "data_dependent", "error"}; a Triton compilation error of a clean run comes
    back as {"compile_error": message} too. With `phantom` on the GPU the stand-ins and
    the forward's outputs are phantom tensors (phantom.py: no device memory but one
    chunk); "phantom" then says how it went ({"reserved_mb", "materialized_mb"}), and
    where they cannot be made the run does not happen: {"phantom_error": reason}."""
    t0 = time.perf_counter()
    arena = None
    if phantom and device == "cuda":
        from kagent_harness import phantom as ph
        try:
            arena = ph.PhantomArena()
        except Exception as e:  # noqa: BLE001 - VmmError, or no usable CUDA context
            return {"clean": False, "ops": 0, "data_dependent": [], "error": "",
                    "phantom_error": f"{type(e).__name__}: {e}",
                    "seconds": time.perf_counter() - t0}
    mode = NoKernels(device, arena.empty_strided if arena is not None else None)
    res = {"clean": False, "ops": 0, "data_dependent": [], "error": ""}
    try:
        res.update(_run_on_stand_ins(model, spec, device, mode))
    except DryRunAbort as e:
        res["error"] = f"stopped: {e}"
    except Exception as e:  # noqa: BLE001 - the candidate's own code
        res["error"] = f"{type(e).__name__}: {str(e)[:1000]}"
        mod = type(e).__module__ or ""
        if not mode.data_dependent and (mod.startswith("triton") or type(e).__name__ in (
                "CompilationError", "OutOfResources", "CompileTimeAssertionFailure")):
            res["compile_error"] = res["error"]
    if device == "cuda":
        # The blocks the caching allocator kept for the stand-ins and the outputs (and,
        # after an exception, its frames' tensors, gone with it by now) go back to the
        # driver: a prepared process may wait minutes beside the measurement that holds
        # the slot. On the H100, prepared processes kept 2.6-10.6 GiB each from their
        # dry runs, 37 GiB in all, and the supervisor ran out of memory making a job's
        # trials (40_kl_div_fp32, INFRA_ERROR on all 3 attempts).
        torch.cuda.empty_cache()
    if arena is not None:
        # A phantom the candidate kept (a buffer made in its forward, an input) would
        # alias other data in its real calls: it becomes real memory here, or, when it
        # cannot, the reply says this process must not be used ("phantom_unsafe").
        try:
            made = arena.materialize_survivors()
        except Exception as e:  # noqa: BLE001 - VmmError: no device memory for it
            made = 0
            res["phantom_unsafe"] = f"{type(e).__name__}: {e}"
        res["phantom"] = {"reserved_mb": arena.reserved >> 20, "materialized_mb": made >> 20}
    res["ops"] = mode.ops
    res["data_dependent"] = sorted(set(mode.data_dependent))[:20]
    res["seconds"] = time.perf_counter() - t0
    return res
