"""Mode `measure` and mode `profile`: the trusted supervisor's side.

The supervisor (this process) never imports candidate code. It loads the reference,
draws input seeds from os.urandom, computes reference outputs, times eager and
torch.compile before any candidate code is loaded (the candidate's process is started
first but waits for "load"), then drives one candidate child
(sandbox.Child) through the gate and the timing and decides the verdict from what it
computed itself plus cross-checks of what the child reports. docs/harness.md has the
full list of checks.
"""

import base64
import json
import math
import os
import pickle
import random
import shutil
import sys
import time
import traceback

import torch

from kagent_harness import NVTX_RANGE, __version__
from kagent_harness import kernels as K
from kagent_harness import loader
from kagent_harness import protocol as P
from kagent_harness.compare import all_finite, compare, dtype_name, overlaps, tolerances
from kagent_harness.sandbox import Child, ChildFailure, make_workdir
from kagent_harness.timing import l2_flush_bytes, time_callable

# The child's median may not be below this fraction of the supervisor's own wall-clock
# time per call in a back-to-back burst (an independent, coarse upper bound).
BURST_FACTOR = 0.5
# The child's median may not be below this fraction of the GPU span of each call's
# kernels as traced by CUPTI, minus CUPTI_SLACK_MS.
CUPTI_FACTOR = 0.95
CUPTI_SLACK_MS = 0.002
# Own-kernel GPU time per timed call vs per gate call (gate calls run without the L2
# flush, so they are if anything faster).
CUPTI_BUSY_FACTOR = 0.5
# Host wall time per call beyond the event time (minus the empty-call calibration) above
# which the work is deemed to finish outside the timed stream (side stream, not joined).
SIDE_STREAM_MIN_MS = 0.02
SIDE_STREAM_FRACTION = 0.2

WIDE_VARIANTS = ("neg", "scale10", "randn", "const")


class Rejection(Exception):
    def __init__(self, verdict, reason):
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


def _sysrand_seed(rng):
    return rng.randrange(1, 2**62)


def resolve_device(req):
    if req.device == "cuda" and not torch.cuda.is_available():
        raise P.RequestError("device 'cuda' requested but no CUDA device is visible")
    if req.device:
        return req.device
    return "cuda" if torch.cuda.is_available() else "cpu"


def _median(xs):
    return P.percentile(sorted(xs), 0.5)


def _rms(outputs):
    """Root mean square over the floating outputs (0 when there are none)."""
    total, n = 0.0, 0
    for o in outputs:
        if o.is_floating_point() and o.numel():
            f = o.detach().float()
            f = torch.where(torch.isfinite(f), f, torch.zeros_like(f))
            total += float((f * f).sum())
            n += o.numel()
    return math.sqrt(total / n) if n else 0.0


def _is_degenerate(inputs):
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1:
            if bool((x == x.flatten()[0]).all()):
                return True
    return False


def _variant(inputs, kind, seed):
    loader.set_seed(seed)
    out = []
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            if kind == "neg":
                x = -x
            elif kind == "scale10":
                x = x * 10
            elif kind == "randn":
                x = torch.randn_like(x)
            elif kind == "const":
                x = torch.full_like(x, 0.75)
        out.append(x)
    return out


def _spec(outputs):
    """[[shape, dtype name], ...] of a list of output tensors."""
    return [[list(o.shape), dtype_name(o.dtype)] for o in outputs]


def _cpu(x):
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu")
    return x


def _gpu_index(req):
    cvd = req.cuda_visible_devices if req.cuda_visible_devices is not None \
        else os.environ.get("CUDA_VISIBLE_DEVICES", "")
    first = cvd.split(",")[0].strip() if cvd else ""
    return int(first) if first.isdigit() else 0


