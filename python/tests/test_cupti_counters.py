"""The CUPTI backend's counter passes (cupti_counters.collect), the request field and the
child's use of them. The library is a test double shaped like the ctypes one (the GPU
seam); the real library runs only on a GPU (tests/gpu/cupti_vs_ncu.sh)."""

import pytest

from kagent_harness import child
from kagent_harness import cupti_counters as C
from kagent_harness import protocol as P


class FakeCountersLib:
    """The five functions of range_counters.h, with CUPTI's pass bookkeeping: `passes`
    passes are needed; pass_end says 1 after the last. `fail` names a call that fails."""

    def __init__(self, passes=3, fail=None, never_done=False):
        self.passes, self.fail, self.never_done = passes, fail, never_done
        self.calls = []
        self.submitted = 0
        self.active = False

    def kagent_cupti_counters_begin(self, metrics, max_ranges):
        self.calls.append(("begin", metrics.decode(), max_ranges))
        if self.fail == "begin":
            return -1
        self.active = True
        return self.passes

    def kagent_cupti_counters_pass_begin(self):
        self.calls.append(("pass_begin",))
        return -1 if self.fail == "pass_begin" else 0

    def kagent_cupti_counters_pass_end(self):
        self.calls.append(("pass_end",))
        if self.fail == "pass_end":
            return -1
        self.submitted += 1
        return 1 if self.submitted >= self.passes and not self.never_done else 0

    def kagent_cupti_counters_end(self, path):
        self.calls.append(("end", path.decode()))
        complete = self.submitted >= self.passes and not self.never_done
        self.active = False
        return 0 if complete and self.fail != "end" else -1

    def kagent_cupti_counters_error(self):
        return b"CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"


class DroppingCountersLib(FakeCountersLib):
    """A library with end_unless_dropped: a pass of more kernels than the collection's
    max_ranges drops ranges (`kernels` per forward), and then nothing is written."""

    def __init__(self, kernels, passes=2):
        super().__init__(passes=passes)
        self.kernels = kernels
        self.bound = 0

    def kagent_cupti_counters_begin(self, metrics, max_ranges):
        self.bound, self.submitted = max_ranges, 0
        return super().kagent_cupti_counters_begin(metrics, max_ranges)

    def kagent_cupti_counters_end_unless_dropped(self, path):
        self.calls.append(("end_unless_dropped", path.decode()))
        self.active = False
        return 2 if self.kernels > self.bound else 0


def test_a_small_bound_first_and_the_full_one_only_when_ranges_were_dropped():
    few = DroppingCountersLib(kernels=3)
    res = C.collect(few, ["m.sum"], lambda: None, lambda: None, "/t/c.jsonl")
    assert res["ok"] and res["passes"] == 2 and res["max_ranges"] == C.FIRST_MAX_RANGES
    assert [c for c in few.calls if c[0] == "begin"] == [("begin", "m.sum", C.FIRST_MAX_RANGES)]
    assert few.calls[-1] == ("end_unless_dropped", "/t/c.jsonl")

    many = DroppingCountersLib(kernels=C.FIRST_MAX_RANGES + 1)
    forwards = []
    res = C.collect(many, ["m.sum"], lambda: forwards.append(1), lambda: None, "/t/c.jsonl")
    assert res["ok"] and res["max_ranges"] == C.MAX_RANGES
    assert [c[2] for c in many.calls if c[0] == "begin"] == [C.FIRST_MAX_RANGES, C.MAX_RANGES]
    # The second collection ends with the plain end, which writes even if it dropped.
    assert many.calls[-1] == ("end", "/t/c.jsonl")
    assert res["passes"] == len(forwards) == 4


@pytest.mark.parametrize("kernels,bound", [(None, C.FIRST_MAX_RANGES), (0, C.FIRST_MAX_RANGES),
                                            (1, C.MIN_RANGES), (4, 8), (5, 16), (9, 32),
                                            (300, 1024), (5000, C.MAX_RANGES)])
def test_the_first_bound_is_twice_the_warm_up_kernels_as_a_power_of_two(kernels, bound):
    assert C.first_bound(kernels) == bound


