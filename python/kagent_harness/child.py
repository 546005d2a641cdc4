"""The candidate's process: `python -m kagent_harness.child WORKDIR`.

Everything in this process is within the candidate's reach, this module included. It
never sees the reference's outputs or the input seeds: the supervisor sends inputs as
files and compares the outputs it gets back. What this process reports besides outputs
(launch counts, the aten ops of each gate call, mutation and aliasing flags, times) is
cross-checked by the supervisor
where it can be and documented as best effort where it cannot (docs/harness.md).

Protocol: one JSON object per line on stdin; one reply per line on the original stdout
(fd 1 is moved to stderr first, so the candidate's prints go to the log). Replies carry
"ok": true, or "ok": false with "kind" (a verdict name) and "message". The process starts
(imports torch, initialises CUDA) before the supervisor has the candidate's files ready;
its first message, {"cmd": "load"}, says WORKDIR/child_config.json is written.
"""

import json
import os
import sys
import time
import traceback

_PROTO_OUT = None
# On cuda: the supervisor's descriptor channel (SOCK_SEQPACKET), from --fd-channel N;
# shared GPU memory arrives on it (vmm.py). None elsewhere.
FD_CHANNEL = None


def _send(msg):
    _PROTO_OUT.write(json.dumps(msg) + "\n")
    _PROTO_OUT.flush()


def classify_exception(exc, phase):
    """Verdict name for an exception raised in `phase` (import/construct/call/...)."""
    name = type(exc).__name__
    mod = type(exc).__module__ or ""
    msg = str(exc)
    low = msg.lower()
    if isinstance(exc, MemoryError) or "OutOfMemoryError" in name or "out of memory" in low \
            or "can't allocate memory" in low or "cannot allocate memory" in low:
        return "OOM"
    if "illegal memory access" in low or "misaligned address" in low \
            or "unspecified launch failure" in low or "device-side assert" in low \
            or "illegal instruction" in low:
        return "CRASH"
    if phase in ("import", "construct"):
        return "COMPILE_ERROR"
    if mod.startswith("triton.compiler") or name in ("CompilationError", "OutOfResources",
                                                    "CompileTimeAssertionFailure"):
        return "COMPILE_ERROR"
    return "CRASH"


def _fail(exc, phase):
    tb = traceback.format_exc()
    sys.stderr.write(tb)
    sys.stderr.flush()
    _send({"ok": False, "kind": classify_exception(exc, phase),
           "message": f"{type(exc).__name__} during {phase}: {str(exc)[:1500]}",
           "traceback": tb[-4000:]})


def _mentions(path, word):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return word in f.read()
    except OSError:
        return False


class _Launches:
    """Counts Triton launches; installed before the candidate is imported (best effort:
    the candidate can undo it, and the supervisor treats the counts as hints)."""

    def __init__(self, module_name):
        self.module_name = module_name
        self.reset()

    def reset(self):
        self.own = 0
        self.total = 0
        self.names = set()

    def install(self):
        classes = []
        try:
            from triton.runtime.jit import JITFunction
            classes.append(JITFunction)
        except Exception:  # noqa: BLE001 - no triton: nothing to count
            return False
        try:
            from triton.runtime.interpreter import InterpretedFunction
            classes.append(InterpretedFunction)
        except Exception:  # noqa: BLE001
            pass
        counter = self
        for cls in classes:
            orig = cls.run

            def run(self, *args, __orig=orig, **kwargs):
                if not kwargs.get("warmup", False):
                    fn = getattr(self, "fn", None)
                    counter.total += 1
                    if getattr(fn, "__module__", None) == counter.module_name:
                        counter.own += 1
                        counter.names.add(getattr(fn, "__name__", "?"))
                return __orig(self, *args, **kwargs)

            cls.run = run
        return True