class Supervisor:
    def __init__(self, req, log):
        self.req = req
        self.log = log
        self.rng = random.SystemRandom()
        self.device = resolve_device(req)
        req.apply_floors(self.device, log)
        self.result = {
            "verdict": P.INFRA_ERROR, "correctness": P.empty_correctness(),
            "candidate": None, "eager": None, "compiled": None, "reference_kernel": None,
            "kernels_launched": [],
            "op_signature": None, "gpu_name": "", "gpu_index": 0, "gpu_seconds": 0.0,
            "log": "", "shape_set": req.shape_set,
            "harness": {"version": __version__, "torch": torch.__version__,
                        "python": sys.version.split()[0], "device": self.device,
                        "checks": [], "warnings": []},
        }
        try:
            import triton
            self.result["harness"]["triton"] = triton.__version__
        except ImportError:
            self.result["harness"]["triton"] = None
        self.phases = P.Phases()
        age = P.process_age_ms()
        if age is not None:
            self.phases.add("process start and imports", age)
        self.refdir = make_workdir()
        self.workdir = None
        self.rk_spawned = None  # (child, workdir) started early for the starting kernel
        self.child = None
        self.trace_path = None

    # -- reference ---------------------------------------------------------------------
    def load_reference(self):
        req = self.req
        name = "kagent_problem_%x" % self.rng.getrandbits(32)
        self.problem = loader.load_source(req.problem_source, name, self.refdir)
        loader.check_problem(self.problem)
        self.get_inputs = self.problem.get_inputs
        if req.get_inputs_source:
            self.get_inputs = loader.override_get_inputs(self.problem, req.get_inputs_source)
        self.init_seed = req.seed if req.seed is not None else _sysrand_seed(self.rng)
        self.init_inputs = loader.make_init_inputs(self.problem, self.init_seed)
        self.model = loader.build_model(self.problem.Model, self.init_inputs, self.init_seed,
                                        self.device)
        if self.device == "cuda":
            self.result["gpu_name"] = torch.cuda.get_device_name()
            self.result["gpu_index"] = _gpu_index(req)
        else:
            self.result["gpu_name"] = "cpu"

    def fresh_inputs(self):
        return loader.make_inputs(self.get_inputs, _sysrand_seed(self.rng), self.device)

    def ref(self, inputs):
        out = self.model(*inputs)
        outs = [o.detach().clone() for o in loader.flatten_outputs(out)]
        if self.device == "cuda":
            torch.cuda.synchronize()
        return outs

    def ref_with_flags(self, inputs):
        """Reference outputs plus whether the reference mutates or aliases its inputs
        (then the candidate may too)."""
        clones = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        raw = loader.flatten_outputs(self.model(*inputs))
        aliases = any(overlaps(o, x) for o in raw for x in inputs if isinstance(x, torch.Tensor))
        outs = [o.detach().clone() for o in raw]
        if self.device == "cuda":
            torch.cuda.synchronize()
        mutates = any(isinstance(x, torch.Tensor) and not torch.equal(x, c)
                      for x, c in zip(inputs, clones))
        return outs, mutates, aliases

    def timing_inputs(self):
        inputs = self.fresh_inputs()
        if _is_degenerate(inputs):
            alt = _variant(inputs, "randn", _sysrand_seed(self.rng))
            if all_finite(self.ref(alt)):
                self.log.add("get_inputs gives a constant tensor: timing on randn inputs of "
                             "the same shapes instead (a constant-input shortcut gains nothing)")
                return alt
        return inputs

    # -- modes ---------------------------------------------------------------------------
    def signature(self):
        inputs = self.fresh_inputs()
        from kagent_harness.signature import record
        return record(self.model, inputs)

    def run_measure(self):
        req = self.req
        t_start = time.monotonic()
        torch.set_grad_enabled(False)
        if req.kernel_source and req.reference_kernel_source and req.time_candidate:
            # The starting kernel's process, started now too; used after the candidate's.
            self.spawn_child(trace=False)
            self.rk_spawned = (self.child, self.workdir)
            self.child = self.workdir = None
        if req.kernel_source:
            self.spawn_child()
        try:
            with self.phases("reference load"):
                self.load_reference()
        except Exception as e:  # noqa: BLE001
            self.log.add("reference failed:\n" + traceback.format_exc())
            self.result["correctness"]["reason"] = f"the reference failed to load or build: {e}"
            return self.finish(t_start)
        if req.signature:
            try:
                with self.phases("op signature"):
                    self.result["op_signature"] = self.signature()
            except Exception as e:  # noqa: BLE001
                self.log.add(f"op signature not recorded: {e!r}")
        try:
            if req.baselines:
                with self.phases("baselines"):
                    self.time_baselines()
            if not req.kernel_source:
                self.result["verdict"] = P.CORRECT if (self.result["eager"] or
                                                       self.result["compiled"]) else P.INFRA_ERROR
                if self.result["verdict"] == P.INFRA_ERROR:
                    self.result["correctness"]["reason"] = "no kernel_source and no baselines"
                self.result["correctness"]["reason"] = self.result["correctness"]["reason"] or \
                    "no candidate: baselines only"
                return self.finish(t_start)
            self.run_candidate()
            if req.reference_kernel_source and req.time_candidate:
                # The candidate's process is done; it is closed before the starting kernel
                # runs, so nothing it left running (a thread keeping the GPU busy) can slow
                # the start and inflate the speedup over it.
                self.child.close()
                with self.phases("starting kernel"):
                    self.time_reference_kernel()
        except Rejection as r:
            self.result["verdict"] = r.verdict
            self.result["correctness"]["reason"] = r.reason
        except ChildFailure as f:
            self.result["verdict"] = f.verdict
            self.result["correctness"]["reason"] = f.reason
        except Exception as e:  # noqa: BLE001
            self.log.add("supervisor error:\n" + traceback.format_exc())
            self.result["verdict"] = P.INFRA_ERROR
            self.result["correctness"]["reason"] = f"harness error: {type(e).__name__}: {e}"
        return self.finish(t_start)

    def finish(self, t_start):
        extra = ""
        if self.child is not None:
            self.child.close()
            extra = self.child.stderr_tail()
            self.result["harness"]["child_peak_rss_bytes"] = self.child.peak_rss
        rk_dir = None
        if self.rk_spawned is not None:  # never used (the candidate failed first)
            self.rk_spawned[0].close()
            rk_dir = self.rk_spawned[1]
            self.rk_spawned = None
        for d in (self.workdir, self.refdir, rk_dir):
            if d:
                shutil.rmtree(d, ignore_errors=True)
        if self.device == "cuda":
            self.result["gpu_seconds"] = time.monotonic() - t_start
        self.result["harness"]["phases_ms"] = self.phases.as_dict()
        if self.req.mode == "measure":
            self.log.add(f"verdict {self.result['verdict']}: "
                         f"{self.result['correctness']['reason']}")
        self.result["log"] = self.log.tail(extra)
        return self.result

    # -- baselines ----------------------------------------------------------------------
    def time_baselines(self):
        req = self.req
        inputs = self.timing_inputs()
        flush = l2_flush_bytes(self.device) if req.flush_l2 else 0
        model = self.model

        def run(fn, label):
            with self.phases(f"baselines: {label} first call"):
                fn()  # outside the protocol (compilation for torch.compile)
            with self.phases(f"baselines: {label} timing"):
                res = time_callable(fn, self.device, req.timing_reps, req.warmup_iters,
                                    req.warmup_ms, flush)
            self.result[label] = P.timing_stats(res["times_ms"])
            self.result["harness"].setdefault("host_issue_median_ms", {})[label] = \
                _median(res["issue_ms"])
            self.log.add(f"{label}: median {self.result[label]['median_ms']:.4f} ms over "
                         f"{len(res['times_ms'])} reps ({res['warmup_calls']} warm-up calls, "
                         f"host issue {_median(res['issue_ms']):.4f} ms hidden behind a "
                         f"{res['spin_us']:.0f} us spin)")

        def do_bench(fn, label):
            # An independent reference measurement (Triton's own protocol) for audits.
            try:
                import triton.testing
                ms = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
                self.result["harness"].setdefault("do_bench_median_ms", {})[label] = float(ms)
            except Exception as e:  # noqa: BLE001
                self.result["harness"]["warnings"].append(f"do_bench failed: {e}")

        if "eager" in req.baselines:
            run(lambda: model(*inputs), "eager")
            if req.do_bench_check and self.device == "cuda":
                do_bench(lambda: model(*inputs), "eager")
        if "compiled" in req.baselines:
            try:
                with self.phases("baselines: compiled compilation and check"):
                    compiled = torch.compile(model, mode="default", dynamic=False)
                    ref_out = self.ref(inputs)
                    got = [o.detach() for o in loader.flatten_outputs(compiled(*inputs))]
                atol, rtol = tolerances(ref_out, req.atol, req.rtol)
                c = compare(ref_out, got, atol, rtol)
                if not c["ok"]:
                    self.result["harness"]["warnings"].append(
                        "torch.compile output differs from eager: " + c["reason"])
                run(lambda: compiled(*inputs), "compiled")
                if req.do_bench_check and self.device == "cuda":
                    do_bench(lambda: compiled(*inputs), "compiled")
            except Exception as e:  # noqa: BLE001
                self.log.add(f"torch.compile baseline failed: {type(e).__name__}: {e}")
                self.result["harness"]["warnings"].append(f"torch.compile failed: {e}")
                self.result["compiled"] = None

    # -- the candidate ------------------------------------------------------------------
    def time_reference_kernel(self):
        """Times the request's reference kernel (the job's starting kernel) with the same
        protocol as the candidate, in a child process of its own, after checking its
        output on the timing inputs once. Failures become warnings: the candidate's
        verdict does not depend on the starting kernel."""
        req, h = self.req, self.result["harness"]
        saved = (self.child, self.workdir, self.trace_path, self.triton_hook,
                 getattr(self, "use_ipc", False))
        self.trace_path = None
        self.child, self.workdir = self.rk_spawned or (None, None)
        self.rk_spawned = None
        try:
            self.start_child(source=req.reference_kernel_source,
                             language=req.reference_kernel_language, trace=False,
                             what="starting kernel:")
            inputs = self.timing_inputs()
            ref_out = self.ref(inputs)
            field = self.inputs_field(inputs, "reference_kernel")
            out_path = os.path.join(self.workdir, "out_reference_kernel.pt")
            spec = _spec(ref_out)
            bufs, out_field = self.out_field(spec)
            reply = self.child.request({"cmd": "call", **field, **out_field, "out": out_path,
                                        "poison": [], "reuse": False,
                                        "profile_kernels": False},
                                       timeout=req.call_timeout_s,
                                       phase="the starting kernel's call")
            self.release_inputs(field)
            got = self.take_outputs(bufs, reply, out_path, ref_out)
            del bufs
            atol, rtol = tolerances(ref_out, req.atol, req.rtol)
            c = compare(ref_out, got, atol * max(1.0, _rms(ref_out)), rtol)
            if not c["ok"]:
                h["warnings"].append("the starting kernel is wrong on the timing inputs (not "
                                     "timed): " + c["reason"])
                return
            reply, _ = self._time_in_child(os.path.join(self.workdir, "out_rk_timing.pt"),
                                           "the starting kernel's timing", spec)
            times = reply.get("times_ms")
            if isinstance(times, list) and times and all(
                    isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in times):
                self.result["reference_kernel"] = P.timing_stats(times)
                self.log.add(f"starting kernel: median "
                             f"{self.result['reference_kernel']['median_ms']:.4f} ms")
        except (ChildFailure, Rejection) as e:
            h["warnings"].append(f"the starting kernel could not be timed: {e}")
        finally:
            if self.child is not None and self.child is not saved[0]:
                self.child.close()
            if self.workdir and self.workdir != saved[1]:
                shutil.rmtree(self.workdir, ignore_errors=True)
            (self.child, self.workdir, self.trace_path, self.triton_hook,
             self.use_ipc) = saved

    def spawn_child(self, trace=True):
        """Starts a candidate process in a new private workdir. It imports torch and
        initialises CUDA while this process goes on (loading the reference, timing the
        baselines); start_child then hands it the candidate."""
        req = self.req
        self.workdir = make_workdir()
        self.trace_path = None
        extra_env = {}
        lib = os.environ.get("KAGENT_CUPTI_LIB")
        if lib and self.device == "cuda" and req.mode != "profile" and trace:
            self.trace_path = os.path.join(self.workdir, "cupti_trace.jsonl")
            extra_env = {"CUDA_INJECTION64_PATH": lib, "KAGENT_CUPTI_LIB": lib,
                         "KAGENT_CUPTI_OUT": self.trace_path}
            self.log.add(f"CUPTI tracer: {lib}")
        extra_env.update(req.child_env)
        mem = req.memory_limit_mb or (8192 if self.device == "cpu" else 65536)
        self.child = Child(self.workdir, self.device, req.timeout_s, mem, self.log,
                           network_isolation=req.network_isolation,
                           cuda_visible_devices=req.cuda_visible_devices, extra_env=extra_env,
                           drop_privileges=req.drop_privileges,
                           keep_injection=req.mode == "profile")
        with self.phases("candidate process spawn"):
            self.child.start()

    def start_child(self, source=None, language=None, trace=True, what="candidate"):
        """Hands the candidate (`source`, default the request's kernel) to the process
        spawn_child started, spawning one first when there is none, and waits until it
        has imported and built ModelNew."""
        req = self.req
        source = req.kernel_source if source is None else source
        language = req.language if language is None else language
        if self.child is None:
            self.spawn_child(trace)
        cand_path = os.path.join(self.workdir, "candidate_source.py")
        with open(cand_path, "w", encoding="utf-8") as f:
            f.write(source)
        init_path = os.path.join(self.workdir, "init_inputs.pt")
        torch.save([_cpu(x) for x in self.init_inputs], init_path)
        state_path = None
        if isinstance(self.model, torch.nn.Module) and self.model.state_dict():
            state_path = os.path.join(self.workdir, "ref_state.pt")
            torch.save({k: v.detach().cpu() for k, v in self.model.state_dict().items()},
                       state_path)
        cfg = {"device": self.device, "module_name": "kagent_candidate",
               "candidate_path": cand_path, "init_inputs_path": init_path,
               "init_seed": self.init_seed, "ref_state_path": state_path,
               "language": language}
        with open(os.path.join(self.workdir, "child_config.json"), "w") as f:
            json.dump(cfg, f)
        with self.phases(f"{what} import and construction"):
            self.child.load()
            ready = self.child.checked(
                self.child.recv(phase="candidate import and construction"),
                "candidate import and construction")
        self.log.add(f"candidate ready (weights from {ready.get('weights')}, "
                     f"triton launch hook {'on' if ready.get('triton_hook') else 'off'})")
        self.triton_hook = bool(ready.get("triton_hook")) and language == "triton"
        with self.phases(f"{what} CUDA IPC probe"):
            self._probe_ipc()

    # -- inputs to the child -----------------------------------------------------------
    def _probe_ipc(self):
        """Inputs and outputs travel between this process and the child by CUDA IPC when
        it works here (a 4 GiB input then costs a GPU copy, not ~10 s through a file);
        the probe sends a small tensor.

        Everything shared is allocated in a private memory pool (torch.cuda.MemPool)
        that holds nothing else: the child can keep a shared allocation mapped (or map
        it again from the handle) after it is freed here, so the memory behind it must
        never be handed to the reference's tensors."""
        self.use_ipc = False
        self._ipc_keep = None
        if self.device != "cuda" or not self.req.ipc_inputs:
            return
        if getattr(self, "ipc_pool", None) is None:
            try:
                self.ipc_pool = torch.cuda.MemPool()
            except (AttributeError, RuntimeError) as e:
                self.log.add(f"no private CUDA memory pool here ({e!r}): inputs and outputs "
                             "go through files")
                return
        probe = torch.arange(1, 1025, dtype=torch.float32, device="cuda")
        try:
            field = self._ipc_field([probe])
        except Exception as e:  # noqa: BLE001
            self.log.add(f"CUDA IPC unavailable here ({e!r}): inputs go through files")
            return
        reply = self.child.request(dict(cmd="ipc_probe", **field), phase="CUDA IPC probe")
        self._ipc_keep = None
        if reply.get("ipc") and abs(float(reply.get("sum", 0.0)) - 524800.0) < 1e-3:
            self.use_ipc = True
            self.log.add("inputs travel to the candidate's process by CUDA IPC")
        else:
            self.log.add(f"CUDA IPC probe failed ({reply.get('error', 'wrong sum')}): "
                         "inputs go through files")

    def _ipc_field(self, inputs):
        # Private copies: the child maps them, so it must never see the supervisor's own
        # tensors (it could change them before the reference runs).
        with torch.cuda.use_mem_pool(self.ipc_pool):
            shared = [x.detach().clone() if isinstance(x, torch.Tensor) else x
                      for x in inputs]
        torch.cuda.synchronize()
        self._ipc_keep = shared
        return {"inputs_ipc": self._ipc_handles(shared)}

    @staticmethod
    def _ipc_handles(tensors):
        from torch.multiprocessing.reductions import reduce_tensor
        items = []
        for x in tensors:
            if isinstance(x, torch.Tensor):
                fn, args = reduce_tensor(x)
                items.append(("cuda_ipc", fn, args))
            else:
                items.append(x)
        return base64.b64encode(pickle.dumps(items)).decode("ascii")

    def out_field(self, spec):
        """Receive buffers for the child's outputs, shaped and typed as `spec` ([[shape,
        dtype name], ...]: the reference's outputs) and filled with NaN (the maximum for
        integers), in the private pool, with the message field that shares them: (None,
        {}) when outputs must come through a file (no IPC, no spec, bool outputs, which
        have no value that cannot be an answer). A child that writes nothing leaves
        the poison there."""
        if not getattr(self, "use_ipc", False) or not spec:
            return None, {}
        try:
            bufs = []
            with torch.cuda.use_mem_pool(self.ipc_pool):
                for shape, name in spec:
                    dtype = getattr(torch, name, None)
                    if not isinstance(dtype, torch.dtype) or dtype == torch.bool:
                        return None, {}
                    b = torch.empty([int(n) for n in shape], dtype=dtype, device="cuda")
                    if b.is_floating_point() or b.is_complex():
                        b.fill_(float("nan"))
                    else:
                        b.fill_(torch.iinfo(dtype).max)
                    bufs.append(b)
            torch.cuda.synchronize()
            return bufs, {"out_ipc": self._ipc_handles(bufs)}
        except Exception as e:  # noqa: BLE001 - the file path still works
            self.log.add(f"output receive buffers not shared ({e!r}): outputs through a file")
            return None, {}

    def take_outputs(self, bufs, reply, out_path, ref_out):
        """The child's outputs of one call, as tensors this process owns: private copies
        of the receive buffers when the child says it filled them, else the output file."""
        if bufs is not None and reply.get("outputs_via") == "ipc":
            got = [b.clone() for b in bufs]
            torch.cuda.synchronize()
            self.result["harness"]["outputs_via"] = "cuda ipc"
            return got
        self.result["harness"]["outputs_via"] = "file"
        return self._load_outputs(out_path, ref_out)

    def inputs_field(self, inputs, tag):
        """The message fields that hand `inputs` to the child: CUDA IPC handles when the
        probe passed and every input is a tensor on the GPU or a plain value, else a file
        (removed by release_inputs)."""
        if getattr(self, "use_ipc", False) and all(
                (isinstance(x, torch.Tensor) and x.is_cuda) or
                not isinstance(x, (torch.Tensor, list, tuple, dict)) for x in inputs):
            return self._ipc_field(inputs)
        path = os.path.join(self.workdir, f"in_{tag}.pt")
        torch.save([_cpu(x) for x in inputs], path)
        return {"inputs": path}

    def release_inputs(self, field):
        self._ipc_keep = None
        if "inputs" in field:
            try:
                os.unlink(field["inputs"])
            except OSError:
                pass

    def _trial_plan(self):
        plan = [("seeded", str(i)) for i in range(self.req.trials)]
        if self.req.wide_trials:
            plan += [("wide", v) for v in WIDE_VARIANTS]
        plan.append(("timing", "timing inputs"))
        return plan

    def run_candidate(self):
        req = self.req
        self.own_names = K.own_kernel_names(req.kernel_source)
        self.result["harness"]["own_kernel_names"] = self.own_names
        if not self.own_names:
            self.result["harness"]["warnings"].append(
                "no @triton.jit function or __global__ kernel found in the candidate source")
        self.start_child()
        corr = self.result["correctness"]
        checks = self.result["harness"]["checks"]
        prev_ref = None
        ref_mutates = None
        ref_aliases = False
        poison = None
        min_own = None
        launch_names = set()
        profiled = False
        trials_run = 0
        atol = rtol = None
        timing_ref = None
        corr_atol_eff = 0.0
        ph = self.phases
        t_gate = time.monotonic()
        for k, (kind, label) in enumerate(self._trial_plan()):
            with ph("gate: inputs"):
                if kind == "seeded":
                    inputs = self.fresh_inputs()
                elif kind == "wide":
                    inputs = _variant(self.fresh_inputs(), label, _sysrand_seed(self.rng))
                else:
                    inputs = self.timing_inputs()
            out_path = os.path.join(self.workdir, f"out_{k}.pt")
            with ph("gate: inputs to the candidate"):
                in_field = self.inputs_field(inputs, k)
            ref_first = kind != "seeded" or k % 2 == 0
            ref_out = None
            if ref_first:
                with ph("gate: reference"):
                    if ref_mutates is None:
                        ref_out, ref_mutates, ref_aliases = self.ref_with_flags(inputs)
                    else:
                        ref_out = self.ref(inputs)
                if kind == "wide" and not all_finite(ref_out):
                    self.log.add(f"trial {label}: skipped, the reference is not finite there")
                    self.release_inputs(in_field)
                    continue
            if poison is None and ref_out is not None:
                poison = _spec(ref_out)
            bufs, out_field = self.out_field(poison)
            msg = {"cmd": "call", **in_field, **out_field, "out": out_path,
                   "poison": poison or [],
                   "reuse": k % 2 == 1,
                   "profile_kernels": (self.device == "cuda" and not self.trace_path
                                       and not profiled)}
            profiled = profiled or msg["profile_kernels"]
            t_call = time.monotonic()
            self.child.send(msg)
            if not ref_first:
                with ph("gate: reference"):
                    ref_out = self.ref(inputs)
            reply = self.child.checked(self.child.recv(timeout=req.call_timeout_s,
                                                       phase=f"gate trial {label}"),
                                       f"gate trial {label}")
            ph.add("gate: candidate calls (incl. handing outputs back)",
                   (time.monotonic() - t_call) * 1e3)
            self.release_inputs(in_field)
            with ph("gate: outputs back"):
                got = self.take_outputs(bufs, reply, out_path, ref_out)
                del bufs
            if atol is None:
                atol, rtol = tolerances(ref_out, req.atol, req.rtol)
                corr["atol"], corr["rtol"] = atol, rtol
            trials_run += 1
            corr["trials"] = trials_run
            # atol is in units of the output's RMS where that exceeds 1: long reductions
            # (a 1M-term dot product) carry rounding error proportional to the partial
            # sums' magnitude, which per-element rtol does not cover near zero.
            t_atol = atol * max(1.0, _rms(ref_out))
            corr_atol_eff = max(corr_atol_eff, t_atol)
            with ph("gate: compare"):
                c = compare(ref_out, got, t_atol, rtol)
            corr["max_abs_error"] = max(corr["max_abs_error"], c["max_abs_error"])
            corr["max_rel_error"] = max(corr["max_rel_error"], c["max_rel_error"])
            if c["worst_index"] and (not c["ok"] or not corr["worst_index"]):
                corr["worst_index"] = c["worst_index"]
            what = f"trial {label} ({kind})"
            if not c["ok"]:
                if prev_ref is not None and compare(prev_ref, got, t_atol, rtol)["ok"] and \
                        not compare(prev_ref, ref_out, t_atol, rtol)["ok"]:
                    raise Rejection(P.REJECTED, f"{what}: returned the previous call's answer "
                                    "although the inputs changed (caching by pointer or value)"
                                    + (" [same input buffers, new values]"
                                       if reply.get("reused_buffers") else ""))
                raise Rejection(P.INCORRECT, f"{what}: {c['reason']}")
            self._rule_checks(reply, what, ref_mutates, ref_aliases)
            if self.triton_hook:
                own = int(reply.get("own_launches", 0) or 0)
                min_own = own if min_own is None else min(min_own, own)
                launch_names.update(str(n) for n in (reply.get("launch_names") or [])[:100])
                if own == 0:
                    raise Rejection(P.REJECTED, f"{what}: no Triton kernel of the candidate ran "
                                    f"during forward ({reply.get('launches', 0)} Triton launches "
                                    "in all): the hot path is not the candidate's own kernels")
            if reply.get("profiler_kernels") is not None:
                names = [str(n) for n in reply["profiler_kernels"]][:200]
                self._check_own_names(names, what + " (torch.profiler)")
                launch_names.update(names)
            corr["trials_passed"] += 1
            prev_ref = ref_out
            if kind == "timing":
                timing_ref = ref_out
                atol_timing = t_atol
        ph.add("gate", (time.monotonic() - t_gate) * 1e3)
        checks.append(f"gate: {trials_run} trials passed (atol={atol:g} x max(1, output RMS) "
                      f"<= {corr_atol_eff:g}, rtol={rtol:g})")
        self.result["harness"]["atol_effective_max"] = corr_atol_eff
        if self.trace_path:
            with ph("gate: CUPTI trace"):
                launch_names |= self._check_cupti_gate()
        self.result["kernels_launched"] = sorted(launch_names)
        self.min_own = min_own
        if req.time_candidate:
            with ph("timing"):
                self.time_candidate(timing_ref, atol_timing, rtol)
        self.result["verdict"] = P.CORRECT
        corr["reason"] = ""

    def _load_outputs(self, path, ref_out):
        limit = 4 * sum(o.numel() * o.element_size() for o in ref_out) + (16 << 20)
        try:
            size = os.path.getsize(path)
        except OSError:
            raise Rejection(P.REJECTED, "the candidate process wrote no output file")
        if size > limit:
            raise Rejection(P.REJECTED, f"output file of {size} bytes, far larger than the "
                            "reference's outputs")
        try:
            got = torch.load(path, weights_only=True, map_location="cpu")
        except Exception as e:  # noqa: BLE001
            raise Rejection(P.REJECTED, f"unreadable output file: {e}")
        finally:
            os.unlink(path)
        if not isinstance(got, list) or not all(isinstance(t, torch.Tensor) for t in got):
            raise Rejection(P.REJECTED, "the output file does not hold a list of tensors")
        return [t.to(self.device) for t in got]

    def _rule_checks(self, reply, what, ref_mutates, ref_aliases):
        mutated = reply.get("mutated") or []
        if mutated and not ref_mutates:
            raise Rejection(P.REJECTED, f"{what}: forward mutated its input(s) "
                            f"{list(mutated)[:8]} (the reference does not)")
        aliased = reply.get("aliased")
        if aliased == "input" and not ref_aliases:
            raise Rejection(P.REJECTED, f"{what}: an output aliases an input's memory "
                            "(the reference's does not)")
        if aliased == "previous output":
            raise Rejection(P.REJECTED, f"{what}: an output reuses the memory of the previous "
                            "call's output (a persistent output buffer or a cached result)")

    def _check_own_names(self, names, what):
        if not names:
            raise Rejection(P.REJECTED, f"{what}: forward launched no GPU kernel")
        if not any(K.is_own(n, self.own_names) for n in names):
            raise Rejection(P.REJECTED, f"{what}: only library kernels ran "
                            f"({', '.join(names[:6])}): the hot path is not the candidate's "
                            "own kernels")

    def _check_cupti_gate(self):
        trace = K.read_trace(self.trace_path)
        if trace is None:
            self.result["harness"]["warnings"].append("CUPTI trace file missing")
            return set()
        calls = K.analyze_gate(trace, self.own_names)
        self.result["harness"]["cupti_gate_calls"] = len(calls)
        names = set()
        for i, call in enumerate(calls):
            names.update(call["names"])
            self._check_own_names(call["names"], f"gate call {i} (CUPTI)")
        self.gate_own_min_cupti = min((c["own"] for c in calls), default=None)
        # GPU time of the candidate's own kernels per gate call (the first call excluded:
        # autotuning); the timed calls must do comparable work.
        busy = sorted(c["own_busy_ms"] for c in calls[1:]) or [c["own_busy_ms"] for c in calls]
        self.gate_own_busy_cupti = busy[len(busy) // 2] if busy else None
        self.result["harness"]["checks"].append(
            f"CUPTI: {len(calls)} gate calls traced, own kernels in each")
        return names

    # -- candidate timing --------------------------------------------------------------
    def _time_in_child(self, out_path, phase, spec):
        """The timing protocol (timing.time_callable) run by the child on the inputs of
        its last call; the same request for the candidate and the starting kernel.
        Returns the reply and the receive buffers of the last call's outputs (see
        out_field; `spec` the expected outputs)."""
        req = self.req
        flush = l2_flush_bytes(self.device) if req.flush_l2 else 0
        bufs, out_field = self.out_field(spec)
        reply = self.child.request({"cmd": "time", "reps": req.timing_reps,
                                    "warmup_iters": req.warmup_iters,
                                    "warmup_ms": req.warmup_ms, "flush_bytes": flush,
                                    "out": out_path, **out_field}, phase=phase)
        return reply, bufs

    def time_candidate(self, timing_ref, atol, rtol):
        req = self.req
        h = self.result["harness"]
        checks = h["checks"]
        out_path = os.path.join(self.workdir, "out_timing.pt")
        t0 = time.monotonic()
        reply, bufs = self._time_in_child(out_path, "timing", _spec(timing_ref))
        wall_phase_ms = (time.monotonic() - t0) * 1e3
        self.phases.add("timing: the protocol (incl. handing the output back)", wall_phase_ms)
        times = reply.get("times_ms")
        walls = reply.get("wall_ms")
        if not isinstance(times, list) or len(times) != req.timing_reps or not all(
                isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in times):
            raise Rejection(P.REJECTED, f"timing: expected {req.timing_reps} positive finite "
                            "times from the timing loop")
        if not isinstance(walls, list) or len(walls) != len(times):
            raise Rejection(P.REJECTED, "timing: malformed wall-clock times")
        med = _median(times)
        issues = reply.get("issue_ms")
        if isinstance(issues, list) and issues:
            h.setdefault("host_issue_median_ms", {})["candidate"] = _median(issues)
        # 1. The output of the timed calls must be right.
        got = self.take_outputs(bufs, reply, out_path, timing_ref)
        del bufs
        c = compare(timing_ref, got, atol, rtol)
        if not c["ok"]:
            raise Rejection(P.REJECTED, "the timed calls returned a wrong answer (behaves "
                            "differently when timed): " + c["reason"])
        checks.append("timing: output of the last timed call verified")
        # 2. The candidate cannot claim more time than passed.
        if sum(times) > wall_phase_ms * 1.05 + 5.0:
            raise Rejection(P.REJECTED, f"timing: reported times sum to {sum(times):.3f} ms, "
                            f"more than the {wall_phase_ms:.3f} ms of the whole phase")
        # 3. Own kernels per call while timed, against the gate (Triton launch hook).
        calls = int(reply.get("calls", 0) or 0)
        if self.triton_hook and self.min_own and calls > 0:
            per_call = float(reply.get("own_launches", 0) or 0) / calls
            if per_call + 1e-9 < self.min_own:
                raise Rejection(P.REJECTED, f"timing: {per_call:.2f} own Triton launches per "
                                f"call while timed, {self.min_own} in every gate call "
                                "(work skipped when timed: caching or a shortcut)")
            checks.append(f"timing: {per_call:.2f} own Triton launches per call")
        # 4. Work finishing outside the timed stream (child-reported wall vs events).
        if self.device == "cuda":
            noop_gap = float(reply.get("noop_wall_ms", 0.0)) - float(reply.get("noop_event_ms", 0.0))
            wall_med = _median(walls)
            excess = wall_med - med - max(0.0, noop_gap)
            h["wall_median_ms"] = wall_med
            if excess > SIDE_STREAM_MIN_MS and excess > SIDE_STREAM_FRACTION * wall_med:
                raise Rejection(P.REJECTED, f"timing: host wall time per call {wall_med:.4f} ms "
                                f"against event time {med:.4f} ms: work completes after the "
                                "timed stream's end event (side stream not joined?)")
        # 5. The supervisor's own clock: a back-to-back burst of calls.
        rtt = min(self._ping_ms() for _ in range(3))
        n = req.timing_reps
        t1 = time.monotonic()
        self.child.request({"cmd": "burst", "n": n}, phase="wall-clock burst")
        burst_ms = (time.monotonic() - t1) * 1e3
        per_call = max(0.0, burst_ms - rtt) / n
        h["supervisor_burst_ms_per_call"] = per_call
        if med < BURST_FACTOR * per_call - 0.005 and self.device != "cuda":
            h["warnings"].append(f"timing: median {med:.4f} ms below {BURST_FACTOR} x the "
                                 f"supervisor's {per_call:.4f} ms/call (CPU: not enforced)")
        elif med < BURST_FACTOR * per_call - 0.005:
            raise Rejection(P.REJECTED, f"timing: reported median {med:.4f} ms is below "
                            f"{BURST_FACTOR} x the {per_call:.4f} ms per call the supervisor's "
                            "clock measured over a back-to-back burst")
        checks.append(f"timing: median {med:.4f} ms consistent with the supervisor's clock "
                      f"({per_call:.4f} ms/call back-to-back)")
        # 6. CUPTI: the kernels' own GPU time per call, and kernels per call.
        if self.trace_path:
            self._check_cupti_timing(med)
        self.result["candidate"] = P.timing_stats(times)

    def _ping_ms(self):
        t = time.monotonic()
        self.child.request({"cmd": "ping"}, timeout=30, phase="ping")
        return (time.monotonic() - t) * 1e3

    def _check_cupti_timing(self, med):
        h = self.result["harness"]
        trace = K.read_trace(self.trace_path)
        if trace is None:
            h["warnings"].append("CUPTI trace file missing after timing")
            return
        an = K.analyze_timing(trace, self.own_names, self.req.timing_reps)
        if an is None or an["calls"] < self.req.timing_reps:
            h["warnings"].append("CUPTI trace does not cover the timed calls; "
                                 "cross-check skipped")
            return
        span_med = _median(an["span_ms"])
        h["cupti_span"] = P.timing_stats(an["span_ms"])
        h["cupti_busy"] = P.timing_stats(an["busy_ms"])
        if med < CUPTI_FACTOR * span_med - CUPTI_SLACK_MS:
            raise Rejection(P.REJECTED, f"timing: events report {med:.4f} ms per call but the "
                            f"candidate's kernels span {span_med:.4f} ms on the GPU (CUPTI)")
        gmin = getattr(self, "gate_own_min_cupti", None)
        if gmin and min(an["own"]) < gmin:
            raise Rejection(P.REJECTED, f"timing: a timed call launched {min(an['own'])} own "
                            f"kernels, every gate call at least {gmin} (CUPTI)")
        gbusy = getattr(self, "gate_own_busy_cupti", None)
        tbusy = _median(an["own_busy_ms"])
        if gbusy and tbusy < CUPTI_BUSY_FACTOR * gbusy:
            raise Rejection(P.REJECTED, f"timing: the candidate's own kernels ran {tbusy:.4f} ms "
                            f"per timed call against {gbusy:.4f} ms per gate call (CUPTI): "
                            "less work when timed (caching or a shortcut)")
        h["checks"].append(f"CUPTI: timed calls span {span_med:.4f} ms on the GPU, "
                           f"events {med:.4f} ms")

    # -- profile mode --------------------------------------------------------------------
    def run_profile(self):
        req = self.req
        t_start = time.monotonic()
        torch.set_grad_enabled(False)
        res = {"ok": False, "verdict": "", "reason": "", "nvtx_range": NVTX_RANGE,
               "profile_iters": req.profile_iters, "kernels_launched": [], "gpu_name": "",
               "log": ""}
        try:
            self.spawn_child()
            self.load_reference()
            res["gpu_name"] = self.result["gpu_name"]
            if req.signature:
                try:
                    res["op_signature"] = self.signature()
                except Exception as e:  # noqa: BLE001
                    self.log.add(f"op signature not recorded: {e!r}")
            self.start_child()
            inputs = self.timing_inputs()
            in_field = self.inputs_field(inputs, "profile")
            reply = self.child.request({"cmd": "profile", **in_field,
                                        "iters": req.profile_iters, "range": NVTX_RANGE,
                                        "warmup_iters": req.profile_warmup_iters},
                                       phase="profile")
            self.release_inputs(in_field)
            res["kernels_launched"] = [str(n) for n in reply.get("launch_names") or []][:100]
            res["ok"] = True
        except ChildFailure as f:
            res["verdict"], res["reason"] = f.verdict, f.reason
        except Exception as e:  # noqa: BLE001
            self.log.add("profile error:\n" + traceback.format_exc())
            res["verdict"], res["reason"] = P.INFRA_ERROR, f"{type(e).__name__}: {e}"
        r = self.finish(t_start)
        res["log"] = r["log"]
        return res
