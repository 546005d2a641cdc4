"""Candidate processes: started ahead (a warm pool), prepared outside the GPU slot,
and stopped while the GPU is timed.

A candidate's process (sandbox.Child) spends seconds starting: the interpreter, `import
torch` and `import triton`, CUDA's context. ChildPool keeps `size` of them started and
waiting for their candidate, so a measurement takes one that is ready. Each is used for
exactly one candidate (or one screen) and then closed: nothing a candidate did can
reach the next one through its process.

Processes holding candidate code (being prepared, or prepared and waiting for the GPU)
are registered as `active`; while the supervisor times anything on the GPU (`quiet()`),
every process in the sandboxes of the active ones except the one being timed (their
setsid'd and daemonized processes too) is stopped with SIGSTOP and continued
afterwards, so a candidate compiling or misbehaving in the background cannot take GPU
time from the one being measured. (GPU work it queued before the stop may still run:
see docs/harness.md, known gaps.)

Thread-safe.
"""

import concurrent.futures
import contextlib
import os
import threading
import time

from kagent_harness.sandbox import Child, make_workdir


class ChildSpec:
    """How a candidate's process is started; two processes with equal specs are
    interchangeable."""

    def __init__(self, device, network_isolation=True, drop_privileges=None,
                 cuda_visible_devices=None, trace=True, sandbox="required", sandbox_hide=()):
        self.device = device
        self.network_isolation = bool(network_isolation)
        # None: the default (the drop when the supervisor is root).
        self.drop_privileges = None if drop_privileges is None else bool(drop_privileges)
        self.sandbox = sandbox
        self.sandbox_hide = tuple(sorted(set(sandbox_hide or ())))
        self.cuda_visible_devices = cuda_visible_devices
        self.trace = bool(trace) and device == "cuda" and bool(os.environ.get("KAGENT_CUPTI_LIB"))

    def key(self):
        return (self.device, self.network_isolation, self.drop_privileges,
                self.cuda_visible_devices, self.trace, self.sandbox, self.sandbox_hide)

    @staticmethod
    def for_request(req, device, trace=True):
        return ChildSpec(device, req.network_isolation, req.drop_privileges,
                         req.cuda_visible_devices, trace and req.mode != "profile",
                         req.sandbox, req.sandbox_hide)


def spawn(spec, log, timeout_s=600.0, memory_limit_mb=None, keep_injection=False,
          extra_env=None):
    """Starts one candidate process in a new private workdir; returns the Child (its
    `workdir` and `trace_path` set). It imports torch while the caller goes on."""
    workdir = make_workdir()
    env = dict(extra_env or {})
    trace_path = None
    lib = os.environ.get("KAGENT_CUPTI_LIB")
    if spec.trace and lib:
        trace_path = os.path.join(workdir, "cupti_trace.jsonl")
        env.update({"CUDA_INJECTION64_PATH": lib, "KAGENT_CUPTI_LIB": lib,
                    "KAGENT_CUPTI_OUT": trace_path})
    elif env.get("KAGENT_CUPTI_OUT"):
        # A trace the caller asked for (profile mode's CUPTI backend): its file is in the
        # caller's directory, which the sandbox hides; the candidate's process writes it
        # in its own workdir, the one place the sandbox lets it write, and the caller
        # takes it from `trace_path` (profile_mode.py).
        trace_path = os.path.join(workdir, "cupti_trace.jsonl")
        env["KAGENT_CUPTI_OUT"] = trace_path
    mem = memory_limit_mb or (8192 if spec.device == "cpu" else 65536)
    child = Child(workdir, spec.device, timeout_s, mem, log,
                  network_isolation=spec.network_isolation,
                  cuda_visible_devices=spec.cuda_visible_devices, extra_env=env,
                  drop_privileges=spec.drop_privileges, keep_injection=keep_injection,
                  sandbox=spec.sandbox, sandbox_hide=spec.sandbox_hide)
    child.trace_path = trace_path
    child.start()
    return child


def discard(child):
    """Ends `child` and removes its workdir."""
    import shutil
    child.close()
    shutil.rmtree(child.workdir, ignore_errors=True)


