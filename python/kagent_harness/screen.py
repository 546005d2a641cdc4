"""A fast screen of many variants of one trusted kernel (the heuristic brain's own
template renders, e.g. a knob sweep): all of them in one candidate process, each checked
once against the reference on the job's timing inputs and timed with a short loop of
the same protocol (timing.time_callable: spin, L2 flush, events; a slow variant stops at
the timing budget, protocol.TIMED_BUDGET_MS). The caller sends the
best few on to the full gate and timing; a screen result is never a measurement.

Variants are trusted code (written by the brain, not by a user or an LLM), so they share
one process; should that process die on a variant, the rest are screened in a new one,
once: a new process imports and compiles the rest under the GPU slot, so when the second
one dies too the rest are left "not screened" (SCREEN_MAX_PROCESSES).

A screen can be prepared before the worker takes the GPU slot (prepare_screen): the
variants' process is started, every variant imported and built, and each Triton
variant's kernels compiled in a dry run (dryrun.py) on stand-ins of the timing inputs,
so the screen under the slot only calls and times them. A variant whose clean dry run
fails to compile is a COMPILE_ERROR without the GPU.
"""

import math
import os
import time

from kagent_harness import protocol as P
from kagent_harness.compare import compare, output_spec, tolerances
from kagent_harness.sandbox import ChildFailure
from kagent_harness.timing import l2_flush_bytes, timed_count
from kagent_harness.trials import rms

SCREEN_WARMUP_ITERS = 3
SCREEN_WARMUP_MS = 10.0
MAX_VARIANTS = 32
SCREEN_MAX_PROCESSES = 2


def prepare_screen(sup, kernels):
    """Everything of a screen of `kernels` that needs no GPU slot, with supervisor `sup`:
    the variants' process, their import and construction, and a compile dry run of each
    Triton variant that loaded. Returns (Prepared or None, reason); the Prepared's source
    is the tuple of the variants' sources and its language "screen", so only a screen of
    the same variants uses it. With None, the screen does all of it under the slot."""
    from kagent_harness.prepare import Prepared
    t0 = time.monotonic()
    try:
        sup.load_reference()
    except Exception as e:  # noqa: BLE001 - the screen reports the reference's failure
        sup.env.cache.done(sup.job)
        sup.job = None
        return None, f"the reference did not load ({type(e).__name__}: {e})"
    try:
        ready = _start_variants(sup, kernels)
        # Per variant, its compile dry run's COMPILE_ERROR ("VERDICT: reason"), or None.
        compile_errors = []
        with sup.phases("screen: compile dry runs"):
            for i, info in enumerate(ready.get("variants") or []):
                error = None
                if info.get("ok"):
                    sup.child.request({"cmd": "use", "index": i}, timeout=30,
                                      phase=f"variant {i}")
                    try:
                        sup.compile_dry_run(sup.child, "triton")
                    except ChildFailure as f:
                        if f.verdict != P.COMPILE_ERROR:
                            raise
                        error = f"{f.verdict}: {f.reason}"
                compile_errors.append(error)
        sup.log.add(f"screen prepared: {len(kernels)} variants in "
                    f"{time.monotonic() - t0:.2f} s, "
                    f"{sum(1 for e in compile_errors if e)} failed to compile")
        prepared = Prepared(sup.child, sup.job.key, tuple(k["source"] for k in kernels),
                            "screen", ready, compile_errors)
        sup.child = None
        return prepared, ""
    except Exception as e:  # noqa: BLE001 - ChildFailure or the harness's: screen retries
        sup.log.add(f"screen prepare failed: {type(e).__name__}: {e}")
        if sup.child is not None:
            sup.env.pool.retire(sup.child)
        sup.child = None
        return None, f"screen prepare failed: {type(e).__name__}: {e}"
    finally:
        if sup.job is not None:
            sup.env.cache.done(sup.job)
            sup.job = None