def _autotune_on_the_interpreter():
    """Triton's autotuner times its configs through the GPU driver, which the interpreter
    lacks ("0 active drivers"): on the CPU device it gets a wall-clock timer, so an
    @triton.autotune'd candidate runs every config and then the one it picked, as on a
    GPU. (Interpreter timings rank nothing: the pick only has to be one of its configs.)
    A do_bench the candidate passes to autotune is kept."""
    try:
        from triton.runtime.autotuner import Autotuner
    except Exception:  # noqa: BLE001 - no triton or no autotuner: nothing to patch
        return False

    def wall_clock(kernel_call, quantiles=None, **_):
        start = time.perf_counter()
        kernel_call()
        ms = (time.perf_counter() - start) * 1e3
        return [ms] * len(quantiles) if quantiles else ms

    Autotuner.do_bench = property(lambda self: getattr(self, "_do_bench", None) or wall_clock)
    return True


class _Cupti:
    def __init__(self):
        self.lib = None
        path = os.environ.get("KAGENT_CUPTI_LIB")
        if path:
            try:
                import ctypes
                self.lib = ctypes.CDLL(path)
                self.lib.kagent_cupti_mark.argtypes = [ctypes.c_char_p]
                self.lib.kagent_cupti_mark.restype = ctypes.c_int
                self.lib.kagent_cupti_flush.restype = ctypes.c_int
                if hasattr(self.lib, "kagent_cupti_kernels_seen"):
                    self.lib.kagent_cupti_kernels_seen.argtypes = []
                    self.lib.kagent_cupti_kernels_seen.restype = ctypes.c_longlong
            except Exception as e:  # noqa: BLE001
                sys.stderr.write(f"kagent child: CUPTI library not usable: {e}\n")
                self.lib = None
        self.counters_lib = None
        if self.lib is not None:
            from kagent_harness import cupti_counters
            try:
                cupti_counters.declare(self.lib)
                self.counters_lib = self.lib
            except AttributeError as e:
                sys.stderr.write(f"kagent child: CUPTI library has no counters: {e}\n")

    def mark(self, name):
        if self.lib is not None:
            self.lib.kagent_cupti_mark(name.encode())

    def flush(self):
        if self.lib is not None:
            self.lib.kagent_cupti_flush()

    def counts_kernels(self):
        """Whether the library can count the kernels it traced (kernels_seen)."""
        return self.lib is not None and hasattr(self.lib, "kagent_cupti_kernels_seen")

    def kernels_seen(self):
        """Kernels the tracer has recorded so far, after a flush (every kernel completed
        before the call); None when the library cannot say (no tracer, or one built
        before the count)."""
        if not self.counts_kernels():
            return None
        self.flush()
        seen = self.lib.kagent_cupti_kernels_seen()
        return seen if seen >= 0 else None

    def counters_prepare(self, metrics):
        """cupti_counters.prepare on this process's library: the counters' host setup,
        done before the GPU is held."""
        from kagent_harness import cupti_counters
        return cupti_counters.prepare(self.counters_lib, metrics)

    def counters(self, metrics, forward, synchronize, kernels_per_forward=None):
        """The range profiler's passes over `forward` (cupti_counters.collect), written to
        the tracer's file, the first collection sized for `kernels_per_forward`; the
        collection's result, a failure included."""
        from kagent_harness import cupti_counters
        return cupti_counters.collect(self.counters_lib, metrics, forward, synchronize,
                                      os.environ.get("KAGENT_CUPTI_OUT", ""),
                                      kernels_per_forward=kernels_per_forward)


class _State:
    pass


def _same_layout(a, b):
    import torch
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and a.stride() == b.stride()
    return not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor)


def _equal_nan(a, b):
    import torch
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return bool(torch.equal(a, b))


def _wait_for_load():
    """Blocks until the supervisor's {"cmd": "load"}; False on "exit" or a closed pipe."""
    while True:
        line = sys.stdin.readline()
        if not line:
            return False
        try:
            cmd = json.loads(line).get("cmd")
        except (ValueError, AttributeError):
            continue
        if cmd == "load":
            return True
        if cmd == "exit":
            return False