class ChildPool:
    """`size` started candidate processes of one spec, refilled in the background."""

    def __init__(self, spec, size, log, reap_async=True):
        self.spec = spec
        self.reap_async = reap_async
        self.size = max(0, int(size))
        self.log = log
        self._lock = threading.Lock()
        self._ready = []          # started, waiting for a candidate
        self._active = set()      # holding candidate code (see quiet())
        self._stopped = False
        self._wake = threading.Event()
        self.taken = 0
        self.cold = 0
        self._thread = None
        self._reapers = []        # retire()'s reaping threads, waited for by close()
        # Processes started for a request are started from here, not from the request's
        # thread: the kernel sends a process its parent-death signal (SIGKILL, set in
        # sandbox._preexec) when the *thread* that forked it ends, and a server's
        # request thread ends with its answer, while a prepared process must live on
        # until the measurement that uses it (seen on the H200: a prepared screen's
        # process killed between prepare_screen and screen).
        self._spawner = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="kagent-spawn")
        if self.size:
            self._thread = threading.Thread(target=self._refill, daemon=True,
                                            name="kagent-pool")
            self._thread.start()

    def _refill(self):
        while not self._stopped:
            with self._lock:
                self._ready = [c for c in self._ready if c.proc.poll() is None]
                missing = self.size - len(self._ready)
            if missing > 0:
                try:
                    c = spawn(self.spec, self.log)
                except Exception as e:  # noqa: BLE001 - retried
                    self.log.add(f"pool: could not start a candidate process: {e!r}")
                    time.sleep(2.0)
                    continue
                with self._lock:
                    stopped = self._stopped
                    if not stopped:
                        self._ready.append(c)
                if stopped:
                    discard(c)
                    return
                continue
            self._wake.wait(1.0)
            self._wake.clear()

    def take(self, spec, log, timeout_s, memory_limit_mb):
        """A started process for `spec`: a warm one when the pool's spec matches, else
        one started now (`cold`). It is configured for the request (time and memory
        limits, its log) and registered as active."""
        child = None
        if spec.key() == self.spec.key():
            with self._lock:
                while self._ready and child is None:
                    c = self._ready.pop(0)
                    if c.proc.poll() is None:
                        child = c
                    else:
                        discard(c)
            self._wake.set()
        if child is None:
            child = self._spawner.submit(spawn, spec, log, timeout_s, memory_limit_mb).result()
            with self._lock:
                self.cold += 1
            log.add("candidate process started now (no warm one ready)")
        else:
            with self._lock:
                self.taken += 1
            log.add(f"warm candidate process {child.proc.pid} taken from the pool")
        child.log = log
        child.configure(timeout_s, memory_limit_mb or (8192 if spec.device == "cpu"
                                                       else 65536))
        with self._lock:
            self._active.add(child)
        return child

    def retire(self, child):
        """Ends a taken process: its process group is killed now (nothing it holds is
        wanted: each process serves one candidate); reaping it and removing its workdir
        happen on a thread of their own, so a measurement does not wait for a CUDA
        context's teardown."""
        with self._lock:
            self._active.discard(child)
        child.kill()

        if self.reap_async:
            t = threading.Thread(target=discard, args=(child,), daemon=True,
                                 name="kagent-reap")
            with self._lock:
                self._reapers = [r for r in self._reapers if r.is_alive()] + [t]
            t.start()
        else:
            discard(child)

    def ready_count(self):
        with self._lock:
            return sum(1 for c in self._ready if c.proc.poll() is None)

    @contextlib.contextmanager
    def quiet(self, keep=None):
        """Stops every process in the sandboxes of the active processes but `keep` for
        the duration (a candidate's setsid'd or daemonized processes too); continues
        them afterwards."""
        stopped = []
        with self._lock:
            others = [c for c in self._active if c is not keep]
        for c in others:
            if c.proc is not None and c.proc.poll() is None:
                if c.hold():
                    stopped.append(c)
        try:
            yield len(stopped)
        finally:
            for c in stopped:
                c.release()

    def close(self):
        with self._lock:
            self._stopped = True
            ready, active = list(self._ready), list(self._active)
            self._ready.clear()
            self._active.clear()
        self._wake.set()
        for c in ready + active:
            discard(c)
        # Reaping runs on threads of their own (retire): a process that exits before they
        # end leaves their workdirs behind, so they are waited for (bounded), and so is
        # a start in flight, whose process the refill thread then discards.
        deadline = time.monotonic() + 30.0
        with self._lock:
            reapers = list(self._reapers)
        for t in reapers + ([self._thread] if self._thread else []):
            t.join(max(0.0, deadline - time.monotonic()))
        self._spawner.shutdown(wait=False)
