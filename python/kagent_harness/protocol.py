"""The JSON protocol: request parsing with defaults and floors, verdicts, stats, the log.

Pure Python (no torch): the supervisor, the child and the tests all use it.
Field names follow proto/kagent/v1/common.proto (snake_case); verdict names are the
proto's without the VERDICT_ prefix. docs/harness.md documents every field.
"""

import contextlib
import math
import os
import sys
import time

from kagent_harness import procfs

CORRECT = "CORRECT"
INCORRECT = "INCORRECT"
COMPILE_ERROR = "COMPILE_ERROR"
CRASH = "CRASH"
TIMEOUT = "TIMEOUT"
OOM = "OOM"
REJECTED = "REJECTED"
INFRA_ERROR = "INFRA_ERROR"
VERDICTS = (CORRECT, INCORRECT, COMPILE_ERROR, CRASH, TIMEOUT, OOM, REJECTED, INFRA_ERROR)

MODES = ("measure", "signature", "profile", "gpuinfo")
SANDBOX_REQUIRED = "required"
SANDBOX_MODES = ("required", "best-effort")

# Floors that apply on device "cuda" (a request asking for less gets the floor and a log
# line). On device "cpu" timing is plumbing only (Triton's interpreter runs the kernels;
# its timings do not rank kernels): the timing is capped instead, since one call of a
# kernel sized for a GPU's grid can take seconds there, and the coordinator's 100 reps
# plus 25 warm-up calls made one measurement run past its 10-minute timeout. The gate
# (correctness trials) is never capped.
GPU_MIN_TRIALS = 5
GPU_MIN_REPS = 100
GPU_MIN_WARMUP_ITERS = 25
GPU_MIN_WARMUP_MS = 100.0
CPU_MAX_REPS = 10
# The timing loops' time budget (timing.py): the default wall ms of timed calls beyond
# which a slow call's timing stops after MIN_TIMED_REPS calls; the warm-up's is half of
# it, after MIN_WARMUP_CALLS calls (the first call may compile or autotune).
TIMED_BUDGET_MS = 1000.0
MIN_TIMED_REPS = 10
MIN_WARMUP_CALLS = 3
CPU_MAX_WARMUP_ITERS = 2

LOG_LIMIT_BYTES = 16 * 1024


class RequestError(ValueError):
    """The request is malformed (answered as INFRA_ERROR with the message)."""


def _get(req, name, kind, default):
    value = req.get(name, default)
    if value is None:
        return default
    if kind is bool:
        if not isinstance(value, bool):
            raise RequestError(f"field {name!r} must be a boolean")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
            raise RequestError(f"field {name!r} must be an integer")
        return int(value)
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise RequestError(f"field {name!r} must be a finite number")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise RequestError(f"field {name!r} must be a string")
        return value
    return value


