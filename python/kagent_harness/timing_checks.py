"""The supervisor's cross-checks of a candidate's timing, and the timing phase's deadline.

The timing loop necessarily runs in the candidate's own process (timing.time_callable,
driven by child.py), so what it reports is untrusted: these checks hold it against what
the supervisor knows itself (the output of the last timed call, its own clock around the
phase and over a back-to-back burst, the gate's launch counts, the CUPTI trace).
docs/harness.md, "The timing protocol", lists them. A mixin of measure.Supervisor: it
uses the supervisor's request, child, result, gate figures (call_s, min_own, own_names,
triton_hook, trace_path, gate_own_busy_cupti), its job (pytorch_best_ms) and its
_time_in_child.

A short protocol for a hopeless candidate: when the CUPTI trace of the gate says the
candidate's own kernels took at least SHORT_FACTOR x the job's fastest PyTorch path
(eager or torch.compile, timed by this supervisor for this job) and at least
SHORT_MIN_MS per call, it is timed with SHORT_WARMUP warm-up and SHORT_REPS timed calls
instead of the request's: a kernel that slow is not deployed, and its time needs no
more calls to be known within a percent. Every check below still runs on those calls
(the CUPTI one compares the timed calls' own GPU time with the gate's, so a candidate
that does more work in the gate to be timed briefly is rejected). On the H100 suite of
session 25, round candidates at 10x or more of PyTorch's best held 67 s of timing of the
884 s the slot was held, and starting kernels of 200-490 ms 5-9 s each.
"""

import contextlib
import math
import os
import time

from kagent_harness import kernels as K
from kagent_harness import protocol as P
from kagent_harness.compare import compare, output_spec
from kagent_harness.timing import timed_count
from kagent_harness.transfer import Rejection

# The child's median may not be below this fraction of the supervisor's own wall-clock
# time per call in a back-to-back burst (an independent, coarse upper bound).
BURST_FACTOR = 0.5
# The child's median may not be below this fraction of the GPU span of each call's
# kernels as traced by CUPTI, minus CUPTI_SLACK_MS.
CUPTI_FACTOR = 0.95
CUPTI_SLACK_MS = 0.002
# Own-kernel GPU time per timed call vs per gate call (gate calls run without the L2
# flush, so they are if anything faster).
CUPTI_BUSY_FACTOR = 0.5
# Host wall time per call beyond the event time (minus the empty-call calibration) above
# which the work is deemed to finish outside the timed stream (side stream, not joined).
SIDE_STREAM_MIN_MS = 0.02
SIDE_STREAM_FRACTION = 0.2
# Deadlines sized from what a phase should take: the timing phase TIMING_FACTOR x what
# its calls should take at the gate's pace, plus TIMING_MIN_S; the burst likewise; within
# what is left of the request's timeout_s.
TIMING_FACTOR = 3.0
TIMING_MIN_S = 10.0
PING_S = 5.0
# The burst's calls: as many as were timed, but no more than fit in BURST_BUDGET_MS at
# the median the child reported, and never fewer than BURST_MIN_CALLS. It bounds the
# median from below (BURST_FACTOR) and needs a mean, not a median: about BURST_BUDGET_MS
# of back-to-back calls give it (100 of a 5 ms kernel held the GPU half a second more per
# measurement). A slow kernel's calls are long against the burst's fixed cost (a request
# and a synchronize: well under a millisecond), so a few give the mean: 10 calls of a
# 384 ms convolution held the GPU 3.8 s per measurement (the H100, 2026-12-06, session
# 25: 43 of 362 tasks timed kernels of 10 ms or more, and their bursts took 45 s of the
# 884 s held; at this floor they would have taken 15 s). Sized from the reported median,
# not from the gate's pace: a gate call carries milliseconds of protocol, and at the
# gate's pace a 0.1 ms kernel got 13 calls, whose fixed cost made 0.22 ms a call and
# rejected it (the H100, 2026-12-06). A candidate that reports less than it takes only
# gets a longer burst (at most `timed` calls).
BURST_BUDGET_MS = 100.0
BURST_MIN_CALLS = 3
# The short protocol (module comment).
SHORT_FACTOR = 10.0
SHORT_MIN_MS = 5.0
SHORT_WARMUP = 1
SHORT_REPS = 3


