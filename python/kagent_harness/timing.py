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

This matches what triton.testing.do_bench measures (back-to-back calls keep its queue
full) while still synchronizing the device around every call.

On the CPU the same loop runs with the host clock only ("plumbing": the numbers mean
little under the Triton interpreter).
"""

import time

import torch

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


def time_callable(fn, device, reps, warmup_iters, warmup_ms, flush_bytes=0,
                  max_warmup_s=60.0, mark=None, hide_launch=True):
    """Times fn() and returns {"times_ms", "wall_ms", "issue_ms", "warmup_calls",
    "spin_us"}.

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
    while True:
        elapsed = time.perf_counter() - w0
        if n_warm >= warmup_iters and elapsed * 1e3 >= warmup_ms:
            break
        if elapsed >= max_warmup_s and n_warm >= 1:
            break
        call(False)
        n_warm += 1
    for _ in range(int(reps)):
        call(True)
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
