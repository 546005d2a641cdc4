"""The supervisor's cross-checks of the candidate's timing, driven with a scripted fake
child so that the GPU-only rules (side stream, burst bound, CUPTI) run on the CPU."""

import json
import time

import pytest
import torch

from conftest import read
from kagent_harness import measure as M
from kagent_harness import protocol as P

REPS = 4


class FakeChild:
    """Answers like the child would; `reply` is the time command's answer."""

    def __init__(self, reply, out, burst_ms_per_call, sleep_timed=False):
        self.sleep_timed = sleep_timed
        self.reply = dict(reply, ok=True)
        self.out = out
        self.burst_ms_per_call = burst_ms_per_call

    def remaining(self):  # the process's budget left, seconds
        return 600.0

    def request(self, msg, timeout=None, phase=""):
        if msg["cmd"] == "time":
            torch.save(self.out, msg["out"])
            if self.sleep_timed:  # the calls take the time reported
                time.sleep(sum(self.reply["times_ms"]) / 1e3)
            return self.reply
        if msg["cmd"] == "burst":
            self.burst_n = msg["n"]
        if msg["cmd"] == "burst" and self.burst_ms_per_call > 0:
            # No sleep(0): on a loaded machine it yields the CPU for a whole time slice,
            # which the supervisor's clock would count as the candidate's time.
            time.sleep(self.burst_ms_per_call * msg["n"] / 1e3)
        return {"ok": True}


def supervisor(tmp_path, monkeypatch, trace=None, own=("mine",)):
    req = P.Request({"problem_source": read("problem_relu_add.py"), "device": "cpu",
                     "timing_reps": REPS, "warmup_iters": 1, "warmup_ms": 0})
    sup = M.Supervisor(req, P.Log())
    sup.device = "cuda"  # the GPU-only rules
    monkeypatch.setattr(M, "l2_flush_bytes", lambda device: 0)
    monkeypatch.setattr(M.Supervisor, "_load_outputs",
                        lambda self, path, ref: torch.load(path, weights_only=True))
    sup.workdir = str(tmp_path)
    sup.triton_hook = False
    sup.min_own = None
    sup.own_names = list(own)
    sup.trace_path = None
    if trace is not None:
        p = tmp_path / "trace.jsonl"
        p.write_text("\n".join(json.dumps(r) for r in trace))
        sup.trace_path = str(p)
    return sup


def reply(times, walls, noop_wall=0.02, noop_event=0.005):
    return {"times_ms": times, "wall_ms": walls, "warmup_calls": 1, "calls": 1 + len(times),
            "own_launches": 0, "noop_wall_ms": noop_wall, "noop_event_ms": noop_event}


REF = [torch.ones(4)]


def run(sup, rep, out=REF, burst=0.0, sleep_timed=False):
    # burst: the fake child's sleep per call of the supervisor's back-to-back burst. The
    # default 0 keeps the passing cases clear of the burst bound however much a loaded
    # machine oversleeps; the burst rule's own test sleeps far beyond the reported times.
    sup.child = FakeChild(rep, out, burst, sleep_timed)
    sup.time_candidate(REF, 1e-4, 1e-4)
    return sup.result


def test_honest_timing_is_accepted(tmp_path, monkeypatch):
    r = run(supervisor(tmp_path, monkeypatch), reply([1.0, 1.1, 0.9, 1.0], [1.03] * 4))
    assert r["candidate"]["count"] == REPS and r["candidate"]["median_ms"] == 1.0
    assert any("consistent" in c for c in r["harness"]["checks"])


def test_wrong_answer_when_timed(tmp_path, monkeypatch):
    with pytest.raises(M.Rejection, match="timed calls returned a wrong answer"):
        run(supervisor(tmp_path, monkeypatch), reply([1.0] * 4, [1.03] * 4),
            out=[torch.zeros(4)])


def test_side_stream_gap(tmp_path, monkeypatch):
    with pytest.raises(M.Rejection, match="side stream"):
        run(supervisor(tmp_path, monkeypatch), reply([0.01] * 4, [1.0] * 4))