def short_timing_reason(gate_own_busy_ms, pytorch_best_ms):
    """Why a candidate whose own kernels took `gate_own_busy_ms` of GPU time per gate call
    (the CUPTI trace; None without one) gets the short protocol against the job's
    fastest PyTorch path `pytorch_best_ms` (None when not timed here), or "" when not."""
    if not gate_own_busy_ms or not pytorch_best_ms or pytorch_best_ms <= 0:
        return ""
    if gate_own_busy_ms < SHORT_MIN_MS or gate_own_busy_ms < SHORT_FACTOR * pytorch_best_ms:
        return ""
    return (f"its own kernels took {gate_own_busy_ms:.3f} ms per gate call (CUPTI), "
            f"{gate_own_busy_ms / pytorch_best_ms:.0f}x the job's fastest PyTorch path "
            f"({pytorch_best_ms:.4f} ms): timed with {SHORT_WARMUP} warm-up and "
            f"{SHORT_REPS} timed calls")


def burst_calls(timed, median_ms):
    """Calls of the supervisor's back-to-back burst after `timed` timed calls whose
    reported median is `median_ms`: min(timed, max(BURST_MIN_CALLS, the calls that fit
    in BURST_BUDGET_MS)); `timed` when the median is not positive."""
    if not median_ms or median_ms <= 0:
        return timed
    fit = math.ceil(BURST_BUDGET_MS / median_ms)
    return max(1, min(timed, max(BURST_MIN_CALLS, fit)))