def test_a_counted_forward_sizes_the_first_collection_and_a_surprise_still_retries():
    few = DroppingCountersLib(kernels=3)
    res = C.collect(few, ["m.sum"], lambda: None, lambda: None, "/t/c.jsonl",
                    kernels_per_forward=3)
    assert res["ok"] and res["max_ranges"] == 8 and res["kernels_per_forward"] == 3
    assert [c[2] for c in few.calls if c[0] == "begin"] == [8]
    # A forward that launched more in its passes than in its warm-up: the full bound.
    more = DroppingCountersLib(kernels=20)
    res = C.collect(more, ["m.sum"], lambda: None, lambda: None, "/t/c.jsonl",
                    kernels_per_forward=3)
    assert res["ok"] and res["max_ranges"] == C.MAX_RANGES
    assert [c[2] for c in more.calls if c[0] == "begin"] == [8, C.MAX_RANGES]
    # A forward too large for any smaller bound: one collection with the full one.
    huge = DroppingCountersLib(kernels=700)
    res = C.collect(huge, ["m.sum"], lambda: None, lambda: None, "/t/c.jsonl",
                    kernels_per_forward=700)
    assert res["ok"] and [c[2] for c in huge.calls if c[0] == "begin"] == [C.MAX_RANGES]
    assert huge.calls[-1] == ("end", "/t/c.jsonl")


def test_one_forward_and_sync_per_pass_then_end():
    lib = FakeCountersLib(passes=3)
    order = []
    res = C.collect(lib, ["dram__bytes_read.sum", "lts__t_sector_hit_rate.pct"],
                    lambda: order.append("forward"), lambda: order.append("sync"), "/t/c.jsonl")
    assert res["ok"] and res["passes"] == 3 and res["error"] == ""
    steps = res["steps_ms"]
    assert set(steps) == set(C.STEPS) and all(v >= 0 for v in steps.values())
    assert steps["forwards in passes"] <= steps["passes"] <= res["ms"]
    assert order == ["forward", "sync"] * 3
    assert lib.calls[0] == ("begin", "dram__bytes_read.sum,lts__t_sector_hit_rate.pct",
                            C.MAX_RANGES)
    assert [c[0] for c in lib.calls[1:]] == ["pass_begin", "pass_end"] * 3 + ["end"]
    assert lib.calls[-1] == ("end", "/t/c.jsonl")


@pytest.mark.parametrize("fail,forwards", [("begin", 0), ("pass_begin", 0), ("pass_end", 1),
                                           ("end", 3)])
def test_a_failed_call_is_reported_with_the_library_reason(fail, forwards):
    lib = FakeCountersLib(passes=3, fail=fail)
    ran = []
    res = C.collect(lib, ["m.sum"], lambda: ran.append(1), lambda: None, "/t/c.jsonl")
    assert not res["ok"]
    assert res["error"].endswith("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")
    assert len(ran) == forwards


def test_a_raising_forward_stops_the_pass_and_tears_down():
    lib = FakeCountersLib(passes=3)

    def forward():
        raise RuntimeError("CUDA error: an illegal memory access")

    res = C.collect(lib, ["m.sum"], forward, lambda: None, "/t/c.jsonl")
    assert not res["ok"] and "illegal memory access" in res["error"]
    assert [c[0] for c in lib.calls] == ["begin", "pass_begin", "pass_end", "end"]
    assert not lib.active


def test_a_library_that_never_finishes_is_bounded():
    lib = FakeCountersLib(passes=2, never_done=True)
    res = C.collect(lib, ["m.sum"], lambda: None, lambda: None, "/t/c.jsonl")
    assert not res["ok"] and "planned 2 passes" in res["error"]
    assert res["passes"] == 3
    assert lib.calls[-1][0] == "end" and not lib.active


def test_nothing_runs_without_library_path_or_metrics():
    assert "not loaded" in C.collect(None, ["m"], None, None, "/t")["error"]
    lib = FakeCountersLib()
    assert "KAGENT_CUPTI_OUT" in C.collect(lib, ["m"], None, None, "")["error"]
    assert "no metrics" in C.collect(lib, [], None, None, "/t")["error"]
    assert lib.calls == []


