"""Mode `measure` and mode `profile`: the trusted supervisor's side.

The supervisor (this process) never imports candidate code. It loads the reference,
draws input seeds from os.urandom, computes reference outputs, times eager and
torch.compile, then drives one candidate's process (sandbox.Child) through the gate and
the timing, and decides the verdict from what it computed itself plus cross-checks of
what the process reports. docs/harness.md has the full list of checks.

A Supervisor serves one request. What outlives it lives in its Env: the job's trial set
(trials.TrialCache: the reference, trial inputs and reference outputs kept on the GPU
between a job's candidates), the warm candidate processes (pool.ChildPool), the
prepared ones (a `prepare` request started the candidate's process, imported and built
it and compiled its kernels before the GPU was taken). The one-shot harness makes a
private Env per run; the server (server.py) shares one across requests. Mode `profile`
is profile_mode.ProfileMixin. Four more mixins hold the rest of the Supervisor: transfer.TransferMixin (inputs and outputs across the
process boundary), timing_checks.TimingChecksMixin (the timing's cross-checks),
own_work_checks.OwnWorkChecksMixin (the own-kernel rule's checks of each gate call) and
prepare.PrepareMixin (what a measurement does before it takes the GPU, and the compile
dry run).
"""

import hashlib
import json
import math
import os
import re
import shutil
import sys
import time
import traceback

import torch

from kagent_harness import __version__
from kagent_harness import build_cache, compile_ahead
from kagent_harness import kernels as K
from kagent_harness import loader
from kagent_harness import protocol as P
from kagent_harness.compare import compare, output_spec, tolerances
from kagent_harness.pool import ChildPool, ChildSpec
from kagent_harness.sandbox import ChildFailure
from kagent_harness.timing import l2_flush_bytes, time_callable
from kagent_harness.own_work_checks import OwnWorkChecksMixin
from kagent_harness.prepare import DryRunRoom, PrepareMixin
from kagent_harness.profile_mode import ProfileMixin
from kagent_harness.timing_checks import TimingChecksMixin, short_timing_reason
from kagent_harness.transfer import Rejection, TransferMixin
from kagent_harness.trials import TrialCache, nbytes, rms

# Deadlines of the gate's calls (the timing phase's are in timing_checks): a gate call
# after the first may take CALL_FACTOR x the candidate's slowest earlier call (the first
# one excluded: it may compile) plus CALL_MIN_S; the request's call_timeout_s and
# timeout_s stay the outer bounds.
CALL_FACTOR = 20.0
CALL_MIN_S = 5.0
# A trial is large when its inputs and reference outputs take 1/LARGE_TRIAL_DIVISOR of the
# device or more: then the blocks one trial freed go back to the driver before the next
# (Supervisor.release_between_trials).
LARGE_TRIAL_DIVISOR = 16
# Device memory for the CUDA contexts and kernels of the two processes of a gate call,
# beside their tensors (trial_floor).
CONTEXTS_BYTES = 1 << 30
# How long an OOM's judgment waits for the driver to take back a dead process's memory.
OTHERS_SETTLE_S = 2.0


def trial_floor(in_bytes, out_bytes, shared):
    """(supervisor, candidate's process): the least device memory, in bytes, one gate trial
    holds at once in each process, whatever the reference and the candidate compute
    besides, for `in_bytes` of inputs and `out_bytes` of outputs (`shared`: the inputs and
    outputs cross in shared GPU memory). The supervisor: the trial's inputs, the
    reference's private copy of them, its outputs and the copy it keeps (on odd trials the
    reference runs while the candidate works), and with shared memory the candidate's
    copy of the inputs and the receive buffers. The candidate's process: its inputs, its
    copy of them (the mutation check), the previous call's outputs (the aliasing check)
    and this call's."""
    trial = in_bytes + out_bytes
    return (3 if shared else 2) * trial, 2 * trial


_OOM_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_OOM_TRIED = re.compile(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)")
_OOM_IN_USE = re.compile(r"this process has ([0-9.]+) (B|KiB|MiB|GiB|TiB) memory in use")


def _oom_asked_bytes(reason):
    """Bytes a process asked for by torch's OutOfMemoryError text: its memory in use
    plus the allocation it tried (0 for what the text does not say)."""
    total = 0
    for pattern in (_OOM_TRIED, _OOM_IN_USE):
        m = pattern.search(reason or "")
        if m:
            total += int(float(m.group(1)) * _OOM_UNITS[m.group(2)])
    return total


def _gib(n):
    return f"{n / 2**30:.1f} GiB"


def _sysrand_seed(rng):
    return rng.randrange(1, 2**62)


def resolve_device(req):
    if req.device == "cuda" and not torch.cuda.is_available():
        raise P.RequestError("device 'cuda' requested but no CUDA device is visible")
    if req.device:
        return req.device
    return "cuda" if torch.cuda.is_available() else "cpu"


def _source_key(source):
    """A kernel source's key in JobTrials.own_busy_ms."""
    return hashlib.sha256(source.encode("utf-8", "replace")).hexdigest()


def _gpu_index(req):
    cvd = req.cuda_visible_devices if req.cuda_visible_devices is not None \
        else os.environ.get("CUDA_VISIBLE_DEVICES", "")
    first = cvd.split(",")[0].strip() if cvd else ""
    return int(first) if first.isdigit() else 0


# The longest a baseline waits for torch.compile's compilation ahead (compile_ahead.py)
# once its kernel is gated and timed; KernelBench-sized problems compile in 1-10 s.
AHEAD_WAIT_S = 300.0