class Request:
    """A parsed request. Every field has a default; see docs/harness.md."""

    def __init__(self, raw, mode=None, log=None):
        if not isinstance(raw, dict):
            raise RequestError("the request must be a JSON object")
        self.raw = raw
        self.mode = mode or _get(raw, "mode", str, "measure")
        if self.mode not in MODES:
            raise RequestError(f"unknown mode {self.mode!r}; one of {', '.join(MODES)}")
        self.problem_source = _get(raw, "problem_source", str, None)
        self.kernel_source = _get(raw, "kernel_source", str, None)
        # Another kernel (the job's starting kernel) timed in the same run, in a process of
        # its own, so that "speedup over the start" is a ratio from one run.
        self.reference_kernel_source = _get(raw, "reference_kernel_source", str, None)
        self.reference_kernel_language = _get(raw, "reference_kernel_language", str, "triton")
        self.language = _get(raw, "language", str, "triton").lower()
        if self.language not in ("triton", "cuda"):
            raise RequestError("language must be 'triton' or 'cuda'")
        self.seed = _get(raw, "seed", int, None)
        self.device = _get(raw, "device", str, None)
        if self.device is not None and self.device not in ("cuda", "cpu"):
            raise RequestError("device must be 'cuda' or 'cpu'")
        self.trials = _get(raw, "trials", int, 5)
        self.wide_trials = _get(raw, "wide_trials", bool, True)
        self.timing_reps = _get(raw, "timing_reps", int, 100)
        self.warmup_iters = _get(raw, "warmup_iters", int, 25)
        self.warmup_ms = _get(raw, "warmup_ms", float, 100.0)
        # Wall ms of timed calls after which a slow kernel's timing stops early (at least
        # MIN_TIMED_REPS calls; timing.py); 0: always timing_reps calls.
        self.timing_budget_ms = _get(raw, "timing_budget_ms", float, TIMED_BUDGET_MS)
        self.atol = _get(raw, "atol", float, None)
        self.rtol = _get(raw, "rtol", float, None)
        self.timeout_s = _get(raw, "timeout_s", float, 600.0)
        self.call_timeout_s = _get(raw, "call_timeout_s", float, 120.0)
        self.memory_limit_mb = _get(raw, "memory_limit_mb", int, None)
        self.get_inputs_source = _get(raw, "get_inputs_source", str, None)
        self.shape_set = _get(raw, "shape_set", str, "")
        self.time_candidate = _get(raw, "time_candidate", bool, True)
        self.signature = _get(raw, "signature", bool, True)
        self.ipc_inputs = _get(raw, "ipc_inputs", bool, True)
        # Set by the CLI, not the request: variables only the candidate's process gets.
        self.child_env = {}
        self.flush_l2 = _get(raw, "flush_l2", bool, True)
        # Off by default in profile mode: Nsight Compute's injected library reaches its
        # front end over sockets that a fresh network namespace would cut off.
        self.network_isolation = _get(raw, "network_isolation", bool,
                                      (mode or raw.get("mode")) != "profile")
        self.cuda_visible_devices = _get(raw, "cuda_visible_devices", str, None)
        self.profile_iters = _get(raw, "profile_iters", int, 3)
        self.profile_warmup_iters = _get(raw, "profile_warmup_iters", int, 3)
        self.measure_ceilings = _get(raw, "measure_ceilings", bool, False)
        # Profile mode under the CUPTI backend: the metric names the candidate's process
        # collects with the range profiler after its warm-up (child.py); empty: none.
        counters = raw.get("cupti_counters", [])
        if counters is None:
            counters = []
        if not isinstance(counters, list) or not all(
                isinstance(c, str) and c and "," not in c for c in counters):
            raise RequestError("cupti_counters must be a list of metric names (no commas)")
        self.cupti_counters = list(counters)
        self.do_bench_check = _get(raw, "do_bench_check", bool, False)
        # None: the default, on when the harness runs as root (the candidate runs as
        # nobody, or $KAGENT_CHILD_USER).
        self.drop_privileges = _get(raw, "drop_privileges", bool, None)
        # The candidate's sandbox (bwrap.py): "required" refuses to run a candidate
        # without all of it, "best-effort" runs with what the host has and says what is
        # missing. sandbox_hide: more paths the candidate must not see.
        self.sandbox = _get(raw, "sandbox", str, SANDBOX_REQUIRED)
        if self.sandbox not in SANDBOX_MODES:
            raise RequestError(f"sandbox must be one of {', '.join(SANDBOX_MODES)}")
        hide = raw.get("sandbox_hide", [])
        if hide is None:
            hide = []
        if not isinstance(hide, list) or not all(
                isinstance(h, str) and h.startswith("/") and os.path.normpath(h) != "/"
                for h in hide):
            raise RequestError("sandbox_hide must be a list of absolute paths (not /)")
        self.sandbox_hide = [os.path.normpath(h) for h in hide]
        baselines = raw.get("baselines", False)
        if baselines is True:
            baselines = ["eager", "compiled"]
        elif baselines in (False, None):
            baselines = []
        elif isinstance(baselines, list) and all(b in ("eager", "compiled") for b in baselines):
            pass
        else:
            raise RequestError("baselines must be a boolean or a list of 'eager'/'compiled'")
        self.baselines = list(baselines)
        for name in ("trials", "timing_reps", "warmup_iters", "profile_iters"):
            if getattr(self, name) < 1:
                raise RequestError(f"field {name!r} must be >= 1")
        if self.timing_budget_ms < 0:
            raise RequestError("field 'timing_budget_ms' must be >= 0")
        if self.timeout_s <= 0 or self.call_timeout_s <= 0:
            raise RequestError("timeouts must be > 0")
        for name in ("atol", "rtol"):
            v = getattr(self, name)
            if v is not None and v < 0:
                raise RequestError(f"field {name!r} must be >= 0")
        if self.mode in ("measure", "signature", "profile") and not self.problem_source:
            raise RequestError(f"mode {self.mode} needs problem_source")
        if self.mode == "profile" and not self.kernel_source:
            raise RequestError("mode profile needs kernel_source")
        self._log = log

    def apply_floors(self, device, log):
        """On device 'cuda', raise the gate and timing parameters to the GPU floors; on
        any other device, cap the timing reps and warm-up calls (CPU_MAX_*)."""
        if device != "cuda":
            for name, ceiling in (("timing_reps", CPU_MAX_REPS),
                                  ("warmup_iters", CPU_MAX_WARMUP_ITERS)):
                if getattr(self, name) > ceiling:
                    log.add(f"request {name}={getattr(self, name)} capped to {ceiling} on "
                            f"device {device} (interpreter timings do not rank kernels)")
                    setattr(self, name, ceiling)
            return
        for name, floor in (("trials", GPU_MIN_TRIALS), ("timing_reps", GPU_MIN_REPS),
                            ("warmup_iters", GPU_MIN_WARMUP_ITERS),
                            ("warmup_ms", GPU_MIN_WARMUP_MS)):
            if getattr(self, name) < floor:
                log.add(f"request {name}={getattr(self, name)} raised to the floor {floor}")
                setattr(self, name, floor)