def main():
    global _PROTO_OUT, FD_CHANNEL
    # `kill -USR1 PID` prints every thread's stack to this process's stderr (the
    # supervisor keeps its tail): where a stuck candidate process waits.
    import faulthandler
    import signal
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # Profile mode (the process runs under Nsight Compute's injection): the seccomp
    # filter lets it make Unix sockets (bwrap.seccomp_program).
    profiler = "--profiler" in sys.argv
    if profiler:
        sys.argv.remove("--profiler")
    if "--fd-channel" in sys.argv:
        import socket
        i = sys.argv.index("--fd-channel")
        FD_CHANNEL = socket.socket(fileno=int(sys.argv[i + 1]))
        del sys.argv[i:i + 2]
    workdir = sys.argv[1]
    _PROTO_OUT = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    device = sys.argv[2] if len(sys.argv) > 2 else "cuda"
    st = _State()
    st.device = device
    st.inputs = None
    st.prev_outputs = []
    st.last = None
    st.cupti = _Cupti()
    st.launches = _Launches(None)  # the module's name comes with the configuration

    try:
        import torch
        from kagent_harness import loader
        from kagent_harness.timing import time_callable
        st.hooked = st.launches.install()
        from kagent_harness import ownwork
        ownwork.install_guards()
        if st.device == "cpu":
            _autotune_on_the_interpreter()
        torch.set_grad_enabled(False)
        if st.device == "cuda":
            torch.cuda.init()
            torch.zeros(1, device="cuda")  # the driver's start-up is done before the filter
    except Exception as e:  # noqa: BLE001
        _fail(e, "harness start")
        return 1
    # The op recorder's first use imports torch._dynamo (2.9-5 s on the lent H100): paid
    # here, while the process waits in the pool, not in the gate's first call with the
    # GPU held (ownwork.warm_up; CPU tensors: nothing runs on the GPU).
    try:
        st.warm_up = {"recorder_warm_up_s": round(ownwork.warm_up(torch, "cpu"), 3)}
    except Exception as e:  # noqa: BLE001 - it only saves time; the gate decides
        st.warm_up = {"recorder_warm_up_error": f"{type(e).__name__}: {e}"[:300]}
    # No Unix sockets and no io_uring from here on, before any of the candidate's code
    # (bwrap.install_seccomp says why not earlier). The start-time probe checks that the
    # host allows it; a failure here is reported and the process goes on.
    try:
        from kagent_harness import bwrap
        bwrap.install_seccomp(unix_sockets=profiler)
    except OSError as e:
        sys.stderr.write(f"kagent child: seccomp filter not installed: {e}\n")
    if not _wait_for_load():
        return 0
    with open(os.path.join(workdir, "child_config.json")) as f:
        cfg = json.load(f)
    st.launches.module_name = cfg["module_name"]
    # load_inline through the build cache (prebuilt.py), before any of the candidate's code.
    builds = None
    sources = [cfg["candidate_path"]] + list(cfg.get("variant_paths") or [])
    if any(_mentions(p, "load_inline") for p in sources if p):
        from kagent_harness import prebuilt
        builds = prebuilt.install(workdir)

    def build_report():
        out = {} if builds is None else {"prebuilt": builds.loaded, "built": len(builds.built)}
        out.update(st.warm_up)
        return out

    if cfg.get("variant_paths"):
        # A screen: several variants of one trusted kernel, each its own module and
        # model; "use" picks the one the next call and timing run.
        st.variants = []
        report = []
        for i, path in enumerate(cfg["variant_paths"]):
            name = f"kagent_variant_{i}"
            try:
                with open(path, encoding="utf-8") as f:
                    module = loader.load_source(f.read(), name, workdir)
                if not hasattr(module, "ModelNew"):
                    raise AttributeError("the candidate defines no ModelNew")
                model = _build(module, cfg, st, torch, loader)[0]
                st.variants.append((name, model))
                report.append({"ok": True})
            except Exception as e:  # noqa: BLE001 - one variant's failure is its answer
                sys.stderr.write(traceback.format_exc())
                st.variants.append((name, None))
                report.append({"ok": False, "kind": classify_exception(e, "import"),
                               "message": f"{type(e).__name__}: {str(e)[:1000]}"})
        st.model = None
        _send({"ok": True, "event": "ready", "variants": report, "triton_hook": st.hooked,
               "torch": torch.__version__, **build_report()})
    else:
        # Import and build the candidate.
        try:
            sys.path.insert(0, workdir)
            with open(cfg["candidate_path"], encoding="utf-8") as f:
                source = f.read()
            module = loader.load_source(source, cfg["module_name"], workdir)
            if not hasattr(module, "ModelNew"):
                raise AttributeError("the candidate defines no ModelNew")
        except Exception as e:  # noqa: BLE001
            _fail(e, "import")
            return 1
        try:
            model, weights = _build(module, cfg, st, torch, loader)
        except Exception as e:  # noqa: BLE001
            _fail(e, "construct")
            return 1
        st.model = model
        _send({"ok": True, "event": "ready", "weights": weights, "triton_hook": st.hooked,
               "torch": torch.__version__, **build_report()})

    def fn():
        st.last = st.model(*st.inputs)

    while True:
        line = sys.stdin.readline()
        if not line:
            return 0
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        cmd = msg.get("cmd")
        phase = cmd or "?"
        try:
            if cmd == "exit":
                _send({"ok": True})
                return 0
            elif cmd == "ping":
                _send({"ok": True})
            elif cmd == "flush":
                phase = "flushing the CUPTI trace"
                st.cupti.flush()
                _send({"ok": True})
            elif cmd == "ipc_probe":
                # Whether CUDA IPC works between the supervisor and this process; a failure
                # is an answer here (the supervisor then sends inputs through files).
                try:
                    x = _decode_inputs(st, msg, torch, loader)
                    _send({"ok": True, "ipc": True, "sum": float(x[0].double().sum())})
                except Exception as e:  # noqa: BLE001
                    _send({"ok": True, "ipc": False, "error": f"{type(e).__name__}: {e}"})
            elif cmd == "call":
                phase = "the gate's call of forward"
                _send(_cmd_call(st, msg, torch, loader))
            elif cmd == "time":
                phase = "timing"
                _send(_cmd_time(st, msg, torch, fn, time_callable))
            elif cmd == "burst":
                phase = "the supervisor's wall-clock burst"
                n = int(msg["n"])
                for _ in range(n):
                    fn()
                if st.device == "cuda":
                    torch.cuda.synchronize()
                _send({"ok": True})
            elif cmd == "profile":
                phase = "profiling"
                _send(_cmd_profile(st, msg, torch, loader))
            elif cmd == "counters_prepare":
                # The profile's counters set up before the GPU is held (cupti_counters).
                phase = "the counters' setup"
                _send({"ok": True, "prepare": st.cupti.counters_prepare(
                    list(msg.get("counters") or []))})
            elif cmd == "compile":
                # A compile dry run (dryrun.py): kernels compiled, nothing launched.
                phase = "the compile dry run"
                from kagent_harness.dryrun import compile_dry_run
                _send(dict(compile_dry_run(st.model, msg["inputs"], st.device,
                                           phantom=bool(msg.get("phantom"))), ok=True))
            elif cmd == "use":
                phase = "choosing a variant"
                name, model = st.variants[int(msg["index"])]
                if model is None:
                    raise ValueError(f"variant {msg['index']} did not load")
                st.model = model
                st.launches.module_name = name
                st.prev_outputs = []
                _send({"ok": True})
            else:
                _send({"ok": False, "kind": "INFRA_ERROR", "message": f"unknown cmd {cmd}"})
        except Exception as e:  # noqa: BLE001
            _fail(e, phase)


