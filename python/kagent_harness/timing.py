"""The one timing function. Eager, torch.compile and the candidate all go through it.

GPU protocol, per call (warm-up calls included, so every call looks the same to a tracer):
  1. torch.cuda.synchronize() (device-wide: the previous call, side streams included, is
     finished);
  2. a spin kernel of `spin_us` on the current stream, then the L2 flush (zero a buffer
     of flush_bytes, >= 2x L2). The spin keeps the GPU busy while the host issues the
     start event and fn()'s launches, so that the host's launch latency (Python, guards
     of a compiled function, Triton's launcher) is not timed as GPU time: the start event
     fires when the flush ends, and by then fn()'s kernels are queued behind it. spin_us
     follows fn()'s measured host issue time (1.5x its recent maximum plus 20 us, capped
     at 20 ms); a call whose issue outlasts the spin still shows the gap, honestly;
  3. start event recorded; fn(); end event recorded;
  4. end.synchronize() (host time t_end when the timed stream is done), then
     torch.cuda.synchronize() (host time t1).
Per call it reports the event time (the measurement), the host issue time of fn(), and
"wall" = event time + (t1 - t_end): work the end event does not cover, such as an
unjoined side stream still running, makes wall >> event (the supervisor's check).
Warm-up runs until both warmup_iters calls and warmup_ms have passed (capped at
max_warmup_s), then `reps` timed calls.

A slow call stops both loops early, as triton.testing.do_bench sizes its loops by time:
with a budget_ms, the warm-up also ends once MIN_WARMUP_CALLS calls and
max(warmup_ms, budget_ms / 2) have passed, and the timed loop ends once MIN_TIMED_REPS
timed calls have taken budget_ms by their wall times (timed_count, which the supervisor
uses to check the count it gets back). At the default budget (TIMED_BUDGET_MS) a call
under 10 ms gets all 100 reps and 25 warm-up calls; a 400 ms convolution gets 10 and 3
instead of 100 and 25 (on the H100, 437 ms calls held the GPU 104 s per measurement).

This matches what triton.testing.do_bench measures (back-to-back calls keep its queue
full) while still synchronizing the device around every call.

On the CPU the same loop runs with the host clock only ("plumbing": the numbers mean
little under the Triton interpreter).
"""

import time

import torch

from kagent_harness.protocol import MIN_TIMED_REPS, MIN_WARMUP_CALLS

SPIN_MIN_US = 20.0
SPIN_MAX_US = 20000.0
_cycles_per_us = None


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def _spin_cycles_per_us():
    """SM clock cycles per microsecond for torch.cuda._sleep, measured once per process
    (the shortest of a few 200k-cycle spins, so the estimate errs towards longer spins)."""
    global _cycles_per_us
    if _cycles_per_us is None:
        best = None
        for _ in range(3):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            torch.cuda._sleep(200000)
            b.record()
            b.synchronize()
            ms = a.elapsed_time(b)
            best = ms if best is None else min(best, ms)
        _cycles_per_us = 200000.0 / max(best * 1e3, 1.0)
    return _cycles_per_us


def spin(us):
    """Keeps the current stream busy for about `us` microseconds."""
    if us > 0:
        torch.cuda._sleep(max(1, int(us * _spin_cycles_per_us())))


def timed_count(walls_ms, reps, budget_ms):
    """How many timed calls the loop makes when its calls take `walls_ms` (wall ms each,
    in order): `reps`, or fewer once at least MIN_TIMED_REPS calls have taken budget_ms
    (no budget when budget_ms <= 0)."""
    total = 0.0
    for i, w in enumerate(walls_ms[:int(reps)]):
        total += float(w)
        if budget_ms > 0 and i + 1 >= MIN_TIMED_REPS and total >= budget_ms:
            return i + 1
    return int(reps)


def time_callable(fn, device, reps, warmup_iters, warmup_ms, flush_bytes=0,
                  max_warmup_s=60.0, mark=None, hide_launch=True, budget_ms=0.0):
    """Times fn() and returns {"times_ms", "wall_ms", "issue_ms", "warmup_calls",
    "spin_us"}: `reps` timed calls, fewer for a slow fn when budget_ms > 0 (the module
    comment; timed_count).

    mark(name), when given, is called with "timing_begin" before the first warm-up call
    and "timing_end" after the last timed call (CUPTI markers). hide_launch=False drops
    the spin (step 2), for a calibration of the bare protocol.
    """
    flush = None
    if flush_bytes and flush_bytes > 0:
        flush = torch.empty(max(1, int(flush_bytes) // 4), dtype=torch.int32, device=device)
    use_events = device == "cuda"
    times, walls, issues = [], [], []
    recent_issue_us = []
    state = {"spin_us": 100.0 if (use_events and hide_launch) else 0.0}

    def call(timed):
        if use_events:
            torch.cuda.synchronize()
            spin(state["spin_us"])
            if flush is not None:
                flush.zero_()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            i0 = time.perf_counter()
            fn()
            i1 = time.perf_counter()
            end.record()
            end.synchronize()
            t_end = time.perf_counter()
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            issue_us = (i1 - i0) * 1e6
            if not timed and hide_launch:
                recent_issue_us.append(issue_us)
                del recent_issue_us[:-10]
                state["spin_us"] = min(SPIN_MAX_US, max(SPIN_MIN_US,
                                                        1.5 * max(recent_issue_us) + 20.0))
            if timed:
                ev = float(start.elapsed_time(end))
                times.append(ev)
                walls.append(ev + (t1 - t_end) * 1e3)
                issues.append(issue_us / 1e3)
        else:
            if flush is not None:
                flush.zero_()
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            if timed:
                times.append((t1 - t0) * 1e3)
                walls.append((t1 - t0) * 1e3)
                issues.append((t1 - t0) * 1e3)

    if mark:
        mark("timing_begin")
    w0 = time.perf_counter()
    n_warm = 0
    warm_budget_ms = max(warmup_ms, budget_ms / 2) if budget_ms > 0 else None
    while True:
        elapsed = time.perf_counter() - w0
        if n_warm >= warmup_iters and elapsed * 1e3 >= warmup_ms:
            break
        if warm_budget_ms is not None and n_warm >= MIN_WARMUP_CALLS and \
                elapsed * 1e3 >= warm_budget_ms:
            break
        if elapsed >= max_warmup_s and n_warm >= 1:
            break
        call(False)
        n_warm += 1
    timed_ms = 0.0
    for _ in range(int(reps)):
        call(True)
        timed_ms += walls[-1]
        if budget_ms > 0 and len(walls) >= MIN_TIMED_REPS and timed_ms >= budget_ms:
            break
    _sync(device)
    if mark:
        mark("timing_end")
    return {"times_ms": times, "wall_ms": walls, "issue_ms": issues, "warmup_calls": n_warm,
            "spin_us": state["spin_us"]}


def l2_flush_bytes(device):
    """At least twice the L2 of the current device (64 MiB floor); 8 MiB on the CPU."""
    if device != "cuda":
        return 8 * 1024 * 1024
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    return max(2 * l2, 64 * 1024 * 1024)