def default_tolerance(dtype_name):
    """(atol, rtol) defaults per output dtype name (torch dtype names without 'torch.')."""
    if dtype_name in ("float16", "bfloat16"):
        return 1e-2, 1e-2
    if dtype_name in ("float32", "complex64"):
        return 1e-4, 1e-4
    if dtype_name in ("float64", "complex128"):
        return 1e-7, 1e-7
    if dtype_name.startswith("float8"):
        return 1.25e-1, 1.25e-1
    return 0.0, 0.0  # integers and bool: exact


def percentile(sorted_values, q):
    """Linear-interpolated percentile (q in [0, 1]) of an ascending list, numpy's default."""
    n = len(sorted_values)
    if n == 0:
        return 0.0
    pos = (n - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return sorted_values[lo] * (1.0 - frac) + sorted_values[hi] * frac


def median(values):
    return percentile(sorted(values), 0.5)


def timing_stats(times_ms):
    """TimingStats (proto) from a list of per-repetition times in milliseconds."""
    values = sorted(float(t) for t in times_ms)
    n = len(values)
    if n == 0:
        return {"median_ms": 0.0, "mean_ms": 0.0, "p10_ms": 0.0, "p90_ms": 0.0,
                "min_ms": 0.0, "max_ms": 0.0, "count": 0}
    return {
        "median_ms": percentile(values, 0.5),
        "mean_ms": sum(values) / n,
        "p10_ms": percentile(values, 0.1),
        "p90_ms": percentile(values, 0.9),
        "min_ms": values[0],
        "max_ms": values[-1],
        "count": n,
    }


_LOG_TO_STDERR = os.environ.get("KAGENT_HARNESS_LOG_STDERR") == "1"


class Log:
    """Timestamped log lines; the result carries a bounded tail of them."""

    def __init__(self):
        self.lines = []
        self.t0 = time.monotonic()

    def add(self, msg):
        line = f"[{time.monotonic() - self.t0:8.3f}s] {msg}"
        self.lines.append(line)
        if _LOG_TO_STDERR:  # KAGENT_HARNESS_LOG_STDERR=1: also live, for diagnosis
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def tail(self, extra="", limit=LOG_LIMIT_BYTES):
        text = "\n".join(self.lines)
        if extra:
            text += "\n--- candidate process stderr (tail) ---\n" + extra
        data = text.encode("utf-8", "replace")
        if len(data) > limit:
            data = b"...(truncated)...\n" + data[-limit:]
        return data.decode("utf-8", "replace")


class Phases:
    """Wall time per phase of one harness run, in ms, accumulated over repeated entries:
    where a measurement's time goes (process start, imports, the gate's transfers, the
    timing). `with phases("name"): ...`; `as_dict()` rounds to 0.1 ms."""

    def __init__(self):
        self.ms = {}

    def add(self, name, ms):
        self.ms[name] = self.ms.get(name, 0.0) + ms

    @contextlib.contextmanager
    def __call__(self, name):
        t = time.monotonic()
        try:
            yield
        finally:
            self.add(name, (time.monotonic() - t) * 1e3)

    def as_dict(self):
        return {k: round(v, 1) for k, v in self.ms.items()}


# The steps a candidate's process may report for one gate call (child._Steps).
CHILD_STEPS = ("inputs", "input copies and poison", "forward", "hand-back", "checks")


def add_child_steps(phases, steps, names=CHILD_STEPS, what="gate"):
    """Adds a reply's "steps_ms" (the candidate's process's own account of where the
    time of a gate call, or of `what`, went) to `phases` as "WHAT, child's clock: STEP":
    diagnostics beside the supervisor's own phases, never a measurement. Names not in
    `names` and values that are not finite non-negative numbers below an hour are
    ignored (the reply is the candidate's process's)."""
    if not isinstance(steps, dict):
        return
    for name in names:
        v = steps.get(name)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 3.6e6:
            phases.add(f"{what}, child's clock: {name}", float(v))


def process_age_ms():
    """Milliseconds since this process started (from /proc; None where unavailable):
    the interpreter's start and the imports before any phase could be timed."""
    st = procfs.start_time("self")
    if st is None:
        return None
    try:
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        start = st[0] / os.sysconf("SC_CLK_TCK")
        return max(0.0, (uptime - start) * 1e3)
    except (OSError, ValueError, IndexError):
        return None


def empty_correctness(atol=0.0, rtol=0.0):
    return {"trials": 0, "trials_passed": 0, "max_abs_error": 0.0, "max_rel_error": 0.0,
            "worst_index": "", "atol": atol, "rtol": rtol, "reason": ""}


def sanitize(x):
    """JSON has no NaN/Inf: they become strings ("inf", "nan")."""
    if isinstance(x, float):
        if x != x:
            return "nan"
        if x in (float("inf"), float("-inf")):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, dict):
        return {k: sanitize(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [sanitize(v) for v in x]
    return x


def error_result(reason, log):
    c = empty_correctness()
    c["reason"] = reason
    return {"verdict": INFRA_ERROR, "correctness": c, "log": log.tail(), "ok": False,
            "reason": reason}