def _build(module, cfg, st, torch, loader):
    """ModelNew built like the reference: same init inputs, same seed, and the
    reference's state_dict when the parameters match by name and shape."""
    init_inputs = torch.load(cfg["init_inputs_path"], weights_only=True)
    model = loader.build_model(module.ModelNew, init_inputs, cfg["init_seed"], st.device)
    weights = "seed"
    ref_state_path = cfg.get("ref_state_path")
    if ref_state_path and isinstance(model, torch.nn.Module):
        ref_state = torch.load(ref_state_path, weights_only=True)
        own = model.state_dict()
        if own and set(own) == set(ref_state) and all(
                own[k].shape == ref_state[k].shape for k in own):
            model.load_state_dict(ref_state)
            weights = "reference state_dict"
    return model, weights


def _decode_inputs(st, msg, torch, loader):
    """A call's inputs, as tensors this process owns on its device. With "inputs_ipc"
    (the supervisor's private copies in shared GPU memory) each tensor is copied GPU to GPU, so no bytes cross the host; otherwise
    they come from the torch.save file at "inputs"."""
    if "inputs_ipc" in msg:
        out = [x.clone() if isinstance(x, torch.Tensor) else x
               for x in _open_ipc(msg["inputs_ipc"])]
        torch.cuda.synchronize()
        return out
    new = torch.load(msg["inputs"], weights_only=True)
    return [loader.to_device(x, st.device) for x in new]