def test_the_child_writes_counters_to_the_tracer_file(monkeypatch):
    monkeypatch.delenv("KAGENT_CUPTI_LIB", raising=False)
    monkeypatch.setenv("KAGENT_CUPTI_OUT", "/w/cupti.jsonl")
    cupti = child._Cupti()
    assert "not loaded" in cupti.counters(["m"], lambda: None, lambda: None)["error"]
    cupti.counters_lib = FakeCountersLib(passes=2)
    res = cupti.counters(["m"], lambda: None, lambda: None)
    assert res["ok"] and res["passes"] == 2
    assert cupti.counters_lib.calls[-1] == ("end", "/w/cupti.jsonl")


def test_the_request_field_is_checked():
    base = {"mode": "profile", "problem_source": "x", "kernel_source": "y"}
    assert P.Request(base).cupti_counters == []
    assert P.Request({**base, "cupti_counters": None}).cupti_counters == []
    names = ["dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    assert P.Request({**base, "cupti_counters": names}).cupti_counters == names
    for bad in ("dram__bytes_read.sum", ["a,b"], [""], [3]):
        with pytest.raises(P.RequestError, match="cupti_counters"):
            P.Request({**base, "cupti_counters": bad})


def test_profile_mode_reports_the_collection_and_logs_it():
    from kagent_harness.profile_mode import ProfileMixin

    class Supervisor(ProfileMixin):
        def __init__(self):
            self.log = P.Log()
            self.phases = P.Phases()

    sup = Supervisor()
    ok = sup.counters_result({"ok": True, "passes": 14, "error": "", "ms": 41.5,
                              "steps_ms": {"setup": 3.0, "passes": 37.0, "decode": 1.5,
                                           "forwards in passes": "x", "other": 9.0}})
    assert ok == {"ok": True, "passes": 14, "error": "", "ms": 41.5}
    # Where the collection's time went, as the child's clock says: phases of the profile.
    assert sup.phases.as_dict() == {"CUPTI counters, child's clock: setup": 3.0,
                                    "CUPTI counters, child's clock: passes": 37.0,
                                    "CUPTI counters, child's clock: decode": 1.5}
    failed = sup.counters_result({"ok": False, "passes": 0, "error": "begin: no context"})
    assert not failed["ok"] and failed["error"] == "begin: no context"
    missing = sup.counters_result(None)
    assert not missing["ok"] and "no counter passes" in missing["error"]
    text = "\n".join(sup.log.lines)
    assert "14 passes" in text and "begin: no context" in text


def test_the_profile_command_runs_the_passes_between_warm_up_and_the_marked_forwards(
        tmp_path, monkeypatch):
    # The GPU calls of the command are no-ops here (no GPU); the order of the forwards,
    # the passes and the markers is the child's own.
    import torch
    from kagent_harness import loader
    events = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: events.append("sync"))
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", lambda name: None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", lambda: None)
    monkeypatch.setenv("KAGENT_CUPTI_OUT", str(tmp_path / "cupti.jsonl"))
    monkeypatch.delenv("KAGENT_CUPTI_LIB", raising=False)
    st = child._State()
    st.device, st.inputs = "cuda", None
    st.model = lambda *xs: events.append("forward")
    st.launches = child._Launches(None)
    st.cupti = child._Cupti()
    st.cupti.mark = lambda name: events.append(name)
    st.cupti.flush = lambda: None
    lib = FakeCountersLib(passes=2)
    st.cupti.counters_lib = lib
    inputs = tmp_path / "inputs.pt"
    torch.save([], inputs)
    reply = child._cmd_profile(st, {"inputs": str(inputs), "warmup_iters": 1, "iters": 1,
                                    "counters": ["dram__bytes_read.sum"]}, torch, loader)
    assert reply["counters"]["ok"] and reply["counters"]["passes"] == 2
    assert events == ["forward", "sync", "forward", "sync", "forward", "sync",
                      "profile_begin", "forward", "sync", "profile_end"]
    assert lib.calls[-1] == ("end", str(tmp_path / "cupti.jsonl"))
    # A library without the count: the first bound is the fixed one.
    assert lib.calls[0][2] == C.MAX_RANGES  # FakeCountersLib has no end_unless_dropped

    # The tracer counts the last warm-up forward's kernels (the first ran an autotuner's
    # 40 benchmark launches beside its 3), and the first collection is sized for 3.
    class CountingLib(DroppingCountersLib):
        seen = 0

        def kagent_cupti_kernels_seen(self):
            return self.seen

    counting = CountingLib(kernels=3)
    st.cupti.counters_lib = st.cupti.lib = counting

    def forward(*xs):
        counting.seen += 43 if counting.seen == 0 else 3
        events.append("forward")
    st.model = forward
    events.clear()
    reply = child._cmd_profile(st, {"inputs": str(inputs), "warmup_iters": 3, "iters": 1,
                                    "counters": ["dram__bytes_read.sum"]}, torch, loader)
    assert reply["counters"]["ok"] and reply["counters"]["kernels_per_forward"] == 3
    assert [c[2] for c in counting.calls if c[0] == "begin"] == [8]
    # A sync before the counted forward, so that the count starts after the ones before.
    assert events[:5] == ["forward", "forward", "sync", "forward", "sync"]
    st.cupti.lib = None
    # Without "counters": no passes, no field.
    events.clear()
    reply = child._cmd_profile(st, {"inputs": str(inputs), "warmup_iters": 1, "iters": 1},
                               torch, loader)
    assert "counters" not in reply
    assert events == ["forward", "sync", "profile_begin", "forward", "sync", "profile_end"]