class TimingChecksMixin:
    @contextlib.contextmanager
    def short_protocol(self):
        """The request's timing parameters set to the short protocol's (and the timing
        budget off, so every one of its calls is timed) while the block runs, then put
        back: the starting kernel after the candidate gets the request's."""
        req = self.req
        saved = (req.timing_reps, req.warmup_iters, req.warmup_ms, req.timing_budget_ms)
        req.timing_reps, req.warmup_iters, req.warmup_ms, req.timing_budget_ms = \
            SHORT_REPS, SHORT_WARMUP, 0.0, 0.0
        try:
            yield
        finally:
            req.timing_reps, req.warmup_iters, req.warmup_ms, req.timing_budget_ms = saved

    def short_protocol_if(self, reason, what, field):
        """short_protocol() when `reason` says why (recorded as `what`'s check and in
        harness[`field`]); a context that changes nothing when it is ""."""
        if not reason:
            return contextlib.nullcontext()
        h = self.result["harness"]
        h["checks"].append(f"{what}: the short protocol: {reason}")
        h[field] = reason
        return self.short_protocol()

    def timed_briefly(self):
        """short_timing_reason for this supervisor's candidate and job."""
        job = getattr(self, "job", None)
        return short_timing_reason(getattr(self, "gate_own_busy_cupti", None),
                                   getattr(job, "pytorch_best_ms", None))

    def _gate_pace_s(self):
        """Seconds per call at the gate's pace (the slowest call after the first, else
        the first; 0 before any): what the timing phase's deadline is sized from."""
        if not self.call_s:
            return 0.0
        return max(self.call_s[1:]) if len(self.call_s) > 1 else self.call_s[0]

    def timing_limit(self):
        """(seconds, words) the timing phase may take: TIMING_FACTOR x its calls (the
        empty-call calibration, warm-up and timed calls) at the gate's pace plus a few
        ms of protocol per call, + TIMING_MIN_S; never beyond the process's budget. A
        candidate whose warm-up never ends (a patched clock), that sleeps or spins when
        timed, is stopped here within seconds, not at the request's whole timeout."""
        req = self.req
        per_call = self._gate_pace_s() + 0.002
        warm, timed = req.warmup_iters * per_call, req.timing_reps * per_call
        budget_s = req.timing_budget_ms / 1e3
        if budget_s > 0:  # a slow call's loops stop early (timing.py)
            warm = min(warm, max(budget_s / 2, P.MIN_WARMUP_CALLS * per_call) + per_call)
            timed = min(timed, max(budget_s, P.MIN_TIMED_REPS * per_call) + per_call)
        expected = 23 * 0.001 + max(req.warmup_ms / 1e3, warm) + timed
        limit = min(self.child.remaining(), TIMING_MIN_S + TIMING_FACTOR * expected)
        return limit, (f"limit {limit:.1f} s: {TIMING_FACTOR:g}x the {expected:.2f} s its "
                       f"warm-up and up to {req.timing_reps} timed calls take at "
                       f"the gate's pace + {TIMING_MIN_S:g} s; a warm-up that does not end, a "
                       "sleep or a patched clock")

    def time_candidate(self, timing_ref, atol, rtol):
        req = self.req
        h = self.result["harness"]
        checks = h["checks"]
        out_path = os.path.join(self.workdir, "out_timing.pt")
        t0 = time.monotonic()
        reply, bufs = self._time_in_child(out_path, "timing", output_spec(timing_ref))
        wall_phase_ms = (time.monotonic() - t0) * 1e3
        self.phases.add("timing: the protocol (incl. handing the output back)", wall_phase_ms)
        times = reply.get("times_ms")
        walls = reply.get("wall_ms")
        if not isinstance(times, list) or not times or len(times) > req.timing_reps or not all(
                isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in times):
            raise Rejection(P.REJECTED, f"timing: expected up to {req.timing_reps} positive "
                            "finite times from the timing loop")
        if not isinstance(walls, list) or len(walls) != len(times) or not all(
                isinstance(w, (int, float)) and math.isfinite(w) for w in walls):
            raise Rejection(P.REJECTED, "timing: malformed wall-clock times")
        n = len(times)
        # The loop stops early only as its rule says (a slow call: budget spent, at least
        # MIN_TIMED_REPS calls); any other count is a loop that did not run as sent.
        want = timed_count(walls, req.timing_reps, req.timing_budget_ms)
        if n != want:
            raise Rejection(P.REJECTED, f"timing: {n} timed calls where the loop's rule gives "
                            f"{want} (up to {req.timing_reps}, budget "
                            f"{req.timing_budget_ms:g} ms of calls)")
        if n < req.timing_reps:
            checks.append(f"timing: {n} timed calls (a slow call: {sum(walls):.0f} ms of calls, "
                          f"budget {req.timing_budget_ms:g} ms)")
        med = P.median(times)
        issues = reply.get("issue_ms")
        if isinstance(issues, list) and issues:
            h.setdefault("host_issue_median_ms", {})["candidate"] = P.median(issues)
        # 1. The output of the timed calls must be right.
        got = self.take_outputs(bufs, reply, out_path, timing_ref)
        del bufs
        c = compare(timing_ref, got, atol, rtol)
        if not c["ok"]:
            raise Rejection(P.REJECTED, "the timed calls returned a wrong answer (behaves "
                            "differently when timed): " + c["reason"])
        checks.append("timing: output of the last timed call verified")
        # 2. The candidate cannot claim more time than passed.
        if sum(times) > wall_phase_ms * 1.05 + 5.0:
            raise Rejection(P.REJECTED, f"timing: reported times sum to {sum(times):.3f} ms, "
                            f"more than the {wall_phase_ms:.3f} ms of the whole phase")
        # 3. Own kernels per call while timed, against the gate (Triton launch hook).
        calls = int(reply.get("calls", 0) or 0)
        if self.triton_hook and self.min_own and calls > 0:
            per_call = float(reply.get("own_launches", 0) or 0) / calls
            if per_call + 1e-9 < self.min_own:
                raise Rejection(P.REJECTED, f"timing: {per_call:.2f} own Triton launches per "
                                f"call while timed, {self.min_own} in every gate call "
                                "(work skipped when timed: caching or a shortcut)")
            checks.append(f"timing: {per_call:.2f} own Triton launches per call")
        # 4. Work finishing outside the timed stream (child-reported wall vs events).
        if self.device == "cuda":
            noop_gap = float(reply.get("noop_wall_ms", 0.0)) - float(reply.get("noop_event_ms", 0.0))
            wall_med = P.median(walls)
            excess = wall_med - med - max(0.0, noop_gap)
            h["wall_median_ms"] = wall_med
            if excess > SIDE_STREAM_MIN_MS and excess > SIDE_STREAM_FRACTION * wall_med:
                raise Rejection(P.REJECTED, f"timing: host wall time per call {wall_med:.4f} ms "
                                f"against event time {med:.4f} ms: work completes after the "
                                "timed stream's end event (side stream not joined?)")
        # 5. The supervisor's own clock: a back-to-back burst of calls.
        t_burst = time.monotonic()
        rtt = min(self._ping_ms() for _ in range(3))
        nb = burst_calls(n, med)
        limit = min(self.child.remaining(),
                    TIMING_MIN_S + TIMING_FACTOR * nb * self._gate_pace_s())
        t1 = time.monotonic()
        self.child.request({"cmd": "burst", "n": nb}, timeout=limit,
                           phase=f"wall-clock burst (limit {limit:.1f} s: {TIMING_FACTOR:g}x "
                                 f"{nb} calls at the gate's pace + {TIMING_MIN_S:g} s)")
        burst_ms = (time.monotonic() - t1) * 1e3
        self.phases.add("timing: the burst (incl. its pings)", (time.monotonic() - t_burst) * 1e3)
        per_call = max(0.0, burst_ms - rtt) / nb
        h["supervisor_burst_ms_per_call"] = per_call
        if med < BURST_FACTOR * per_call - 0.005 and self.device != "cuda":
            h["warnings"].append(f"timing: median {med:.4f} ms below {BURST_FACTOR} x the "
                                 f"supervisor's {per_call:.4f} ms/call (CPU: not enforced)")
        elif med < BURST_FACTOR * per_call - 0.005:
            raise Rejection(P.REJECTED, f"timing: reported median {med:.4f} ms is below "
                            f"{BURST_FACTOR} x the {per_call:.4f} ms per call the supervisor's "
                            "clock measured over a back-to-back burst")
        checks.append(f"timing: median {med:.4f} ms consistent with the supervisor's clock "
                      f"({per_call:.4f} ms/call over {nb} calls back-to-back)")
        # 6. CUPTI: the kernels' own GPU time per call, and kernels per call.
        if self.trace_path:
            with self.phases("timing: the CUPTI trace's check"):
                self._check_cupti_timing(med, n)
        self.result["candidate"] = P.timing_stats(times)

    def _ping_ms(self):
        t = time.monotonic()
        self.child.request({"cmd": "ping"}, timeout=PING_S, phase="ping")
        return (time.monotonic() - t) * 1e3

    def _check_cupti_timing(self, med, reps):
        h = self.result["harness"]
        trace = K.read_trace(self.trace_path)
        if trace is None:
            h["warnings"].append("CUPTI trace file missing after timing")
            return
        an = K.analyze_timing(trace, self.own_names, reps)
        if an is None or an["calls"] < reps:
            h["warnings"].append("CUPTI trace does not cover the timed calls; "
                                 "cross-check skipped")
            return
        span_med = P.median(an["span_ms"])
        h["cupti_span"] = P.timing_stats(an["span_ms"])
        h["cupti_busy"] = P.timing_stats(an["busy_ms"])
        if med < CUPTI_FACTOR * span_med - CUPTI_SLACK_MS:
            raise Rejection(P.REJECTED, f"timing: events report {med:.4f} ms per call but the "
                            f"candidate's kernels span {span_med:.4f} ms on the GPU (CUPTI)")
        gmin = getattr(self, "gate_own_min_cupti", None)
        if gmin and min(an["own"]) < gmin:
            raise Rejection(P.REJECTED, f"timing: a timed call launched {min(an['own'])} own "
                            f"kernels, every gate call at least {gmin} (CUPTI)")
        gbusy = getattr(self, "gate_own_busy_cupti", None)
        tbusy = P.median(an["own_busy_ms"])
        if gbusy and tbusy < CUPTI_BUSY_FACTOR * gbusy:
            raise Rejection(P.REJECTED, f"timing: the candidate's own kernels ran {tbusy:.4f} ms "
                            f"per timed call against {gbusy:.4f} ms per gate call (CUPTI): "
                            "less work when timed (caching or a shortcut)")
        h["checks"].append(f"CUPTI: timed calls span {span_med:.4f} ms on the GPU, "
                           f"events {med:.4f} ms")
