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
