"""The one timing function. Eager, torch.compile and the candidate all go through it.

GPU protocol, per call (warm-up calls included, so every call looks the same to a tracer):
  1. flush L2: zero a buffer of flush_bytes (>= 2x L2) on the current stream;
  2. torch.cuda.synchronize() (device-wide);
  3. host clock t0; start event recorded on the current stream;
  4. fn();
  5. end event recorded; torch.cuda.synchronize() (device-wide, so work left on side
     streams is finished before the next call); host clock t1.
Warm-up runs until both warmup_iters calls and warmup_ms have passed (capped at
max_warmup_s), then `reps` timed calls. Per call it reports the event time (the
measurement) and the host wall time t1 - t0 (a cross-check: work the end event does not
cover, such as an unjoined side stream, shows up as wall >> event).

On the CPU the same loop runs with the host clock only ("plumbing": the numbers mean
little under the Triton interpreter).
"""

import time

import torch


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def time_callable(fn, device, reps, warmup_iters, warmup_ms, flush_bytes=0,
                  max_warmup_s=60.0, mark=None):
    """Times fn() and returns {"times_ms", "wall_ms", "warmup_calls"}.

    mark(name), when given, is called with "timing_begin" before the first warm-up call
    and "timing_end" after the last timed call (CUPTI markers).
    """
    flush = None
    if flush_bytes and flush_bytes > 0:
        flush = torch.empty(max(1, int(flush_bytes) // 4), dtype=torch.int32, device=device)
    use_events = device == "cuda"
    times, walls = [], []

    def call(timed):
        if flush is not None:
            flush.zero_()
        _sync(device)
        if use_events:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            if timed:
                times.append(float(start.elapsed_time(end)))
                walls.append((t1 - t0) * 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            t1 = time.perf_counter()
            if timed:
                times.append((t1 - t0) * 1e3)
                walls.append((t1 - t0) * 1e3)

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
    return {"times_ms": times, "wall_ms": walls, "warmup_calls": n_warm}


def l2_flush_bytes(device):
    """At least twice the L2 of the current device (64 MiB floor); 8 MiB on the CPU."""
    if device != "cuda":
        return 8 * 1024 * 1024
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    l2 = int(getattr(props, "L2_cache_size", 0) or 0)
    return max(2 * l2, 64 * 1024 * 1024)
