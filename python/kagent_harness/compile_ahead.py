"""torch.compile's compilation of a job's reference, done on a thread of the supervisor
while the same measurement's starting kernel is gated and timed in its own process,
instead of holding the GPU idle for it (0.55-0.85 s of a baseline's 3.8-4.3 s on the
H100, docs/measurement.md).

The compiled module is torch.compile(model, mode="default", dynamic=False) as before,
with Inductor called through a thin backend (`_inductor_once_compiled`): the same
compile_fx call that backend="inductor" makes for mode "default", whose compiled graph
is wrapped so that on the compiling thread, and only there, calling it raises
_CompiledOnly instead of running. Dynamo has installed the compiled frame by then; the
measurement's own first call (on real inputs, with the GPU held and nothing else of the
job running) finds it, and runs what Inductor generated, its autotuning included.
Nothing of the compilation launches a kernel: the thread calls the module on stand-ins
of the timing inputs (phantom tensors on the GPU, phantom.py: no device memory, the same
shapes, strides and dtypes, so Dynamo's guards pass for the real ones).

What is left to the slot: the guards, loading the generated kernels, Inductor's
autotuning on first run, and whatever graph Dynamo reaches only after a graph break
(compiled on first call, as before). The wrapper is one Python call per graph call on
the host, hidden behind the timing protocol's spin like the rest of the host's issue.

KAGENT_COMPILE_AHEAD: "0" (the default: compiled in the slot, as before), "auto" (on the
GPU only; on the CPU the compilation would take cores from the process being timed), "1"
(always). A supervisor sets it once; measure.py asks `wanted`. Off by default since the
H100 suite of session 27 (docs/measurement.md): with it on, the supervisor's host-side
work (eager timing, the gate's comparisons, screens) ran 1-10x slower than in session
26 for the same problems, with the GPU's kernel times unchanged, for a cause not yet
found (the first baseline, timed before any compilation ahead, was slow too: the
machine may be the cause); a same-machine run with it off and on decides.
"""

import os
import threading
import time

import torch

_LOCAL = threading.local()


class _CompiledOnly(Exception):
    """Raised by a compiled graph called on the compiling thread: nothing runs."""


_COMPILES = [0]  # graphs compiled by the backend in this process (compiles())
_COMPILES_LOCK = threading.Lock()


def compiles():
    """How many graphs _inductor_once_compiled has compiled in this process: a first real
    call that adds one compiled in the slot what the thread did not."""
    with _COMPILES_LOCK:
        return _COMPILES[0]


def _inductor_once_compiled(gm, example_inputs):
    """Dynamo's backend: Inductor's compile_fx as backend="inductor" calls it for mode
    "default" (no config patches), the result wrapped (see the module comment)."""
    from torch._inductor.compile_fx import compile_fx
    fn = compile_fx(gm, example_inputs)
    with _COMPILES_LOCK:
        _COMPILES[0] += 1

    def run(*args):
        if getattr(_LOCAL, "compile_only", False):
            raise _CompiledOnly()
        return fn(*args)
    return run


def wanted(device):
    setting = os.environ.get("KAGENT_COMPILE_AHEAD", "0").strip().lower()
    if setting in ("1", "on", "yes", "true"):
        return True
    if setting == "auto":
        return device == "cuda"
    return False


def compiled_module(model):
    """The job's torch.compile module: torch.compile(model, mode="default", dynamic=False)
    through the wrapped Inductor backend; compiled by its first call, or ahead of it by
    CompileAhead."""
    return torch.compile(model, backend=_inductor_once_compiled, dynamic=False)


def stand_ins(inputs, device):
    """Tensors of `inputs`' shapes, strides and dtypes on `device` holding nothing: phantom
    tensors on the GPU (phantom.py; the arena is returned to keep them valid), empty
    ones on the CPU; other values as they are. Raises where phantoms cannot be made."""
    arena = None
    if device == "cuda":
        from kagent_harness.phantom import PhantomArena
        arena = PhantomArena()
        make = arena.empty_strided
    else:
        def make(shape, stride, dtype):
            return torch.empty_strided(shape, stride, dtype=dtype, device=device)
    out = [make(list(x.shape), list(x.stride()), x.dtype) if isinstance(x, torch.Tensor)
           else x for x in inputs]
    return out, arena


class CompileAhead:
    """Compiles `model` for compiled_module on a thread of its own, on stand-ins of
    `inputs`; join() waits for it. The thread's module has fullgraph=True (same backend,
    so Dynamo's cache entry serves compiled_module's calls too): a graph break is then an
    error while tracing, before anything of the forward ran, where fullgraph=False would
    run the code around the break on the stand-ins, launching kernels while the GPU
    times something else. Never raises: `error` says what went wrong (the compilation
    then happens on the first real call, as before). Needs the reference's stand-ins to
    be made (stand_ins raises otherwise)."""

    def __init__(self, model, inputs, device):
        self.compiled = torch.compile(model, backend=_inductor_once_compiled, dynamic=False,
                                      fullgraph=True)
        self.error = None
        self.seconds = 0.0
        self._args, self._arena = stand_ins(inputs, device)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="kagent-compile-ahead")
        self._thread.start()

    def _run(self):
        t0 = time.monotonic()
        _LOCAL.compile_only = True
        try:
            with torch.no_grad():  # grad mode is per thread, and Dynamo guards on it
                self.compiled(*self._args)
            self.error = "the forward returned without a compiled graph"
        except _CompiledOnly:
            pass
        except Exception as e:  # noqa: BLE001 - the compile's own failure, reported
            self.error = f"{type(e).__name__}: {str(e)[:500]}"
        finally:
            _LOCAL.compile_only = False
            self._args = None
            self.seconds = time.monotonic() - t0

    def join(self, timeout=None):
        """Waits for the compilation; returns whether it has ended."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        self._arena = None
        return True