_INBOX = None


def _open_ipc(field):
    """The tensors the supervisor shared for one call (transfer.TransferMixin._share):
    its descriptor arrives on the descriptor channel, tagged with the token the field
    names; the field (pickled by the trusted supervisor) lays the tensors out in it.
    Plain values pass through."""
    import base64
    import pickle
    import torch
    from kagent_harness import vmm
    global _INBOX
    if FD_CHANNEL is None:
        raise RuntimeError("this process has no descriptor channel")
    if _INBOX is None:
        _INBOX = vmm.FdInbox(FD_CHANNEL)
    spec = pickle.loads(base64.b64decode(field))
    buf = _INBOX.take(spec["token"], spec["size"])
    out = []
    for item in spec["items"]:
        if item[0] == "vmm":
            _, offset, shape, stride, dtype = item
            out.append(buf.view(offset, shape, stride, getattr(torch, dtype)))
        else:
            out.append(item[1])
    return out


def _hand_back(outputs, msg, torch):
    """Hands the outputs to the supervisor: copied GPU to GPU into the receive buffers it
    shared ("out_ipc") when there are as many with the same shapes and dtypes, else saved
    to the file "out" (the supervisor then finds the mismatch itself). The copies are
    queued on the current stream without a device sync first: work the candidate left
    on a side stream and did not join is not finished, and the copy shows it. A file's
    copies of device outputs go straight to the host (no device copy first: the outputs
    may be as large as the room the device has left). Returns "ipc" or "file"."""
    bufs = None
    if msg.get("out_ipc"):
        try:
            bufs = _open_ipc(msg["out_ipc"])
        except Exception as e:  # noqa: BLE001 - the file path still works
            sys.stderr.write(f"kagent child: output buffers not mapped: {e!r}\n")
    if bufs is not None and len(bufs) == len(outputs) and all(
            isinstance(o, torch.Tensor) and isinstance(b, torch.Tensor) and
            o.shape == b.shape and o.dtype == b.dtype and o.device == b.device
            for o, b in zip(outputs, bufs)):
        for o, b in zip(outputs, bufs):
            b.copy_(o.detach())
        torch.cuda.synchronize()
        del bufs
        return "ipc"
    copies = [o.detach().cpu() if o.is_cuda else o.detach().clone() for o in outputs]
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    del bufs
    torch.save(copies, msg["out"])
    return "file"


def _load_inputs(st, msg, torch, loader):
    new = _decode_inputs(st, msg, torch, loader)
    reused = False
    if msg.get("reuse") and st.inputs is not None and len(st.inputs) == len(new) and all(
            _same_layout(a, b) for a, b in zip(st.inputs, new)):
        # New values in the same buffers: a candidate caching by pointer returns stale data.
        for old, x in zip(st.inputs, new):
            if isinstance(old, torch.Tensor):
                old.copy_(x)
        new = st.inputs
        reused = True
    st.inputs = new
    return reused


def _poison(st, msg, torch):
    """Fills freed memory of each output's size with NaN (the max for integers), so that a
    caching allocator hands the candidate garbage rather than a previous answer."""
    for shape, dtype_name in msg.get("poison", []):
        dtype = getattr(torch, dtype_name, None)
        if dtype is None:
            continue
        t = torch.empty([int(s) for s in shape], dtype=dtype, device=st.device)
        if t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        elif t.dtype != torch.bool:
            t.fill_(torch.iinfo(t.dtype).max)
        del t