def test_under_reported_times_against_the_supervisor_clock(tmp_path, monkeypatch):
    with pytest.raises(M.Rejection, match="back-to-back burst"):
        run(supervisor(tmp_path, monkeypatch), reply([0.1] * 4, [0.11] * 4), burst=5.0)


def test_the_burst_is_cut_to_its_budget_at_the_reported_median():
    from kagent_harness.timing_checks import BURST_MIN_CALLS, burst_calls
    assert burst_calls(100, 0.0) == 100          # no median: as many as were timed
    assert burst_calls(100, 0.1) == 100          # a fast call: every timed call
    assert burst_calls(100, 5.0) == 20           # 5 ms: 100 ms of calls
    assert burst_calls(100, 30.0) == 4           # 30 ms: still 100 ms of calls
    assert BURST_MIN_CALLS == 3
    assert burst_calls(100, 300.0) == BURST_MIN_CALLS  # a slow call: a few give the mean
    assert burst_calls(2, 300.0) == 2            # never more than were timed


def test_a_fast_kernel_gets_every_timed_call_whatever_the_gate_pace(tmp_path, monkeypatch):
    # A 0.1 ms kernel whose gate calls took 20 ms each (the gate's protocol): sized at the
    # gate's pace its burst was 13 calls on the H100, and their fixed cost rejected it.
    sup = supervisor(tmp_path, monkeypatch)
    sup.req.timing_reps = 40
    sup.call_s = [0.5, 0.02, 0.02]
    r = run(sup, reply([0.1] * 40, [0.11] * 40), sleep_timed=True)
    assert sup.child.burst_n == 40
    assert any("over 40 calls back-to-back" in c for c in r["harness"]["checks"])


def test_a_slow_kernel_gets_a_short_burst(tmp_path, monkeypatch):
    sup = supervisor(tmp_path, monkeypatch)
    sup.req.timing_reps = 40
    sup.call_s = [0.5, 0.02, 0.02]
    r = run(sup, reply([20.0] * 40, [20.3] * 40), sleep_timed=True)
    assert sup.child.burst_n == 5   # 100 ms of 20 ms calls
    assert any("over 5 calls back-to-back" in c for c in r["harness"]["checks"])
    # The burst is a phase of its own, inside the timing's.
    assert "timing: the burst (incl. its pings)" in sup.phases.ms


def test_times_beyond_the_phase_wall_clock(tmp_path, monkeypatch):
    with pytest.raises(M.Rejection, match="more than"):
        run(supervisor(tmp_path, monkeypatch), reply([500.0] * 4, [500.0] * 4), burst=0.0)


def test_missing_or_bad_times(tmp_path, monkeypatch):
    with pytest.raises(M.Rejection, match="loop's rule gives 4"):
        run(supervisor(tmp_path, monkeypatch), reply([1.0] * 3, [1.0] * 3))
    with pytest.raises(M.Rejection, match="positive finite"):
        run(supervisor(tmp_path, monkeypatch), reply([1.0] * 5, [1.0] * 5))
    with pytest.raises(M.Rejection, match="positive finite"):
        run(supervisor(tmp_path, monkeypatch), reply([1.0, 1.0, -1.0, 1.0], [1.0] * 4))


def test_a_slow_call_stops_at_the_budget_and_no_sooner(tmp_path, monkeypatch):
    # 30 reps asked, a 100 ms budget: 20 ms calls stop after MIN_TIMED_REPS (10) calls.
    def slow_sup():
        sup = supervisor(tmp_path, monkeypatch)
        sup.req.timing_reps, sup.req.timing_budget_ms = 30, 100.0
        return sup
    r = run(slow_sup(), reply([20.0] * 10, [20.5] * 10), sleep_timed=True)
    assert r["candidate"]["count"] == P.MIN_TIMED_REPS
    assert any("10 timed calls (a slow call" in c for c in r["harness"]["checks"])
    for n in (9, 12):  # fewer than the rule allows, or more than it would have made
        with pytest.raises(M.Rejection, match="timed calls where the loop's rule gives"):
            run(slow_sup(), reply([20.0] * n, [20.5] * n), sleep_timed=True)
    # 1 ms calls never spend the budget: every rep is due.
    with pytest.raises(M.Rejection, match="loop's rule gives 30"):
        run(slow_sup(), reply([1.0] * 10, [1.03] * 10))


