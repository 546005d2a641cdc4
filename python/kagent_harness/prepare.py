"""What a measurement does before it takes the GPU: the prepare step and the compile dry run.

The server's `prepare` op (server.py) runs run_prepare before the worker grants the GPU
slot: the candidate's process (warm), its import and construction and, for a Triton
candidate, a compile dry run on stand-ins of the job's timing inputs (dryrun.py); the
measure that follows adopts the Prepared process. A mixin of measure.Supervisor: it uses
the supervisor's request, job, env, phases, log, take_child, use_child, write_candidate
and finish. Screens (screen.py) and profiles use compile_dry_run too.
"""

import threading
import time
import traceback

from kagent_harness import protocol as P
from kagent_harness.sandbox import ChildFailure


class Prepared:
    """A candidate's process that imported and built the candidate (and compiled its
    kernels in a dry run) before the GPU was taken; used by one measure."""

    def __init__(self, child, key, source, language, ready, compiled, rk=None,
                 rk_source=None):
        self.child = child
        self.rk = rk                # (process, ready reply) of the starting kernel, or None
        self.rk_source = rk_source
        self.key = key
        self.source = source
        self.language = language
        self.ready = ready          # the child's "ready" reply
        self.compiled = compiled    # the dry run's reply, or None (a screen's: per variant, its
                                    # COMPILE_ERROR "VERDICT: reason" or None)
        self.created = time.monotonic()


class DryRunRoom:
    """Device memory for the compile dry runs of one server's preparations that cannot
    have phantom stand-ins (phantom.py). Such a dry run allocates stand-ins of a trial's
    inputs and its outputs in the candidate's process (dryrun.py), beside the
    measurement that holds the GPU slot, and a process stopped while the GPU is timed
    keeps them until it is continued. On the H100 with 16 tasks in flight on one worker
    (2026-12-06), prepared processes held 0.6-10.6 GiB each, and the measurements beside
    them ran out of memory: the supervisor making a job's trials (INFRA_ERROR on all 3
    attempts) and four candidates' processes in their gates. Bounded by this room
    instead, every dry run waited for it, and preparations took 2-6x longer (a screen's
    125 s on average): hence phantom stand-ins first.
    take() admits a dry run of `nbytes` while those in flight hold at most `limit` bytes
    with it (one alone always: a trial larger than the limit still gets its dry run);
    `limit` 0: no limit (the CPU). Thread-safe."""

    def __init__(self, limit):
        self.limit = max(0, int(limit))
        self._cv = threading.Condition()
        self.used = 0
        self.running = 0

    def take(self, nbytes, timeout_s):
        """Waits up to `timeout_s` for room; True once `nbytes` are counted in (give them
        back with give()), False when the wait ran out."""
        end = time.monotonic() + max(0.0, timeout_s)
        with self._cv:
            while self.limit and self.running and self.used + nbytes > self.limit:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
            self.used += nbytes
            self.running += 1
            return True

    def give(self, nbytes):
        with self._cv:
            self.used -= nbytes
            self.running -= 1
            self._cv.notify_all()


def dry_run_room_limit(device):
    """An eighth of the device's memory on a GPU (the trial cache has a quarter); no limit
    on the CPU."""
    import torch
    if device == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.get_device_properties(0).total_memory // 8)
    return 0