def _cmd_call(st, msg, torch, loader):
    from kagent_harness.compare import overlaps
    steps = _Steps()
    reused = _load_inputs(st, msg, torch, loader)
    steps.lap("inputs")
    clones = [x.clone() if isinstance(x, torch.Tensor) else x for x in st.inputs]
    _poison(st, msg, torch)
    if st.device == "cuda":
        torch.cuda.synchronize()
    steps.lap("input copies and poison")
    st.launches.reset()
    prof_names = prof_times = None
    st.cupti.mark("gate_begin")
    t0 = time.perf_counter()
    with _OpRecording() as ops:
        if msg.get("profile_kernels") and st.device == "cuda":
            prof_names, prof_times, out = _profiled_call(st, torch)
        else:
            out = st.model(*st.inputs)
    steps.lap("forward")
    flat = loader.flatten_outputs(out)
    via = _hand_back(flat, msg, torch)
    elapsed = time.perf_counter() - t0
    steps.lap("hand-back")
    # No flush here: the supervisor asks once, after its last call ("flush").
    st.cupti.mark("gate_end")
    aliased = None
    for o in flat:
        for x in st.inputs:
            if isinstance(x, torch.Tensor) and overlaps(o, x):
                aliased = "input"
        for p in st.prev_outputs:
            if overlaps(o, p):
                aliased = aliased or "previous output"
    mutated = [i for i, (x, c) in enumerate(zip(st.inputs, clones))
               if isinstance(x, torch.Tensor) and not _equal_nan(x, c)]
    st.prev_outputs = [o for o in flat]  # kept alive: a reused buffer shows up next call
    steps.lap("checks")
    return {"ok": True, "steps_ms": steps.ms, "outputs_via": via, "reused_buffers": reused, "mutated": mutated, "aliased": aliased,
            "own_launches": st.launches.own, "launches": st.launches.total,
            "launch_names": sorted(st.launches.names), "profiler_kernels": prof_names,
            "profiler_kernel_ms": prof_times, "op_record": ops.summary, "elapsed_s": elapsed}


class _Steps:
    """Wall time of a gate call's steps in this process, in ms (the reply's "steps_ms"):
    where the time between the supervisor's message and this reply goes. Diagnostics
    only: the supervisor reports them as this process's own account, never as its
    measurement."""

    def __init__(self):
        self.ms = {}
        self._t = time.perf_counter()

    def lap(self, name):
        t = time.perf_counter()
        self.ms[name] = round((t - self._t) * 1e3, 2)
        self._t = t


class _OpRecording:
    """The harness's op recorder (ownwork.OpRecorder) around one gate call's forward, with
    a sentinel op before and after it; `summary` is what the reply carries. The verdict
    is the supervisor's (ownwork.judge_ops): a summary that shows the mode popped or
    disabled is rejected there. An exception of forward passes through unchanged."""

    def __enter__(self):
        from kagent_harness import ownwork
        self._ownwork = ownwork
        self.rec = ownwork.make_recorder()
        self.summary = None
        self.rec.__enter__()
        self.rec.sentinel()
        return self

    def __exit__(self, exc_type, exc, tb):
        on_stack = False
        if exc_type is None:
            self.rec.sentinel()
            on_stack = self._ownwork.mode_on_stack(self.rec)
        try:
            self.rec.__exit__(None, None, None)
        except Exception as e:  # noqa: BLE001 - the candidate popped the mode itself
            sys.stderr.write(f"kagent child: op recorder did not exit cleanly: {e!r}\n")
            on_stack = False
        if self._ownwork.mode_on_stack(self.rec) and self.rec.tampered is None:
            # Its exit popped another mode: the candidate left one of its own above it.
            self.rec.tampered = "a dispatch mode was left above the recorder"
        self.summary = self.rec.summary(on_stack)
        return False


def _profiled_call(st, torch):
    """GPU without the CUPTI tracer: torch.profiler lists the kernels of one call, with
    each kernel name's summed GPU time in ms (at most 200 names)."""
    from torch.profiler import ProfilerActivity, profile
    names = set()
    times = {}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = st.model(*st.inputs)
        torch.cuda.synchronize()
    for e in prof.events():
        dt = str(getattr(e, "device_type", ""))
        if dt.endswith("CUDA") and e.name:
            names.add(e.name)
            try:
                us = float(e.time_range.end - e.time_range.start)
            except Exception:  # noqa: BLE001 - no time: the name still counts
                us = 0.0
            times[e.name] = times.get(e.name, 0.0) + us / 1e3
        for k in getattr(e, "kernels", []) or []:
            names.add(k.name)
    top = sorted(times.items(), key=lambda kv: -kv[1])[:200]
    return sorted(names), [[n, ms] for n, ms in top], out