class PreparingCountersLib(FakeCountersLib):
    """A library with prepare: it configures for the metrics it is given."""

    def kagent_cupti_counters_prepare(self, metrics):
        self.calls.append(("prepare", metrics.decode()))
        return -1 if self.fail == "prepare" else self.passes


def test_prepare_sets_the_counters_up_for_the_same_metrics_the_collection_asks():
    lib = PreparingCountersLib(passes=4)
    metrics = ["dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    got = C.prepare(lib, metrics)
    assert got["ok"] and got["passes"] == 4 and got["error"] == "" and got["ms"] >= 0
    C.collect(lib, metrics, lambda: None, lambda: None, "/dev/null", max_ranges=8)
    # The library matches begin to prepare by the metrics string: the same join.
    assert lib.calls[0] == ("prepare", ",".join(metrics))
    assert lib.calls[1] == ("begin", ",".join(metrics), 8)


def test_a_failed_or_missing_prepare_is_reported_never_raised():
    failed = C.prepare(PreparingCountersLib(fail="prepare"), ["a.sum"])
    assert not failed["ok"] and failed["error"] == "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
    older = C.prepare(FakeCountersLib(), ["a.sum"])
    assert not older["ok"] and "no prepare" in older["error"]
    assert "not loaded" not in C.prepare(None, ["a.sum"])["error"]
    assert not C.prepare(PreparingCountersLib(), [])["ok"]


def test_profile_mode_sets_the_counters_up_before_it_waits_for_the_gpu():
    from kagent_harness.profile_mode import ProfileMixin

    class Child:
        def __init__(self, reply):
            self.reply, self.sent = reply, []

        def request(self, msg, timeout=None, phase=""):
            self.sent.append(msg)
            return self.reply

    class Supervisor(ProfileMixin):
        def __init__(self, reply):
            self.log = P.Log()
            self.phases = P.Phases()
            self.child = Child(reply)

    sup = Supervisor({"ok": True, "prepare": {"ok": True, "passes": 12, "ms": 640.0}})
    sup.prepare_counters(["dram__bytes_read.sum"])
    assert sup.child.sent == [{"cmd": "counters_prepare", "counters": ["dram__bytes_read.sum"]}]
    assert "CUPTI counters: setup before the slot" in sup.phases.as_dict()
    assert "12 passes planned, 640.0 ms" in "\n".join(sup.log.lines)
    sup = Supervisor({"ok": True, "prepare": {"ok": False, "error": "no prepare"}})
    sup.prepare_counters(["dram__bytes_read.sum"])
    assert "not set up before the slot (no prepare): the collection does it" in \
        "\n".join(sup.log.lines)
