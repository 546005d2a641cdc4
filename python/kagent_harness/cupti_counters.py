"""The CUPTI backend's hardware counters: the range profiler's pass loop (user replay).

libkagent_cupti.so (services/profiler/cupti/range_counters.h) collects the counters of
every kernel launched while a pass runs, one range per kernel; a set of metrics needs
several passes, and with user replay the caller runs the same work once per pass:

    prepare(metrics) -> passes     (optional, before the GPU is held: the host setup)
    begin(metrics, max_ranges) -> passes
    repeat: pass_begin; forward; synchronize; pass_end  (1 once every pass is submitted)
    end(out_path)  -> one "counters" line per range and a "counters_meta" line

Nothing is saved or restored between passes (that is what makes it cheap): a forward
that is not idempotent would count different work per pass. The child runs this after
its warm-up, in the candidate's own process: the counters are guidance for the judge,
like the tracer's durations, never a verdict.

A collection is sized from the kernels the last warm-up forward launched (the tracer's
count; first_bound: twice that, at least MIN_RANGES; FIRST_MAX_RANGES when the count is
not known), and made again for MAX_RANGES only when a pass launched more
(end_unless_dropped says so).

`lib` is the ctypes library (or anything with the same functions: the tests pass a
double; end_unless_dropped is optional); a failure never raises, it comes back in the
result with what went wrong.
"""

import ctypes
import time

# Kernels one pass (one forward) may launch; more are dropped by CUPTI and the profiler
# then leaves the counters out (its ranges no longer match the forward's kernels).
MAX_RANGES = 1024
# The first collection's bound. The counter data image, the setup and every pass cost in
# proportion to the bound (an H100, 12 passes of a one-kernel forward: 0.6 s in all with
# 4 ranges, 2.7 s with 1024; tests/gpu/cupti_pass_cost.py), and a level-1 forward
# launches a few kernels. A forward that launches more is collected again with
# MAX_RANGES (where the library can say that ranges were dropped).
FIRST_MAX_RANGES = 64
# The smallest first bound when the forward's kernels are counted (4 and 8 ranges cost
# about the same; a forward that launches one kernel more than it did in its warm-up
# still fits).
MIN_RANGES = 8


def first_bound(kernels_per_forward):
    """The first collection's bound for a forward that launched `kernels_per_forward`
    kernels in its warm-up: the power of two at or above twice that, at least
    MIN_RANGES, at most MAX_RANGES; FIRST_MAX_RANGES when the count is unknown (None or
    not positive)."""
    if not kernels_per_forward or kernels_per_forward <= 0:
        return FIRST_MAX_RANGES
    bound = MIN_RANGES
    while bound < 2 * kernels_per_forward and bound < MAX_RANGES:
        bound *= 2
    return bound


def declare(lib):
    """Sets the counter functions' ctypes signatures on a loaded library; raises
    AttributeError when it has none (a tracer built before the range profiler)."""
    lib.kagent_cupti_counters_begin.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.kagent_cupti_counters_begin.restype = ctypes.c_int
    lib.kagent_cupti_counters_pass_begin.argtypes = []
    lib.kagent_cupti_counters_pass_begin.restype = ctypes.c_int
    lib.kagent_cupti_counters_pass_end.argtypes = []
    lib.kagent_cupti_counters_pass_end.restype = ctypes.c_int
    lib.kagent_cupti_counters_end.argtypes = [ctypes.c_char_p]
    lib.kagent_cupti_counters_end.restype = ctypes.c_int
    lib.kagent_cupti_counters_error.argtypes = []
    lib.kagent_cupti_counters_error.restype = ctypes.c_char_p
    try:
        lib.kagent_cupti_counters_end_unless_dropped.argtypes = [ctypes.c_char_p]
        lib.kagent_cupti_counters_end_unless_dropped.restype = ctypes.c_int
    except AttributeError:  # an older library: every collection uses MAX_RANGES
        pass
    try:
        lib.kagent_cupti_counters_prepare.argtypes = [ctypes.c_char_p]
        lib.kagent_cupti_counters_prepare.restype = ctypes.c_int
    except AttributeError:  # an older library: begin does all of its setup
        pass


def _error(lib):
    text = lib.kagent_cupti_counters_error()
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return text or "no reason given"