def _timing_trace(span_ns, own_per_call=1):
    flush = "vectorized_elementwise_kernel<FillFunctor>"
    recs = [{"type": "marker", "name": "flush_begin", "ts_ns": 0},
            {"type": "kernel", "name": flush, "start_ns": 1, "end_ns": 2, "stream": 7},
            {"type": "marker", "name": "flush_end", "ts_ns": 3},
            {"type": "marker", "name": "timing_begin", "ts_ns": 10}]
    t = 100
    for _ in range(1 + REPS):
        recs.append({"type": "kernel", "name": flush, "start_ns": t, "end_ns": t + 10,
                     "stream": 7})
        for j in range(own_per_call):
            recs.append({"type": "kernel", "name": "mine", "start_ns": t + 20 + j,
                         "end_ns": t + 20 + j + span_ns // max(1, own_per_call), "stream": 7})
        t += 10 * span_ns + 1000
    recs.append({"type": "marker", "name": "timing_end", "ts_ns": t})
    return recs


def test_cupti_span_longer_than_the_events(tmp_path, monkeypatch):
    sup = supervisor(tmp_path, monkeypatch, trace=_timing_trace(2_000_000))  # 2 ms spans
    with pytest.raises(M.Rejection, match="CUPTI"):
        run(sup, reply([1.0] * 4, [1.03] * 4))


def test_cupti_less_own_work_when_timed(tmp_path, monkeypatch):
    sup = supervisor(tmp_path, monkeypatch, trace=_timing_trace(100_000))  # 0.1 ms
    sup.gate_own_busy_cupti = 0.9  # ms per gate call
    with pytest.raises(M.Rejection, match="less work when timed"):
        run(sup, reply([0.2] * 4, [0.23] * 4))


def test_cupti_consistent_trace_passes(tmp_path, monkeypatch):
    sup = supervisor(tmp_path, monkeypatch, trace=_timing_trace(900_000))  # 0.9 ms
    sup.gate_own_busy_cupti = 0.9
    sup.gate_own_min_cupti = 1
    r = run(sup, reply([1.0] * 4, [1.03] * 4))
    assert r["harness"]["cupti_span"]["median_ms"] == pytest.approx(0.9)


def test_the_short_protocol_is_for_kernels_far_slower_than_pytorch():
    from kagent_harness.timing_checks import (SHORT_FACTOR, SHORT_MIN_MS,
                                              short_timing_reason)
    # 360 ms of own kernels against torch.compile's 2.3 ms (a convolution's first kernel).
    why = short_timing_reason(360.0, 2.3)
    assert "157x" in why and "timed with 1 warm-up and 3 timed calls" in why
    assert short_timing_reason(SHORT_FACTOR * 2.0, 2.0) != ""   # at the factor
    assert short_timing_reason(SHORT_FACTOR * 2.0 - 0.01, 2.0) == ""
    # Fast kernels keep the whole protocol however far behind: below SHORT_MIN_MS.
    assert short_timing_reason(SHORT_MIN_MS - 0.1, 0.01) == ""
    # No trace, or no PyTorch time of this job here: the whole protocol.
    assert short_timing_reason(None, 2.0) == ""
    assert short_timing_reason(50.0, None) == ""
    assert short_timing_reason(50.0, 0.0) == ""


def test_a_hopeless_candidate_is_timed_briefly_and_checked_the_same(tmp_path, monkeypatch):
    sup = supervisor(tmp_path, monkeypatch)
    sup.req.timing_reps = 100
    sup.req.timing_budget_ms = 1000.0

    class Job:
        pytorch_best_ms = 2.0
    sup.job = Job()
    sup.gate_own_busy_cupti = 60.0     # 30x the job's fastest PyTorch path
    why = sup.timed_briefly()
    assert why
    sent = {}
    child = FakeChild(reply([60.0] * 3, [60.2] * 3), REF, 0.0, sleep_timed=True)
    real = child.request

    def record(msg, timeout=None, phase=""):
        if msg["cmd"] == "time":
            sent.update(msg)
        return real(msg, timeout, phase)
    child.request = record
    sup.child = child
    with sup.short_protocol():
        sup.time_candidate(REF, 1e-4, 1e-4)
    assert (sent["reps"], sent["warmup_iters"], sent["warmup_ms"], sent["budget_ms"]) == \
        (3, 1, 0.0, 0.0)
    assert sup.result["candidate"]["count"] == 3
    assert child.burst_n == 3                           # the burst still runs
    # The request's own protocol is back for whatever is timed next (the starting kernel).
    assert (sup.req.timing_reps, sup.req.warmup_iters, sup.req.timing_budget_ms) == \
        (100, 1, 1000.0)
    # A reply with the request's count instead of the short one is rejected as before.
    sup.child = FakeChild(reply([60.0] * 4, [60.2] * 4), REF, 0.0, sleep_timed=True)
    with pytest.raises(M.Rejection, match="expected up to 3 positive"):
        with sup.short_protocol():
            sup.time_candidate(REF, 1e-4, 1e-4)
    assert sup.req.timing_reps == 100
    # Kernels near PyTorch's time keep the whole protocol.
    sup.gate_own_busy_cupti = 6.0
    assert sup.timed_briefly() == ""


def test_the_job_keeps_pytorchs_best_for_the_candidate_timed_after(monkeypatch):
    # The real path on the CPU: the baselines run first in a request, so the same
    # request's candidate sees the job's fastest PyTorch time; forced hopeless, the
    # candidate's process times it with the short protocol, checks and all.
    from conftest import measure
    seen = []

    def hopeless(self):
        seen.append(self.job.pytorch_best_ms)
        return "forced by the test"
    monkeypatch.setattr(M.Supervisor, "timed_briefly", hopeless)
    r = measure("problem_relu_add.py", "cand_relu_add_good.py", baselines=["eager"],
                timing_reps=5)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"]
    assert seen == [r["eager"]["median_ms"]]
    assert r["candidate"]["count"] == 3 and r["harness"]["short_timing"] == "forced by the test"
    assert any(c.startswith("timing: the short protocol") for c in r["harness"]["checks"])


def test_a_hopeless_starting_kernel_gets_the_short_protocol_too(monkeypatch):
    # The real path on the CPU (no trace, so the rule is forced): the starting kernel's
    # timing after the candidate's asks the rule with the job's PyTorch best and the
    # starting kernel's own GPU time from an earlier traced gate of it (none here).
    from conftest import measure
    asked = []

    def hopeless(own_busy_ms, pytorch_best_ms):
        asked.append((own_busy_ms, pytorch_best_ms))
        return "forced by the test"
    monkeypatch.setattr(M, "short_timing_reason", hopeless)
    r = measure("problem_relu_add.py", "cand_relu_add_good.py", baselines=["eager"],
                timing_reps=5, reference_kernel_source=read("cand_relu_add_good.py"))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"]
    assert asked == [(None, r["eager"]["median_ms"])]
    assert r["reference_kernel"]["count"] == 3
    assert r["candidate"]["count"] == 5    # the candidate's own rule found nothing
    assert r["harness"]["short_timing_starting_kernel"] == "forced by the test"
    assert M._source_key("a") == M._source_key("a") != M._source_key("b")


def test_the_gates_own_gpu_time_is_kept_for_the_source_as_a_starting_kernel(monkeypatch):
    # As if the gate's CUPTI trace had said 42 ms of own kernels per call: the job keeps
    # it for the source, and the same source as the starting kernel, timed after, gets
    # the short protocol by the real rule (eager on the CPU is far below 4.2 ms).
    from conftest import measure
    init = M.Supervisor.__init__

    def traced(self, *a, **k):
        init(self, *a, **k)
        self.gate_own_busy_cupti = 42.0
    monkeypatch.setattr(M.Supervisor, "__init__", traced)
    r = measure("problem_relu_add.py", "cand_relu_add_good.py", baselines=["eager"],
                timing_reps=5, reference_kernel_source=read("cand_relu_add_good.py"))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"]
    assert r["eager"]["median_ms"] * 10 <= 42.0
    assert r["candidate"]["count"] == 3 and "42.000 ms per gate call" in \
        r["harness"]["short_timing"]
    assert r["reference_kernel"]["count"] == 3
    assert "42.000 ms" in r["harness"]["short_timing_starting_kernel"]