def run_screen(sup, kernels, reps, prepared=None):
    """Screens `kernels` ([{source, language}]) with supervisor `sup` (its request holds
    the problem), in `prepared`'s process when given (prepare_screen for these kernels).
    Returns {ok, results: [{index, ok, reason, median_ms}], phases_ms, log, prepared}."""
    t0 = time.monotonic()
    req = sup.req
    results = [None] * len(kernels)
    out = {"ok": True, "results": results, "phases_ms": {}, "log": ""}
    used = prepared is not None
    try:
        with sup.phases("reference load"):
            sup.load_reference()
        job = sup.job
        trial = job.timing_trial()
        with sup.phases("screen: inputs and reference"):
            inputs = job.inputs_of(trial)
            ref_out = job.ref_of(trial, inputs)
        job.remember_input_spec()
        atol, rtol = tolerances(ref_out, req.atol, req.rtol)
        atol_eff = atol * max(1.0, rms(ref_out))
        flush = l2_flush_bytes(sup.device) if req.flush_l2 else 0
        start, ended = 0, []   # ended: the variants whose failure ended a process
        while start < len(kernels):
            if len(ended) == SCREEN_MAX_PROCESSES:
                # A new process would start and compile the rest under the GPU slot
                # (on the H200, seven variants that each crashed held it 67 s): the
                # rest stay unscreened, and the caller measures the kernel as generated.
                why = (f"not screened: {len(ended)} of the screen's processes were ended by "
                       "a variant's failure (variants " + ", ".join(map(str, ended)) + ")")
                for i in range(start, len(kernels)):
                    if results[i] is None:
                        results[i] = {"index": i, "ok": False, "median_ms": 0.0,
                                      "reason": why}
                sup.log.add(why)
                break
            mine, prepared = prepared, None   # sup.child owns its process from here
            start = _screen_from(sup, kernels, start, results, inputs, ref_out, atol_eff,
                                 rtol, flush, reps, mine)
            if start < len(kernels):
                ended.append(start - 1)
    except Exception as e:  # noqa: BLE001 - the reference or the harness failed
        import traceback
        sup.log.add("screen failed:\n" + traceback.format_exc())
        out = {"ok": False, "error": f"{type(e).__name__}: {e}", "results": [],
               "phases_ms": {}, "log": ""}
    finally:
        if prepared is not None:  # not reached: the reference or the inputs failed
            sup.env.pool.retire(prepared.child)
        if sup.child is not None:
            sup.env.pool.retire(sup.child)
            sup.child = None
        if sup.job is not None:
            sup.env.cache.done(sup.job)
            sup.job = None
        sup.release_device_memory()
    for i, r in enumerate(results):
        if r is None:
            results[i] = {"index": i, "ok": False, "reason": "not screened", "median_ms": 0.0}
    # Against the worker's held seconds: what the named phases leave out is here.
    sup.phases.add("supervisor: the whole request", (time.monotonic() - t0) * 1e3)
    out["phases_ms"] = sup.phases.as_dict()
    out["seconds"] = time.monotonic() - t0
    out["prepared"] = used
    good = [r for r in out.get("results", []) if r["ok"]]
    sup.log.add(f"screen: {len(good)} of {len(kernels)} variants correct"
                + (f", fastest #{min(good, key=lambda r: r['median_ms'])['index']}"
                   if good else ""))
    out["log"] = sup.log.tail()
    return out


def _screen_from(sup, kernels, start, results, inputs, ref_out, atol, rtol, flush, reps,
                 prepared=None):
    """Screens kernels[start:] in one process (`prepared`'s when given, else a new one);
    returns the index to go on from (past a variant whose failure killed the process),
    or len(kernels)."""
    if sup.child is not None:
        sup.env.pool.retire(sup.child)
        sup.child = None
    compile_errors = []
    if prepared is not None:
        sup.use_child(prepared.child)
        sup.child.log = sup.log
        sup.child.deadline = time.monotonic() + sup.req.timeout_s
        ready, compile_errors = prepared.ready, prepared.compiled
        sup.log.add(f"prepared screen process {sup.child.proc.pid} used (made "
                    f"{time.monotonic() - prepared.created:.1f} s ago)")
    else:
        ready = _start_variants(sup, kernels)
    child = sup.child
    sup._probe_ipc()
    loaded = ready.get("variants") or []
    spec = output_spec(ref_out)
    for i in range(start, len(kernels)):
        info = loaded[i] if i < len(loaded) else {"ok": False, "message": "not loaded"}
        if results[i] is not None:
            continue
        if not info.get("ok"):
            results[i] = {"index": i, "ok": False, "median_ms": 0.0,
                          "reason": f"{info.get('kind', 'COMPILE_ERROR')}: "
                                    f"{info.get('message', '')}"}
            continue
        if i < len(compile_errors) and compile_errors[i]:
            results[i] = {"index": i, "ok": False, "median_ms": 0.0,
                          "reason": compile_errors[i]}
            continue
        try:
            results[i] = _screen_one(sup, child, i, inputs, ref_out, spec, atol, rtol, flush,
                                     reps)
        except ChildFailure as f:
            results[i] = {"index": i, "ok": False, "median_ms": 0.0,
                          "reason": f"{f.verdict}: {f.reason}"}
            return i + 1
    return len(kernels)