class Env:
    """What supervisors of one process share: the trial cache, the candidate processes
    (warm pool, active ones), the private CUDA memory pool for IPC and the build cache.
    Thread-safe."""

    def __init__(self, device, cache, pool, log, dry_runs=None, builds=None):
        self.device = device
        self.cache = cache
        self.pool = pool
        self.log = log
        # The compile dry runs' device memory (prepare.DryRunRoom); default: no limit.
        self.dry_runs = dry_runs or DryRunRoom(0)
        # Built extensions by source (build_cache.BuildCache); None: every process builds.
        self.builds = builds

    @staticmethod
    def one_shot(device, log):
        """A run of its own: nothing kept, no warm processes."""
        return Env(device, TrialCache(0, log),
                   ChildPool(ChildSpec(device), 0, log, reap_async=False), log)

    def quiet(self, keep=None):
        return self.pool.quiet(keep)


class Supervisor(TransferMixin, TimingChecksMixin, OwnWorkChecksMixin, PrepareMixin,
                 ProfileMixin):
    def __init__(self, req, log, env=None, job_id=None, prepared=None):
        self.req = req
        self.log = log
        self.device = resolve_device(req)
        req.apply_floors(self.device, log)
        self.env = env or Env.one_shot(self.device, log)
        self.one_shot = env is None   # its Env ends with this request (finish)
        self.job_id = job_id
        self.prepared = prepared
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
        if env is None:
            age = P.process_age_ms()
            if age is not None:
                self.phases.add("process start and imports", age)
        self.job = None
        self.workdir = None
        self.rk_child = None   # the starting kernel's process, taken early
        self.rk_ready = None   # its "ready" reply when it was prepared
        self.ahead = None      # torch.compile compiling beside the gate (compile_ahead.py)
        self.child = None
        self.trace_path = None
        self.triton_hook = False
        self.call_s = []       # the supervisor's clock around each gate call

    # -- reference ---------------------------------------------------------------------
    def load_reference(self):
        """The job's trial set (kept by the Env's cache, or made now) with its reference
        built."""
        if self.job is None:
            self.job, state = self.env.cache.get(self.req, self.job_id, self.device, self.log)
            self.result["harness"]["trial_set"] = state
        self.job.load()
        self.model = self.job.model
        self.init_seed = self.job.init_seed
        self.init_inputs = self.job.init_inputs
        if self.device == "cuda":
            self.result["gpu_name"] = torch.cuda.get_device_name()
            self.result["gpu_index"] = _gpu_index(self.req)
        else:
            self.result["gpu_name"] = "cpu"

    def ref(self, inputs):
        return self.job.ref(inputs)

    def timing_inputs(self):
        """A private copy of the job's timing inputs."""
        return self.job.timing_inputs_copy()

    # -- modes ---------------------------------------------------------------------------
    def signature(self):
        """The reference's op signature on the timing inputs, recorded once per job."""
        if self.job.signature is None:
            from kagent_harness.signature import record
            self.job.signature = record(self.model, self.timing_inputs())
        return self.job.signature

    def run_measure(self):
        req = self.req
        t_start = time.monotonic()
        torch.set_grad_enabled(False)
        try:
            if req.kernel_source and req.reference_kernel_source and req.time_candidate:
                # The starting kernel's process, started now too (or prepared); used after
                # the candidate's.
                if self.prepared is not None and self.prepared.rk is not None and \
                        self.prepared.rk_source == req.reference_kernel_source:
                    self.rk_child, self.rk_ready = self.prepared.rk
                    self.prepared.rk = None
                else:
                    self.rk_child = self.take_child(trace=False)
            if req.kernel_source and self.prepared is None:
                self.use_child(self.take_child())
        except Exception as e:  # noqa: BLE001 - cannot start a process: the harness's fault
            self.log.add("could not start a candidate process:\n" + traceback.format_exc())
            self.result["correctness"]["reason"] = f"harness error: {type(e).__name__}: {e}"
            return self.finish(t_start)
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
                    with self.env.quiet():
                        self.time_baselines(ahead=bool(req.kernel_source) and
                                            compile_ahead.wanted(self.device))
            if not req.kernel_source:
                self.result["verdict"] = P.CORRECT if (self.result["eager"] or
                                                       self.result["compiled"]) else P.INFRA_ERROR
                if self.result["verdict"] == P.INFRA_ERROR:
                    self.result["correctness"]["reason"] = "no kernel_source and no baselines"
                self.result["correctness"]["reason"] = self.result["correctness"]["reason"] or \
                    "no candidate: baselines only"
                return self.finish(t_start)
            try:
                self.run_candidate()
            finally:
                if self.ahead is not None:
                    # torch.compile was compiled while the candidate was gated and timed:
                    # its baseline is timed now, whatever the candidate's verdict.
                    self.finish_compiled_baseline()
            if req.reference_kernel_source and req.time_candidate:
                # The candidate's process is done; it has ended (killed, every process of
                # its sandbox exited) before the starting kernel runs, so nothing it left
                # running (a thread or a kernel keeping the GPU busy) can slow the start
                # and inflate the speedup over it.
                with self.phases("the candidate's process ended"):
                    ended = self.child.end()
                if ended:
                    with self.phases("starting kernel"):
                        self.time_reference_kernel()
                else:
                    self.result["harness"]["warnings"].append(
                        "the starting kernel could not be timed: the candidate's process "
                        "did not end within 10 s of SIGKILL")
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
            self.result["harness"]["supervisor_error"] = f"{type(e).__name__}: {e}"
            if isinstance(e, torch.cuda.OutOfMemoryError):
                # Out of device memory in the supervisor's own work (the trials, the
                # reference, the baselines): the other jobs' kept trials go, so that the
                # worker's retry of this INFRA_ERROR has room.
                e = None
                self._shed_idle_trials("out of device memory, for a retry")
        return self.finish(t_start)

    def finish(self, t_start):
        t_finish = time.monotonic()
        extra = ""
        if self.child is not None:
            self.child.kill()  # retire() reaps it off this request's time
            extra = self.child.stderr_tail()
            self.result["harness"]["child_peak_rss_bytes"] = self.child.peak_rss
            self.env.pool.retire(self.child)
        if self.rk_child is not None:
            self.env.pool.retire(self.rk_child)
            self.rk_child = None
        if self.prepared is not None:
            # Prepared processes this request did not adopt (it failed before the gate,
            # or timed no starting kernel) end with it too.
            if self.prepared.child is not self.child:
                self.env.pool.retire(self.prepared.child)
            if self.prepared.rk is not None:
                self.env.pool.retire(self.prepared.rk[0])
                self.prepared.rk = None
        if self.job is not None:
            self.env.cache.done(self.job)
            self.job = None
        if self.one_shot:
            # Whatever process a failure path left active goes with its workdir.
            self.env.pool.close()
        self.release_device_memory()
        now = time.monotonic()
        if self.device == "cuda":
            self.result["gpu_seconds"] = now - t_start
        self.phases.add("finish: processes retired, memory released", (now - t_finish) * 1e3)
        if self.req.mode == "measure":
            # Against the worker's held seconds: what the named phases leave out is here.
            self.phases.add("supervisor: the whole request", (now - t_start) * 1e3)
        self.result["harness"]["phases_ms"] = self.phases.as_dict()
        if self.req.mode == "measure":
            self.log.add(f"verdict {self.result['verdict']}: "
                         f"{self.result['correctness']['reason']}")
        self.result["log"] = self.log.tail(extra)
        return self.result

    def release_between_trials(self):
        """Between two gate trials of a large problem (see LARGE_TRIAL_DIVISOR), and
        between a trial's reference and the candidate's call: the blocks torch's caching
        allocator keeps (the previous trial's tensors; the reference's private copy of the
        inputs and its raw outputs) go back to the driver. The receive buffers (CUDA VMM,
        outside torch's allocator) and the candidate's process cannot use blocks this
        process keeps cached."""
        if self.device != "cuda" or not self.job.trial_bytes:
            return
        total = torch.cuda.mem_get_info()[1]
        if self.job.trial_bytes * LARGE_TRIAL_DIVISOR >= total and \
                torch.cuda.memory_reserved() > torch.cuda.memory_allocated():
            torch.cuda.empty_cache()

    def check_working_set(self, inputs, ref_out):
        """Rejection (INFRA_ERROR, named the harness's limit) when one gate trial cannot
        fit the device whatever the candidate does (trial_floor), so the measurement goes
        to a larger device instead of charging the candidate with an OOM."""
        if self.device != "cuda":
            return
        sup, child = trial_floor(nbytes(inputs), nbytes(ref_out),
                                 getattr(self, "use_ipc", False))
        free, total = torch.cuda.mem_get_info()
        if sup + child + CONTEXTS_BYTES > total:
            raise Rejection(P.INFRA_ERROR, self._too_large(sup, child, total, inputs, ref_out))
        # The candidate's process needs its floor beside what this process holds: other
        # jobs' kept trials (up to a quarter of the device) go first when the device could
        # not spare it otherwise (session 36's H100 run: 6 GiB activations at KernelBench's
        # sizes failed all three attempts with the supervisor holding 46-59 GiB).
        free += torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        if free < child + CONTEXTS_BYTES:
            self._shed_idle_trials(f"the candidate's process needs {_gib(child)} for this "
                                   f"trial and {_gib(free)} are free")

    def _too_large(self, sup, child, total, inputs, ref_out):
        return (f"the harness's limit, not the candidate's: a gate trial of this problem "
                f"({_gib(nbytes(inputs))} of inputs, {_gib(nbytes(ref_out))} of outputs) "
                f"needs at least {_gib(sup)} in the supervisor and {_gib(child)} in the "
                f"candidate's process, and the device has {_gib(total)}")

    def gate_oom(self, failure, inputs, ref_out):
        """A gate call's ChildFailure, an OOM judged: the harness's limit (INFRA_ERROR) when
        what this process held when it came (torch's reserved blocks, the shared buffers)
        and what other processes held (other candidates' processes preparing beside the
        slot) left the candidate's process less than its floor (trial_floor) and the
        contexts, else the candidate's OOM with those figures added to its reason."""
        if failure.verdict != P.OOM or self.device != "cuda" or not inputs or not ref_out:
            return failure
        shared = getattr(self, "use_ipc", False)
        _, child = trial_floor(nbytes(inputs), nbytes(ref_out), shared)
        held = torch.cuda.memory_reserved()
        if shared:
            held += nbytes(inputs) + nbytes(ref_out)
        others, total = self._others_bytes(held)
        # What the candidate's process asked for when it failed, by torch's message (in
        # use + the allocation tried), never less than its floor: a message it forged
        # can only turn its OOM into an INFRA_ERROR, which fails the job as well.
        asked = max(child, _oom_asked_bytes(failure.reason))
        figures = (f"the supervisor held {_gib(held)} and other processes {_gib(others)} of "
                   f"the device's {_gib(total)}; the candidate's process needs at least "
                   f"{_gib(child)} for this trial" +
                   (f" and asked for {_gib(asked)}" if asked > child else ""))
        # The harness's limit when the candidate's floor did not fit beside what was held,
        # or when what it asked for would have fit but for the other processes (without
        # them it fits, with them it does not).
        need = held + asked + CONTEXTS_BYTES
        if held + others + child + CONTEXTS_BYTES > total or \
                (others > 0 and need <= total < need + others):
            # The worker measures it again: other jobs' kept trials go now, so that the
            # retry has the room this attempt lacked.
            self._shed_idle_trials("the candidate's process ran out of device memory beside "
                                   "the harness")
            return ChildFailure(P.INFRA_ERROR, f"the harness's limit, not the candidate's: "
                                f"{figures} ({failure.reason})")
        return ChildFailure(P.OOM, f"{failure.reason} [{figures}]")

    def _shed_idle_trials(self, why):
        """Drops the kept trials of every job no request is using (TrialCache.shed_idle,
        which gives the blocks back to the driver) and logs why."""
        env = getattr(self, "env", None)
        if env is None:
            return
        freed = env.cache.shed_idle()
        self.log.add(f"{why}: dropped {freed >> 20} MiB of idle jobs' kept trials")

    def _others_bytes(self, held):
        """(bytes of the device held by processes other than this one and the candidate's,
        the device's total). The candidate's process is ended first (its OOM ends the
        measurement) and the driver is given up to OTHERS_SETTLE_S to take its memory
        back; what is still in use beyond `held` is the other processes' (on the H100
        with 16 tasks in flight, prepared processes held 17 GiB beside an OOM)."""
        c = getattr(self, "child", None)
        if c is not None:
            c.kill()
            try:
                c.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - the figure is then an upper bound
                pass
        free, total = torch.cuda.mem_get_info()
        end = time.monotonic() + OTHERS_SETTLE_S
        while time.monotonic() < end:
            time.sleep(0.1)
            now = torch.cuda.mem_get_info()[0]
            if now == free:
                break
            free = now
        return max(0, total - free - held), total

    def release_device_memory(self):
        """Gives the device memory this request cached (its shared buffers, freed temporaries)
        back to the driver, so that the next candidate's process can have it; a server
        process would otherwise keep it reserved between requests."""
        self._ipc_keep = None
        if self.device == "cuda" and \
                torch.cuda.memory_reserved() - torch.cuda.memory_allocated() > (1 << 30):
            torch.cuda.empty_cache()

    # -- baselines ----------------------------------------------------------------------
    def time_baselines(self, ahead=False):
        """Times eager and torch.compile on the timing inputs. With `ahead` (a
        request that gates and times a candidate next, compile_ahead.wanted), a
        torch.compile not yet compiled for this job is compiled on a thread while that
        happens (compile_ahead.py) and timed by finish_compiled_baseline afterwards;
        self.ahead is then set."""
        req = self.req
        inputs = self.timing_inputs()
        if "eager" in req.baselines:
            self._time_baseline(lambda: self.model(*inputs), "eager")
        if "compiled" in req.baselines:
            if ahead and self.job.compiled is None:
                try:
                    self.ahead = compile_ahead.CompileAhead(self.model, inputs, self.device)
                except Exception as e:  # noqa: BLE001 - no stand-ins: compiled here
                    self.log.add(f"torch.compile not compiled ahead ({type(e).__name__}: "
                                 f"{e}): compiled in the slot")
            if self.ahead is None:
                self._time_compiled(inputs)
        self._pytorch_best()

    def finish_compiled_baseline(self):
        """torch.compile's check and timing after its compilation ahead (time_baselines);
        what it costs the slot beyond that compilation is in the phases."""
        ahead, self.ahead = self.ahead, None
        with self.phases("baselines"):
            with self.phases("baselines: torch.compile's compilation ahead, waited for"):
                ended = ahead.join(timeout=AHEAD_WAIT_S)
            if not ended:
                # Still compiling (a compilation this long would have held the slot as
                # long without the thread): no torch.compile baseline rather than a
                # second compilation racing the first.
                self.log.add(f"torch.compile's compilation ahead did not end within "
                             f"{AHEAD_WAIT_S:.0f} s: no torch.compile baseline")
                self.result["harness"]["warnings"].append(
                    f"torch.compile failed: its compilation did not end within "
                    f"{AHEAD_WAIT_S:.0f} s")
                return
            self.phases.add("baselines: torch.compile's compilation ahead (beside the gate)",
                            ahead.seconds * 1e3)
            if ahead.error:
                self.log.add(f"torch.compile's compilation ahead failed ({ahead.error}): "
                             "compiled on its first call")
            if getattr(self, "cancelled", False):
                return
            with self.env.quiet():
                self._time_compiled(self.timing_inputs(), ahead=not ahead.error)
        self._pytorch_best()

    def _time_baseline(self, fn, label):
        req = self.req
        flush = l2_flush_bytes(self.device) if req.flush_l2 else 0
        with self.phases(f"baselines: {label} first call"):
            fn()  # outside the protocol (compilation for torch.compile)
        with self.phases(f"baselines: {label} timing"):
            res = time_callable(fn, self.device, req.timing_reps, req.warmup_iters,
                                req.warmup_ms, flush, budget_ms=req.timing_budget_ms)
        self.result[label] = P.timing_stats(res["times_ms"])
        self.result["harness"].setdefault("host_issue_median_ms", {})[label] = \
            P.median(res["issue_ms"])
        self.log.add(f"{label}: median {self.result[label]['median_ms']:.4f} ms over "
                     f"{len(res['times_ms'])} reps ({res['warmup_calls']} warm-up calls, "
                     f"host issue {P.median(res['issue_ms']):.4f} ms hidden behind a "
                     f"{res['spin_us']:.0f} us spin)")
        if req.do_bench_check and self.device == "cuda":
            # An independent reference measurement (Triton's own protocol) for audits.
            try:
                import triton.testing
                ms = triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")
                self.result["harness"].setdefault("do_bench_median_ms", {})[label] = float(ms)
            except Exception as e:  # noqa: BLE001
                self.result["harness"]["warnings"].append(f"do_bench failed: {e}")

    def _time_compiled(self, inputs, ahead=False):
        req = self.req
        try:
            with self.phases("baselines: compiled compilation and check"):
                compiled = self.job.compiled
                if compiled is None:
                    # Through the compilation made ahead when there is one; else as always.
                    compiled = compile_ahead.compiled_module(self.model) if ahead else \
                        torch.compile(self.model, mode="default", dynamic=False)
                ref_out = self.ref([x.clone() if isinstance(x, torch.Tensor) else x
                                    for x in inputs])
                before = compile_ahead.compiles()
                got = [o.detach() for o in loader.flatten_outputs(compiled(*inputs))]
                self.job.compiled = compiled
            if ahead and compile_ahead.compiles() > before:
                self.log.add("torch.compile compiled again on its first real call: the "
                             "compilation ahead did not serve it")
            atol, rtol = tolerances(ref_out, req.atol, req.rtol)
            c = compare(ref_out, got, atol, rtol)
            if not c["ok"]:
                self.result["harness"]["warnings"].append(
                    "torch.compile output differs from eager: " + c["reason"])
            self._time_baseline(lambda: compiled(*inputs), "compiled")
        except Exception as e:  # noqa: BLE001
            self.log.add(f"torch.compile baseline failed: {type(e).__name__}: {e}")
            self.result["harness"]["warnings"].append(f"torch.compile failed: {e}")
            self.result["compiled"] = None

    def _pytorch_best(self):
        # The job's fastest PyTorch path so far, for the short protocol of hopeless
        # candidates (timing_checks.py).
        medians = [self.result[k]["median_ms"] for k in ("eager", "compiled")
                   if self.result.get(k)]
        if medians:
            self.job.pytorch_best_ms = min(medians)

    # -- the candidate's process --------------------------------------------------------
    def take_child(self, trace=True):
        """A started candidate process for this request (warm from the pool when one
        fits), configured with the request's limits."""
        req = self.req
        spec = ChildSpec.for_request(req, self.device, trace=trace)
        with self.phases("candidate process spawn"):
            return self.env.pool.take(spec, self.log, req.timeout_s, req.memory_limit_mb)

    def use_child(self, child):
        self.child = child
        self.workdir = child.workdir
        info = getattr(child, "sandbox_info", None)
        if info is not None and "sandbox" not in self.result["harness"]:
            # What isolation the candidate had; best-effort gaps are warnings too.
            self.result["harness"]["sandbox"] = info
            for m in info["missing"]:
                self.result["harness"]["warnings"].append(f"sandbox: missing {m}")
        self.trace_path = child.trace_path
        if self.trace_path:
            self.log.add(f"CUPTI tracer: {os.environ.get('KAGENT_CUPTI_LIB')}")

    def write_candidate(self, child, source, language, variants=None):
        """Writes the candidate (or a screen's variants) and the job's init inputs and
        reference state into the process's private directory, then tells it to load."""
        cand_path = os.path.join(child.workdir, "candidate_source.py")
        with open(cand_path, "w", encoding="utf-8") as f:
            f.write(source)
        if variants is None:
            self._use_build_cache(child, source, language)
        init_path, state_path = self.job.child_files()
        local_init = os.path.join(child.workdir, "init_inputs.pt")
        shutil.copyfile(init_path, local_init)
        local_state = None
        if state_path:
            local_state = os.path.join(child.workdir, "ref_state.pt")
            shutil.copyfile(state_path, local_state)
        cfg = {"device": self.device, "module_name": "kagent_candidate",
               "candidate_path": cand_path, "init_inputs_path": local_init,
               "init_seed": self.job.init_seed, "ref_state_path": local_state,
               "language": language}
        if variants is not None:
            paths = []
            for i, src in enumerate(variants):
                p = os.path.join(child.workdir, f"variant_{i}.py")
                with open(p, "w", encoding="utf-8") as f:
                    f.write(src)
                paths.append(p)
            cfg["variant_paths"] = paths
        with open(os.path.join(child.workdir, "child_config.json"), "w") as f:
            json.dump(cfg, f)
        child.load()

    def _use_build_cache(self, child, source, language):
        """Copies what an earlier process of this source built into the process's workdir
        and, once it is ready, keeps what it built (build_cache.py)."""
        builds = self.env.builds
        if builds is None or "load_inline" not in source:
            return  # the child's prebuilt loader is only installed for such sources too
        key = build_cache.source_key(source, language, self.device)
        t = time.monotonic()
        try:
            seeded = builds.seed(key, child.workdir)
        except Exception as e:  # noqa: BLE001 - the cache is an optimization only
            self.log.add(f"build cache: not seeded ({type(e).__name__}: {e})")
            seeded = False
        if seeded:
            self.log.add(f"build cache: the modules an earlier process of this source built "
                         f"were given to this one ({time.monotonic() - t:.2f} s)")

        def keep(ready):
            if ready.get("prebuilt"):
                self.log.add(f"build cache: the process loaded {ready['prebuilt']} prebuilt "
                             "module(s) instead of building them")
            if seeded or not ready.get("built"):
                return
            try:
                kept = builds.store(key, child.workdir)
            except Exception as e:  # noqa: BLE001 - the cache is an optimization only
                self.log.add(f"build cache: not stored ({type(e).__name__}: {e})")
                return
            if kept:
                self.log.add(f"build cache: kept the {kept} module(s) this process built "
                             "for later processes of this source")
        child.on_ready = keep

    def start_child(self, source=None, language=None, what="candidate", ready=None):
        """Hands the candidate (`source`, default the request's kernel) to the current
        process and waits until it has imported and built ModelNew; a prepared process
        (`ready`: its ready reply) did that already. Then probes CUDA IPC."""
        req = self.req
        source = req.kernel_source if source is None else source
        language = req.language if language is None else language
        if self.prepared is not None and what == "candidate":
            p = self.prepared
            self.use_child(p.child)
            ready = p.ready
            self.result["harness"]["prepared"] = True
            self.log.add(f"prepared candidate process {self.child.proc.pid} used "
                         f"(made {time.monotonic() - p.created:.1f} s ago)")
        if ready is not None:
            self.child.log = self.log
            self.child.deadline = time.monotonic() + req.timeout_s
        else:
            if self.child is None:
                self.use_child(self.take_child())
            self.write_candidate(self.child, source, language)
            with self.phases(f"{what} import and construction"):
                ready = self.child.checked(
                    self.child.recv(phase=f"{what} import and construction"),
                    f"{what} import and construction")
        self.log.add(f"candidate ready (weights from {ready.get('weights')}, "
                     f"triton launch hook {'on' if ready.get('triton_hook') else 'off'})")
        self.triton_hook = bool(ready.get("triton_hook")) and language == "triton"
        if "recorder_warm_up_s" in ready or "recorder_warm_up_error" in ready:
            self.log.add("the op recorder warmed up when the process started: " + (
                f"{ready['recorder_warm_up_s']} s" if "recorder_warm_up_s" in ready
                else f"failed ({ready['recorder_warm_up_error']})"))
        with self.phases(f"{what} CUDA IPC probe"):
            self._probe_ipc()

    # -- the gate -------------------------------------------------------------------------
    def _wide_against_float64(self, job, inputs, ref_out, got, atol, rtol, c, what):
        """A wide trial the candidate failed against the fp32 reference: the wide
        distributions (x10 especially) can make the reference's own rounding larger than
        the tolerance (a softmax over scores 100x larger), so the candidate passes when
        it is within the same tolerance of the reference computed in float64, the true
        answer the fp32 reference approximates; the result's warnings say so. Returns
        the comparison that decides (the fp32 one when float64 cannot decide)."""
        ref64 = job.ref64(inputs)
        if ref64 is None or len(ref64) != len(ref_out):
            return c
        cast = [r64.to(r.dtype) if isinstance(r64, torch.Tensor) and
                isinstance(r, torch.Tensor) and r.is_floating_point() else r64
                for r64, r in zip(ref64, ref_out)]
        c64 = compare(cast, got, atol, rtol)
        own = compare(cast, ref_out, atol, rtol)
        del ref64, cast
        self.log.add(f"{what}: against the float64 reference: "
                     f"{'within' if c64['ok'] else 'outside'} the tolerance "
                     f"(max abs error {c64['max_abs_error']:.3g}; the fp32 reference's "
                     f"own {own['max_abs_error']:.3g})")
        if not c64["ok"]:
            return c
        self.result["harness"]["warnings"].append(
            f"{what}: outside the tolerance of the fp32 reference ({c['reason']}) but "
            f"within it of the float64 reference (max abs error {c64['max_abs_error']:.3g}; "
            f"the fp32 reference's own {own['max_abs_error']:.3g})")
        return c64

    def call_limit(self, first):
        """Seconds one gate call may take: call_timeout_s for the first (it may compile);
        after it, CALL_FACTOR x the slowest earlier call (the first excluded once there
        are others) + CALL_MIN_S, within call_timeout_s."""
        req = self.req
        if first or not self.call_s:
            return req.call_timeout_s, ""
        base = max(self.call_s[1:]) if len(self.call_s) > 1 else self.call_s[0]
        limit = min(req.call_timeout_s, CALL_MIN_S + CALL_FACTOR * base)
        return limit, f" (limit {limit:.1f} s: {CALL_FACTOR:g}x the slowest earlier call, " \
                      f"{base:.3f} s, + {CALL_MIN_S:g} s)"

    def run_candidate(self):
        req = self.req
        self.own_names = K.own_kernel_names(req.kernel_source)
        self.result["harness"]["own_kernel_names"] = self.own_names
        if not self.own_names:
            self.result["harness"]["warnings"].append(
                "no @triton.jit function or __global__ kernel found in the candidate source")
        self.start_child()
        self._own_work_setup()
        corr = self.result["correctness"]
        checks = self.result["harness"]["checks"]
        job = self.job
        prev_trial = None  # the last trial passed (its reference made again if needed)
        poison = None
        min_own = None
        launch_names = set()
        profiled = False
        trials_run = 0
        atol = rtol = None
        timing_ref = None
        atol_timing = None
        corr_atol_eff = 0.0
        ph = self.phases
        t_gate = time.monotonic()
        inputs = ref_out = got = None
        for k, trial in enumerate(job.gate_plan()):
            kind, label = trial.kind, trial.label
            if kind == "wide" and trial.skipped:
                continue
            # The previous trial's tensors die before this one's are made (those the job
            # keeps live on in its trial set); on a large problem their blocks go back to
            # the driver, for this trial's shared buffers and the candidate's process.
            inputs = ref_out = got = None
            self.release_between_trials()
            with ph("gate: inputs"):
                inputs = job.inputs_of(trial)
            out_path = os.path.join(self.workdir, f"out_{k}.pt")
            with ph("gate: inputs to the candidate"):
                in_field = self.inputs_field(inputs, k)
            ref_first = kind not in ("seeded", "fresh") or k % 2 == 0
            ref_out = None
            if ref_first:
                with ph("gate: reference"):
                    ref_out = job.ref_of(trial, inputs)
                if kind == "wide" and trial.skipped:
                    self.release_inputs(in_field)
                    continue
                # Its private copy of the inputs and its raw outputs are free now: on a
                # large problem their blocks go back before the receive buffers and the
                # candidate's process need the room (session 36's H100 run: 6 GiB
                # activations failed with the supervisor holding 10-20 GiB over its floor).
                self.release_between_trials()
            if poison is None and ref_out is not None:
                poison = output_spec(ref_out)
                self.check_working_set(inputs, ref_out)
            bufs, out_field = self.out_field(poison)
            msg = {"cmd": "call", **in_field, **out_field, "out": out_path,
                   "poison": poison or [],
                   "reuse": k % 2 == 1,
                   "profile_kernels": (self.device == "cuda" and not self.trace_path
                                       and not profiled)}
            profiled = profiled or msg["profile_kernels"]
            limit, why = self.call_limit(first=trials_run == 0)
            t_call = time.monotonic()
            self.child.send(msg)
            if not ref_first:
                with ph("gate: reference"):
                    ref_out = job.ref_of(trial, inputs)
            try:
                reply = self.child.checked(self.child.recv(timeout=limit,
                                                           phase=f"gate trial {label}{why}"),
                                           f"gate trial {label}")
            except ChildFailure as f:
                raise self.gate_oom(f, inputs, ref_out)
            call_s = time.monotonic() - t_call
            self.call_s.append(call_s)
            ph.add("gate: candidate calls (incl. handing outputs back)", call_s * 1e3)
            P.add_child_steps(ph, reply.get("steps_ms"))
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
            t_atol = atol * max(1.0, job.rms_of(trial, ref_out))
            corr_atol_eff = max(corr_atol_eff, t_atol)
            with ph("gate: compare"):
                c = compare(ref_out, got, t_atol, rtol)
            corr["max_abs_error"] = max(corr["max_abs_error"], c["max_abs_error"])
            corr["max_rel_error"] = max(corr["max_rel_error"], c["max_rel_error"])
            if c["worst_index"] and (not c["ok"] or not corr["worst_index"]):
                corr["worst_index"] = c["worst_index"]
            what = f"trial {label} ({kind})"
            if not c["ok"] and kind == "wide":
                with ph("gate: the float64 reference"):
                    c = self._wide_against_float64(job, inputs, ref_out, got, t_atol, rtol,
                                                   c, what)
            if not c["ok"]:
                if prev_trial is not None and \
                        self._previous_answer(prev_trial, ref_out, got, t_atol, rtol):
                    raise Rejection(P.REJECTED, f"{what}: returned the previous call's answer "
                                    "although the inputs changed (caching by pointer or value)"
                                    + (" [same input buffers, new values]"
                                       if reply.get("reused_buffers") else ""))
                raise Rejection(P.INCORRECT, f"{what}: {c['reason']}")
            self._rule_checks(reply, what, job.ref_mutates, job.ref_aliases)
            if self.triton_hook:
                own = int(reply.get("own_launches", 0) or 0)
                min_own = own if min_own is None else min(min_own, own)
                launch_names.update(str(n) for n in (reply.get("launch_names") or [])[:100])
                if own == 0:
                    raise Rejection(P.REJECTED, f"{what}: no Triton kernel of the candidate ran "
                                    f"during forward ({reply.get('launches', 0)} Triton launches "
                                    "in all): the hot path is not the candidate's own kernels")
            self._own_work_checks(reply, what, inputs)
            if reply.get("profiler_kernels") is not None:
                names = [str(n) for n in reply["profiler_kernels"]][:200]
                self._check_own_names(names, what + " (torch.profiler)")
                launch_names.update(names)
                self._own_gpu_time(self._profiler_times(reply), what + " (torch.profiler)",
                                   self.gate_ops[-1])
            corr["trials_passed"] += 1
            prev_trial = trial
            if kind == "timing":
                timing_ref = ref_out
                atol_timing = t_atol
        inputs = ref_out = got = None
        self.release_between_trials()
        ph.add("gate", (time.monotonic() - t_gate) * 1e3)
        job.remember_input_spec()
        checks.append(f"gate: {trials_run} trials passed (atol={atol:g} x max(1, output RMS) "
                      f"<= {corr_atol_eff:g}, rtol={rtol:g}; one trial drawn for this "
                      "candidate alone)")
        self.result["harness"]["atol_effective_max"] = corr_atol_eff
        if self.trace_path:
            with ph("gate: CUPTI trace"):
                # Every call's kernels reach the trace file before it is read (a flush
                # takes milliseconds: a process that does not answer is stopped soon).
                self.child.request({"cmd": "flush"}, timeout=CALL_MIN_S,
                                   phase="flushing the CUPTI trace")
                launch_names |= self._check_cupti_gate()
        if getattr(self, "gate_own_busy_cupti", None):
            # For the short protocol of this source as a later request's starting kernel
            # (time_reference_kernel), whose process is not traced.
            job.own_busy_ms[_source_key(req.kernel_source)] = self.gate_own_busy_cupti
        self.result["kernels_launched"] = sorted(launch_names)
        self.min_own = min_own
        if req.time_candidate:
            short = self.short_protocol_if(self.timed_briefly(), "timing", "short_timing")
            with ph("timing"):
                with self.env.quiet(keep=self.child), short:
                    self.time_candidate(timing_ref, atol_timing, rtol)
        self.result["verdict"] = P.CORRECT
        corr["reason"] = ""

    def _previous_answer(self, prev_trial, ref_out, got, atol, rtol):
        """Whether wrong outputs `got` are the previous trial's answer (the reference's
        outputs there, made again from its seed unless the job keeps them: holding them
        through this trial would double the outputs' share of the device) and that answer
        differs from this trial's."""
        job = self.job
        prev_ref = job.ref_of(prev_trial, job.inputs_of(prev_trial))
        return compare(prev_ref, got, atol, rtol)["ok"] and \
            not compare(prev_ref, ref_out, atol, rtol)["ok"]

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

    # -- candidate timing (the cross-checks: timing_checks.TimingChecksMixin) -------
    def _time_in_child(self, out_path, phase, spec):
        """The timing protocol (timing.time_callable) run by the child on the inputs of
        its last call; the same request for the candidate and the starting kernel.
        Returns the reply and the receive buffers of the last call's outputs (see
        out_field; `spec` the expected outputs)."""
        req = self.req
        flush = l2_flush_bytes(self.device) if req.flush_l2 else 0
        bufs, out_field = self.out_field(spec)
        limit, why = self.timing_limit()
        reply = self.child.request({"cmd": "time", "reps": req.timing_reps,
                                    "warmup_iters": req.warmup_iters,
                                    "warmup_ms": req.warmup_ms, "flush_bytes": flush,
                                    "budget_ms": req.timing_budget_ms,
                                    "out": out_path, **out_field}, timeout=limit,
                                   phase=f"{phase} ({why})")
        return reply, bufs

    # -- the starting kernel -----------------------------------------------------------
    def time_reference_kernel(self):
        """Times the request's reference kernel (the job's starting kernel) with the same
        protocol as the candidate, in a process of its own, after checking its output on
        the timing inputs once. Failures become warnings: the candidate's verdict does
        not depend on the starting kernel."""
        req, h = self.req, self.result["harness"]
        saved = (self.child, self.workdir, self.trace_path, self.triton_hook,
                 getattr(self, "use_ipc", False), self.call_s, self.prepared)
        child, ready = self.rk_child, self.rk_ready
        self.rk_child = self.rk_ready = None
        self.prepared = None
        self.call_s = []
        try:
            if child is None:
                child = self.take_child(trace=False)
            self.use_child(child)
            self.trace_path = None
            self.start_child(source=req.reference_kernel_source,
                             language=req.reference_kernel_language, what="starting kernel:",
                             ready=ready)
            inputs = self.timing_inputs()
            ref_out = self.job.ref_of(self.job.timing_trial(), inputs)
            field = self.inputs_field(inputs, "reference_kernel")
            out_path = os.path.join(self.workdir, "out_reference_kernel.pt")
            spec = output_spec(ref_out)
            bufs, out_field = self.out_field(spec)
            t_call = time.monotonic()
            reply = self.child.request({"cmd": "call", **field, **out_field, "out": out_path,
                                        "poison": [], "reuse": False,
                                        "profile_kernels": False},
                                       timeout=req.call_timeout_s,
                                       phase="the starting kernel's call")
            self.call_s.append(time.monotonic() - t_call)
            self.release_inputs(field)
            got = self.take_outputs(bufs, reply, out_path, ref_out)
            del bufs
            atol, rtol = tolerances(ref_out, req.atol, req.rtol)
            c = compare(ref_out, got, atol * max(1.0, rms(ref_out)), rtol)
            if not c["ok"]:
                h["warnings"].append("the starting kernel is wrong on the timing inputs (not "
                                     "timed): " + c["reason"])
                return
            # A starting kernel far slower than PyTorch (by its own kernels' GPU time in
            # an earlier traced gate of this job here) gets the candidate's short protocol.
            short = self.short_protocol_if(
                short_timing_reason(
                    self.job.own_busy_ms.get(_source_key(req.reference_kernel_source)),
                    self.job.pytorch_best_ms),
                "the starting kernel's timing", "short_timing_starting_kernel")
            with self.env.quiet(keep=self.child), short:
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
            if child is not None:
                self.env.pool.retire(child)
            (self.child, self.workdir, self.trace_path, self.triton_hook,
             self.use_ipc, self.call_s, self.prepared) = saved

    def cancel(self):
        """Stops the request's candidate processes (its caller went away)."""
        self.cancelled = True
        for c in (self.child, self.rk_child):
            if c is not None:
                c.kill()