class PrepareMixin:
    def compile_dry_run(self, child, language, what="", phase="compile dry run",
                        strict=True):
        """For a Triton candidate whose timing inputs' shapes are known: compiles its
        kernels in `child` on stand-ins (dryrun.py), nothing launched. On the GPU the
        stand-ins are phantom tensors (phantom.py: no device memory); where the child
        cannot make them, real ones, once the server's DryRunRoom has room for a trial's
        bytes. Returns the dry run's reply, or None when there was none (not Triton, no
        known inputs, or no room within the call limit: the first gate call compiles).
        With `strict`, raises ChildFailure (COMPILE_ERROR) when a kernel does not
        compile."""
        spec = self.job.input_spec or self.job.spec_without_values()
        if language != "triton" or spec is None:
            return None
        if self.device == "cuda":
            child.send({"cmd": "compile", "inputs": spec, "phantom": True})
            compiled = self._recv_compile(child, what, phase, strict)
            if not compiled.get("phantom_error"):
                return compiled
            self.log.add(f"{what}compile dry run: no phantom stand-ins here "
                         f"({compiled['phantom_error']}): real ones")
        room, need = self.env.dry_runs, self.job.trial_bytes
        wait = min(child.remaining(), self.req.call_timeout_s)
        t = time.monotonic()
        if not room.take(need, wait):
            self.log.add(f"{what}compile dry run skipped: no device memory for its "
                         f"{need >> 20} MiB of stand-ins within {wait:.0f} s "
                         f"({room.used >> 20} MiB of dry runs in flight, limit "
                         f"{room.limit >> 20} MiB); the first gate call compiles")
            return None
        waited = time.monotonic() - t
        if waited >= 0.5:
            self.log.add(f"{what}compile dry run waited {waited:.1f} s for device memory")
        try:
            child.send({"cmd": "compile", "inputs": spec})
            return self._recv_compile(child, what, phase, strict)
        finally:
            room.give(need)

    def _recv_compile(self, child, what, phase, strict):
        """The answer to the "compile" command: the dry run's reply; with `strict`,
        ChildFailure (COMPILE_ERROR) when a kernel does not compile."""
        with self.phases(phase):
            compiled = child.checked(
                child.recv(timeout=min(child.remaining(), self.req.call_timeout_s),
                           phase=f"the {what}compile dry run"),
                f"the {what}compile dry run")
        if compiled.get("phantom_error"):
            return compiled  # nothing ran: the caller tries real stand-ins
        if compiled.get("phantom_unsafe"):
            # What the candidate kept of its phantom stand-ins could not be made real: in
            # this process it would alias. The harness's failure, never the candidate's.
            raise RuntimeError("the compile dry run's phantom tensors that the candidate "
                               f"kept could not be made real ({compiled['phantom_unsafe']}): "
                               "its process is not used")
        ph = compiled.get("phantom")
        self.log.add(f"{what}compile dry run: "
                     f"{'clean' if compiled.get('clean') else 'not clean'}"
                     f", {compiled.get('ops', 0)} ops in {compiled.get('seconds', 0):.2f} s"
                     + (f", phantom stand-ins ({ph.get('reserved_mb')} MiB reserved, "
                        f"{ph.get('materialized_mb')} MiB kept by the candidate made real)"
                        if isinstance(ph, dict) else "")
                     + (f"; {compiled['error']}" if compiled.get("error") else ""))
        if strict and compiled.get("compile_error"):
            raise ChildFailure(P.COMPILE_ERROR, "the compile dry run (no GPU held): "
                               + compiled["compile_error"])
        return compiled

    def run_prepare(self):
        """Everything of a measurement that needs no GPU slot, done before the worker
        takes it: the candidate's process (warm), its import and construction, and for
        a Triton candidate a compile dry run on stand-ins of the job's timing inputs
        (dryrun.py). Returns (Prepared or None, final result or None, reason): a final
        result is a verdict reached without the GPU (a compilation error, a crash of the
        process); (None, None, reason) means measure does the work itself."""
        req = self.req
        t0 = time.monotonic()
        if not req.kernel_source:
            return None, None, "no kernel_source"
        try:
            self.load_reference()
        except Exception as e:  # noqa: BLE001 - measure reports the reference's failure
            self.env.cache.done(self.job)
            return None, None, f"the reference did not load ({type(e).__name__}: {e})"
        failure, failure_tb = None, ""
        for attempt in (1, 2):
            child = rk = None  # rk: the starting kernel's process, beside the candidate's
            try:
                child = self.take_child()
                self.use_child(child)
                self.write_candidate(child, req.kernel_source, req.language)
                if req.reference_kernel_source and req.time_candidate:
                    rk = self._start_starting_kernel()
                with self.phases("candidate import and construction"):
                    ready = child.checked(
                        child.recv(phase="candidate import and construction"),
                        "candidate import and construction")
                compiled = self.compile_dry_run(child, req.language)
            except ChildFailure as f:
                if attempt == 1 and f.verdict == P.TIMEOUT and "compile dry run" in f.reason:
                    # Once more in a fresh process before it is final: no GPU is held,
                    # and a dry run seen hanging once on the H100 (49_conv3d_fp32, 120 s)
                    # passed in the next run.
                    self.log.add(f"{f.reason}: the compile dry run once more, in a fresh "
                                 "process (no GPU held)")
                    self._retire_starting_kernel(rk)
                    self.env.pool.retire(child)
                    self.child = None
                    continue
                failure = f
            except Exception as e:  # noqa: BLE001 - the harness's fault: measure tries again
                failure, failure_tb = e, traceback.format_exc()
            break
        if isinstance(failure, ChildFailure):
            self._retire_starting_kernel(rk)
            self.result["verdict"] = failure.verdict
            self.result["correctness"]["reason"] = failure.reason
            res = self.finish(t0)
            res["gpu_seconds"] = 0.0
            res["harness"]["prepared"] = False
            return None, res, failure.reason
        if failure is not None:
            self._retire_starting_kernel(rk)
            self.log.add("prepare failed:\n" + failure_tb)
            if child is not None:
                self.env.pool.retire(child)
            self.child = None
            self.env.cache.done(self.job)
            return None, None, f"prepare failed: {type(failure).__name__}: {failure}"
        if rk is not None:
            rk = self._finish_starting_kernel(rk)
        self.env.cache.done(self.job)
        self.child = None
        return Prepared(child, self.job.key, req.kernel_source, req.language, ready,
                        compiled, rk=rk, rk_source=req.reference_kernel_source), None, ""

    # The starting kernel of a final run is prepared in a process of its own, started
    # right after the candidate's, so that the two imports, constructions and compile dry
    # runs overlap (on the H200 a final run's preparation took 14-22 s done one after the
    # other, on the job's path to its result). Its failures are warnings, never the
    # candidate's verdict: measure then starts it itself.

    def _start_starting_kernel(self):
        """The starting kernel's process with its source written (not waited for), or
        None when that failed."""
        req = self.req
        child = None
        try:
            child = self.take_child(trace=False)
            self.write_candidate(child, req.reference_kernel_source,
                                 req.reference_kernel_language)
            return child
        except Exception as e:  # noqa: BLE001 - ChildFailure or the harness's own
            self.log.add(f"the starting kernel was not prepared: {e}")
            if child is not None:
                self.env.pool.retire(child)
            return None

    def _finish_starting_kernel(self, child):
        """Waits for the started process to import and build the starting kernel, then
        runs its compile dry run: (process, ready reply), or None when that failed."""
        req = self.req
        try:
            with self.phases("starting kernel: import and construction"):
                ready = child.checked(child.recv(phase="starting kernel import"),
                                      "starting kernel import")
            self.compile_dry_run(child, req.reference_kernel_language,
                                 what="starting kernel's ",
                                 phase="starting kernel: compile dry run", strict=False)
            return child, ready
        except Exception as e:  # noqa: BLE001 - ChildFailure or the harness's own
            self.log.add(f"the starting kernel was not prepared: {e}")
            self.env.pool.retire(child)
            return None

    def _retire_starting_kernel(self, child):
        if child is not None:
            self.env.pool.retire(child)