def _start_variants(sup, kernels):
    """A new process for `kernels` as sup.child, every variant imported and built in it;
    returns its ready reply (with `variants`: each one's load outcome)."""
    sup.use_child(sup.take_child(trace=False))
    sources = [k["source"] for k in kernels]
    sup.write_candidate(sup.child, sources[0], "triton", variants=sources)
    with sup.phases("screen: import and construction"):
        return sup.child.checked(sup.child.recv(phase="screen import and construction"),
                                 "screen import and construction")


def _screen_one(sup, child, i, inputs, ref_out, spec, atol, rtol, flush, reps):
    child.request({"cmd": "use", "index": i}, timeout=30, phase=f"variant {i}")
    field = sup.inputs_field(inputs, f"screen{i}")
    bufs, out_field = sup.out_field(spec)
    out_path = os.path.join(child.workdir, f"out_screen_{i}.pt")
    t = time.monotonic()
    with sup.phases("screen: calls"):
        reply = child.request({"cmd": "call", **field, **out_field, "out": out_path,
                               "poison": spec, "reuse": False, "profile_kernels": False},
                              timeout=sup.req.call_timeout_s, phase=f"variant {i}'s call")
    call_s = time.monotonic() - t
    sup.release_inputs(field)
    got = sup.take_outputs(bufs, reply, out_path, ref_out)
    del bufs
    c = compare(ref_out, got, atol, rtol)
    if not c["ok"]:
        return {"index": i, "ok": False, "median_ms": 0.0,
                "reason": f"INCORRECT: {c['reason']}"}
    bufs, out_field = sup.out_field(spec)
    per_call = call_s + 0.002
    limit = min(child.remaining(),
                10.0 + 3.0 * (SCREEN_WARMUP_MS / 1e3 + (SCREEN_WARMUP_ITERS + reps + 23) *
                              per_call))
    with sup.phases("screen: timing"), sup.env.quiet(keep=child):
        reply = child.request({"cmd": "time", "reps": reps,
                               "warmup_iters": SCREEN_WARMUP_ITERS,
                               "warmup_ms": SCREEN_WARMUP_MS, "flush_bytes": flush,
                               "budget_ms": P.TIMED_BUDGET_MS,
                               "out": os.path.join(child.workdir, f"out_screen_t{i}.pt"),
                               **out_field}, timeout=limit,
                              phase=f"variant {i}'s timing (limit {limit:.1f} s)")
    del bufs
    times, walls = reply.get("times_ms"), reply.get("wall_ms")
    # A slow variant's loop stops at the timing budget (timing.py), as a measurement's.
    if not isinstance(times, list) or not isinstance(walls, list) or \
            len(walls) != len(times) or not all(
                isinstance(x, (int, float)) and math.isfinite(x) and x > 0 for x in times) or \
            not all(isinstance(w, (int, float)) and math.isfinite(w) for w in walls) or \
            len(times) != timed_count(walls, reps, P.TIMED_BUDGET_MS):
        return {"index": i, "ok": False, "median_ms": 0.0,
                "reason": "REJECTED: malformed times from the timing loop"}
    return {"index": i, "ok": True, "reason": "",
            "median_ms": P.median(float(x) for x in times)}