def _cmd_time(st, msg, torch, fn, time_callable):
    device = st.device
    flush_bytes = int(msg.get("flush_bytes", 0))
    # Calibration: what the host clock adds to an empty call (sync latency).
    noop = time_callable(lambda: None, device, reps=20, warmup_iters=3, warmup_ms=0.0,
                         flush_bytes=0)
    if flush_bytes:
        buf = torch.empty(max(1, flush_bytes // 4), dtype=torch.int32, device=device)
        if device == "cuda":
            torch.cuda.synchronize()
        st.cupti.mark("flush_begin")
        buf.zero_()
        if device == "cuda":
            torch.cuda.synchronize()
        st.cupti.mark("flush_end")
        del buf
    if device == "cuda":
        # A probe of the timing's spin kernel alone, so the trace analysis can leave it out.
        from kagent_harness.timing import spin
        spin(5.0)
        torch.cuda.synchronize()
        st.cupti.mark("spin_begin")
        spin(5.0)
        torch.cuda.synchronize()
        st.cupti.mark("spin_end")
    st.launches.reset()
    res = time_callable(fn, device, reps=int(msg["reps"]), warmup_iters=int(msg["warmup_iters"]),
                        warmup_ms=float(msg["warmup_ms"]), flush_bytes=flush_bytes,
                        max_warmup_s=float(msg.get("max_warmup_s", 60.0)), mark=st.cupti.mark,
                        budget_ms=float(msg.get("budget_ms", 0.0)))
    st.cupti.flush()
    from kagent_harness.loader import flatten_outputs
    via = _hand_back(flatten_outputs(st.last), msg, torch)
    calls = res["warmup_calls"] + len(res["times_ms"])
    res.update({"ok": True, "outputs_via": via, "own_launches": st.launches.own, "launches": st.launches.total,
                "calls": calls, "noop_wall_ms": sorted(noop["wall_ms"])[len(noop["wall_ms"]) // 2],
                "noop_event_ms": sorted(noop["times_ms"])[len(noop["times_ms"]) // 2]})
    return res


def _cmd_profile(st, msg, torch, loader):
    _load_inputs(st, msg, torch, loader)
    cuda = st.device == "cuda"
    warmup_iters = int(msg.get("warmup_iters", 3))
    # The kernels of the last warm-up forward, by the tracer (the first may also run an
    # autotuner's benchmarks), size the counter collection below.
    count = (cuda and bool(msg.get("counters")) and warmup_iters > 0
             and st.cupti.counts_kernels())
    before = None
    for i in range(warmup_iters):
        if count and i == warmup_iters - 1:
            torch.cuda.synchronize()
            before = st.cupti.kernels_seen()
        st.model(*st.inputs)
    if cuda:
        torch.cuda.synchronize()
    counters = None
    if msg.get("counters"):
        # The CUPTI backend's hardware counters: one forward per pass, before the traced
        # window (the trace's kernels stay those of the profiled forwards below).
        after = st.cupti.kernels_seen() if before is not None else None
        per_forward = after - before if after is not None and after > before else None
        counters = (st.cupti.counters(list(msg["counters"]), lambda: st.model(*st.inputs),
                                      torch.cuda.synchronize, per_forward) if cuda else
                    {"ok": False, "passes": 0, "error": "hardware counters need a GPU"})
    iters = int(msg.get("iters", 3))
    # Both the ncu backend (NVTX range) and the CUPTI backend (profile_begin/profile_end
    # markers) select exactly the kernels of these forwards.
    st.cupti.mark("profile_begin")
    for _ in range(iters):
        if cuda:
            torch.cuda.nvtx.range_push(msg.get("range", "kagent_candidate"))
        st.model(*st.inputs)
        if cuda:
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
    st.cupti.mark("profile_end")
    st.cupti.flush()
    reply = {"ok": True, "iters": iters, "own_launches": st.launches.own,
             "launch_names": sorted(st.launches.names)}
    if counters is not None:
        reply["counters"] = counters
    return reply


if __name__ == "__main__":
    sys.exit(main())
