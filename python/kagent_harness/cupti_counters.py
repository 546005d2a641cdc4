"""The CUPTI backend's hardware counters: the range profiler's pass loop (user replay).

libkagent_cupti.so (services/profiler/cupti/range_counters.h) collects the counters of
every kernel launched while a pass runs, one range per kernel; a set of metrics needs
several passes, and with user replay the caller runs the same work once per pass:

    begin(metrics, max_ranges) -> passes
    repeat: pass_begin; forward; synchronize; pass_end  (1 once every pass is submitted)
    end(out_path)  -> one "counters" line per range and a "counters_meta" line

Nothing is saved or restored between passes (that is what makes it cheap): a forward
that is not idempotent would count different work per pass. The child runs this after
its warm-up, in the candidate's own process: the counters are guidance for the judge,
like the tracer's durations, never a verdict.

`lib` is the ctypes library (or anything with the same five functions: the tests pass
a double); a failure never raises, it comes back in the result with what went wrong.
"""

import ctypes
import time

# Kernels one pass (one forward) may launch; more are dropped by CUPTI and the profiler
# then leaves the counters out (its ranges no longer match the forward's kernels).
MAX_RANGES = 1024


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


def _error(lib):
    text = lib.kagent_cupti_counters_error()
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return text or "no reason given"


# Where a collection's time goes, in "steps_ms" (milliseconds, by the child's clock).
STEPS = ("setup", "passes", "forwards in passes", "decode")


def collect(lib, metrics, forward, synchronize, out_path, max_ranges=MAX_RANGES):
    """Runs the passes: `forward()` then `synchronize()` once per pass. Returns
    {"ok", "passes", "error", "ms", "steps_ms"}; "passes" counts the passes run, and
    "steps_ms" splits "ms" by STEPS (a pass's time less its forward is CUPTI's own)."""
    t0 = time.monotonic()
    res = {"ok": False, "passes": 0, "error": ""}
    steps = dict.fromkeys(STEPS, 0.0)

    def since(t):
        return (time.monotonic() - t) * 1e3

    def done(error=""):
        res["error"] = error
        res["ok"] = not error
        res["ms"] = round(since(t0), 3)
        res["steps_ms"] = {k: round(v, 3) for k, v in steps.items()}
        return res

    if lib is None:
        return done("the CUPTI library is not loaded (KAGENT_CUPTI_LIB)")
    if not out_path:
        return done("no trace file to write the counters to (KAGENT_CUPTI_OUT)")
    if not metrics:
        return done("no metrics asked for")
    t = time.monotonic()
    planned = lib.kagent_cupti_counters_begin(",".join(metrics).encode(), int(max_ranges))
    steps["setup"] = since(t)
    if planned <= 0:
        return done(f"begin: {_error(lib)}")

    def abandon(error):
        # An end before every pass was submitted tears the collection down.
        lib.kagent_cupti_counters_end(out_path.encode())
        return done(error)

    # CUPTI says when the last pass is submitted; the bound only guards against a
    # library that never does.
    while res["passes"] < planned + 1:
        t_pass = time.monotonic()
        if lib.kagent_cupti_counters_pass_begin() != 0:
            return done(f"pass {res['passes']}: {_error(lib)}")
        try:
            t = time.monotonic()
            forward()
            synchronize()
            steps["forwards in passes"] += since(t)
        except Exception as e:  # noqa: BLE001
            lib.kagent_cupti_counters_pass_end()
            return abandon(f"pass {res['passes']}: the forward raised {type(e).__name__}: {e}")
        state = lib.kagent_cupti_counters_pass_end()
        steps["passes"] += since(t_pass)
        res["passes"] += 1
        if state < 0:
            return done(f"pass {res['passes'] - 1}: {_error(lib)}")
        if state == 1:
            t = time.monotonic()
            ended = lib.kagent_cupti_counters_end(out_path.encode())
            steps["decode"] = since(t)
            if ended != 0:
                return done(f"end: {_error(lib)}")
            return done()
    return abandon(f"CUPTI planned {planned} passes but did not finish after {res['passes']}")