def prepare(lib, metrics):
    """The host half of the setup (the library's prepare: profiler initialization and
    the configuration for `metrics`), ahead of the collection: run before the GPU is
    held, it leaves begin only the enable. Returns {"ok", "passes", "error", "ms"};
    never raises (a library without prepare, or a failed one, leaves begin to do it)."""
    t0 = time.monotonic()
    res = {"ok": False, "passes": 0, "error": ""}
    if lib is None or not hasattr(lib, "kagent_cupti_counters_prepare"):
        res["error"] = "the CUPTI library has no prepare"
    elif not metrics:
        res["error"] = "no metrics asked for"
    else:
        passes = lib.kagent_cupti_counters_prepare(",".join(metrics).encode())
        if passes > 0:
            res.update(ok=True, passes=int(passes))
        else:
            res["error"] = _error(lib)
    res["ms"] = round(_since(t0), 3)
    return res


# Where a collection's time goes, in "steps_ms" (milliseconds, by the child's clock).
STEPS = ("setup", "passes", "forwards in passes", "decode")


def collect(lib, metrics, forward, synchronize, out_path, max_ranges=None,
            kernels_per_forward=None):
    """Runs the passes: `forward()` then `synchronize()` once per pass. Returns
    {"ok", "passes", "error", "ms", "steps_ms", "max_ranges"}; "passes" counts the
    passes run, "steps_ms" splits "ms" by STEPS (a pass's time less its forward is
    CUPTI's own) and "max_ranges" is the bound of the collection that counted.
    Without `max_ranges`, first_bound(kernels_per_forward) first and, when CUPTI
    dropped ranges, MAX_RANGES again (the first collection writes nothing then)."""
    t0 = time.monotonic()
    res = {"ok": False, "passes": 0, "error": ""}
    if kernels_per_forward:
        res["kernels_per_forward"] = int(kernels_per_forward)
    steps = dict.fromkeys(STEPS, 0.0)

    def done(error=""):
        res["error"] = error
        res["ok"] = not error
        res["ms"] = round(_since(t0), 3)
        res["steps_ms"] = {k: round(v, 3) for k, v in steps.items()}
        return res

    if lib is None:
        return done("the CUPTI library is not loaded (KAGENT_CUPTI_LIB)")
    if not out_path:
        return done("no trace file to write the counters to (KAGENT_CUPTI_OUT)")
    if not metrics:
        return done("no metrics asked for")
    first = first_bound(kernels_per_forward)
    if max_ranges:
        bound = int(max_ranges)
    elif first < MAX_RANGES and hasattr(lib, "kagent_cupti_counters_end_unless_dropped"):
        res["max_ranges"] = first
        error = _collect_once(lib, metrics, forward, synchronize, out_path, first,
                              lib.kagent_cupti_counters_end_unless_dropped, steps, res)
        if error != _DROPPED:
            return done(error)
        bound = MAX_RANGES
    else:
        bound = MAX_RANGES
    # The last collection ends with the plain end, which writes even when it dropped.
    res["max_ranges"] = bound
    return done(_collect_once(lib, metrics, forward, synchronize, out_path, bound,
                              lib.kagent_cupti_counters_end, steps, res))


_DROPPED = "ranges dropped"


def _since(t):
    return (time.monotonic() - t) * 1e3


def _collect_once(lib, metrics, forward, synchronize, out_path, max_ranges, end, steps,
                  res):
    """One collection with `max_ranges`, ended by `end` (the library's end, or
    end_unless_dropped). Adds to `steps` and res["passes"]; returns "" when written,
    _DROPPED when `end` dropped it, else the error."""
    t = time.monotonic()
    planned = lib.kagent_cupti_counters_begin(",".join(metrics).encode(), int(max_ranges))
    steps["setup"] += _since(t)
    if planned <= 0:
        return f"begin: {_error(lib)}"

    def abandon(error):
        # An end before every pass was submitted tears the collection down.
        lib.kagent_cupti_counters_end(out_path.encode())
        return error

    # CUPTI says when the last pass is submitted; the bound only guards against a
    # library that never does.
    for n in range(planned + 1):
        t_pass = time.monotonic()
        if lib.kagent_cupti_counters_pass_begin() != 0:
            return f"pass {n}: {_error(lib)}"
        try:
            t = time.monotonic()
            forward()
            synchronize()
            steps["forwards in passes"] += _since(t)
        except Exception as e:  # noqa: BLE001
            lib.kagent_cupti_counters_pass_end()
            return abandon(f"pass {n}: the forward raised {type(e).__name__}: {e}")
        state = lib.kagent_cupti_counters_pass_end()
        steps["passes"] += _since(t_pass)
        res["passes"] += 1
        if state < 0:
            return f"pass {n}: {_error(lib)}"
        if state == 1:
            t = time.monotonic()
            ended = end(out_path.encode())
            steps["decode"] += _since(t)
            if ended == 2:
                return _DROPPED
            return f"end: {_error(lib)}" if ended != 0 else ""
    return abandon(f"CUPTI planned {planned} passes but did not finish after {planned + 1}")
