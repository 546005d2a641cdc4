"""Unit tests: protocol, statistics, comparison, kernel names, CUPTI trace analysis,
op signature, loading and seeding, the timing loop."""

import json
import math

import pytest
import torch

from conftest import read
from kagent_harness import kernels as K
from kagent_harness import loader
from kagent_harness import protocol as P
from kagent_harness.compare import compare, overlaps, tolerances
from kagent_harness.signature import record
from kagent_harness.timing import time_callable


# -- protocol ---------------------------------------------------------------------------
def test_timing_stats_match_numpy_percentiles():
    np = pytest.importorskip("numpy")
    xs = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 7.0]
    s = P.timing_stats(xs)
    assert s["count"] == 7
    assert s["median_ms"] == pytest.approx(float(np.median(xs)))
    assert s["mean_ms"] == pytest.approx(float(np.mean(xs)))
    assert s["p10_ms"] == pytest.approx(float(np.percentile(xs, 10)))
    assert s["p90_ms"] == pytest.approx(float(np.percentile(xs, 90)))
    assert (s["min_ms"], s["max_ms"]) == (1.0, 10.0)
    assert P.timing_stats([])["count"] == 0


def test_child_steps_are_added_as_the_childs_own_account():
    ph = P.Phases()
    P.add_child_steps(ph, {"forward": 1.5, "hand-back": 2, "checks": -1.0,
                           "inputs": float("nan"), "input copies and poison": True,
                           "made up": 9.0})
    P.add_child_steps(ph, {"forward": 0.5})
    P.add_child_steps(ph, "not a dict")
    assert ph.as_dict() == {"gate, child's clock: forward": 2.0,
                            "gate, child's clock: hand-back": 2.0}


def test_request_defaults_and_validation():
    r = P.Request({"problem_source": "x"}, mode="measure")
    assert (r.trials, r.timing_reps, r.warmup_iters, r.warmup_ms) == (5, 100, 25, 100.0)
    assert r.language == "triton" and r.baselines == []
    assert P.Request({"problem_source": "x", "baselines": True}).baselines == ["eager", "compiled"]
    with pytest.raises(P.RequestError):
        P.Request({"problem_source": "x", "trials": "five"})
    with pytest.raises(P.RequestError):
        P.Request({"problem_source": "x", "language": "rust"})
    with pytest.raises(P.RequestError):
        P.Request({}, mode="measure")  # no problem
    with pytest.raises(P.RequestError):
        P.Request({"problem_source": "x"}, mode="profile")  # no kernel


def test_gpu_floors_apply_on_cuda_only():
    log = P.Log()
    r = P.Request({"problem_source": "x", "trials": 1, "timing_reps": 3, "warmup_iters": 1,
                   "warmup_ms": 0})
    r.apply_floors("cpu", log)
    assert (r.trials, r.timing_reps) == (1, 3)
    r.apply_floors("cuda", log)
    assert (r.trials, r.timing_reps, r.warmup_iters, r.warmup_ms) == (5, 100, 25, 100.0)


def test_cpu_caps_the_timing_not_the_gate():
    log = P.Log()
    r = P.Request({"problem_source": "x", "trials": 20, "timing_reps": 100,
                   "warmup_iters": 25})
    r.apply_floors("cpu", log)
    assert (r.trials, r.timing_reps, r.warmup_iters) == (20, P.CPU_MAX_REPS,
                                                         P.CPU_MAX_WARMUP_ITERS)
    assert "timing_reps=100 capped to 10 on device cpu" in log.tail()


def test_default_tolerances_per_dtype():
    assert P.default_tolerance("float32") == (1e-4, 1e-4)
    assert P.default_tolerance("bfloat16") == (1e-2, 1e-2)
    assert P.default_tolerance("float16") == (1e-2, 1e-2)
    assert P.default_tolerance("int64") == (0.0, 0.0)
    assert tolerances([torch.zeros(2, dtype=torch.bfloat16)]) == (1e-2, 1e-2)
    assert tolerances([torch.zeros(2)], atol=0.5) == (0.5, 1e-4)


def test_log_tail_is_bounded():
    log = P.Log()
    for i in range(5000):
        log.add("line %d %s" % (i, "x" * 50))
    assert len(log.tail().encode()) <= P.LOG_LIMIT_BYTES + 100


# -- compare ----------------------------------------------------------------------------
def test_compare_reports_worst_index_and_errors():
    r = torch.zeros(3, 4)
    c = r.clone()
    c[2, 1] = 0.5
    res = compare([r], [c], 1e-4, 1e-4)
    assert not res["ok"] and res["worst_index"] == "[2, 1]"
    assert res["max_abs_error"] == pytest.approx(0.5)
    assert compare([r], [r.clone()], 1e-4, 1e-4)["ok"]


def test_compare_shape_dtype_nan():
    r = torch.ones(4)
    assert "shape" in compare([r], [torch.ones(5)], 1e-4, 1e-4)["reason"]
    assert "dtype" in compare([r], [torch.ones(4, dtype=torch.float64)], 1e-4, 1e-4)["reason"]
    c = r.clone()
    c[1] = float("nan")
    assert "NaN" in compare([r], [c], 1e-4, 1e-4)["reason"]
    assert "returned 2" in compare([r], [r, r], 1e-4, 1e-4)["reason"]
    ri = torch.arange(4)
    assert not compare([ri], [ri + 1], 0.0, 0.0)["ok"]


def test_overlap_detection():
    a = torch.zeros(10)
    assert overlaps(a[2:5], a[4:8]) and not overlaps(a[0:2], a[2:4])
    assert not overlaps(a, torch.zeros(10))


# -- kernels and CUPTI traces -----------------------------------------------------------
def test_own_kernel_names_from_source():
    names = K.own_kernel_names(read("cand_relu_add_good.py"))
    assert names == ["relu_add_kernel"]
    src = ('import triton\n@triton.autotune(configs=[], key=[])\n@triton.jit\ndef k1(x): pass\n'
           'cuda_src = """\n__global__ void my_add(float* a) {}\n"""\n')
    assert K.own_kernel_names(src) == ["k1", "my_add"]
    assert K.is_own("_Z6my_addPf", ["my_add"])
    assert K.is_own("k1", ["k1"]) and not K.is_own("k10", ["k1"])
    assert K.is_library("ampere_bf16_s16816gemm_bf16_128x64") and not K.is_library("k1")


def _trace(tmp_path, records):
    p = tmp_path / "trace.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in records) + "\nnot json\n")
    return K.read_trace(str(p))


def _k(name, s, e, stream=7):
    return {"type": "kernel", "name": name, "start_ns": s, "end_ns": e, "stream": stream,
            "device": 0, "grid": [1, 1, 1], "block": [128, 1, 1], "correlation": 1}


def _m(name, ts):
    return {"type": "marker", "name": name, "ts_ns": ts}


def test_cupti_gate_analysis(tmp_path):
    t = _trace(tmp_path, [_m("gate_begin", 0), _k("my_kernel", 10, 20), _m("gate_end", 30),
                          _m("gate_begin", 100), _k("ampere_sgemm", 110, 120), _m("gate_end", 130)])
    assert t["bad_lines"] == 1
    calls = K.analyze_gate(t, ["my_kernel"])
    assert [c["own"] for c in calls] == [1, 0]
    assert calls[0]["own_busy_ms"] == pytest.approx(10 / 1e6)
    assert calls[1]["names"] == ["ampere_sgemm"]


def test_cupti_timing_segments(tmp_path):
    flush = "vectorized_elementwise_kernel<FillFunctor>"
    recs = [_m("flush_begin", 0), _k(flush, 1, 5), _m("flush_end", 6), _m("timing_begin", 10)]
    t0 = 20
    for i in range(4):
        recs += [_k(flush, t0, t0 + 100), _k("mine", t0 + 110, t0 + 1110),
                 _k("mine", t0 + 1120, t0 + 2120)]
        t0 += 5000
    recs.append(_m("timing_end", t0))
    an = K.analyze_timing(_trace(tmp_path, recs), ["mine"], reps=3)
    assert an["calls"] == 3 and an["own"] == [2, 2, 2]
    assert an["span_ms"] == [pytest.approx(2010 / 1e6)] * 3
    assert an["busy_ms"] == [pytest.approx(2000 / 1e6)] * 3
    assert an["own_busy_ms"] == [pytest.approx(2000 / 1e6)] * 3


# -- signature --------------------------------------------------------------------------
def test_signature_matmul_flops_and_bytes():
    class MV(torch.nn.Module):
        def forward(self, a, x):
            return torch.matmul(a, x)

    a, x = torch.randn(8, 32), torch.randn(32, 1)
    sig = record(MV(), [a, x])
    assert sig["flops"] == 2 * 8 * 32 * 1
    assert sig["min_bytes"] == (8 * 32 + 32 + 8) * 4
    op = sig["ops"][0]
    assert op["op"] == "aten::mm" and op["inputs"][0]["shape"] == [8, 32]
    assert op["inputs"][0]["strides"] == [32, 1] and op["inputs"][0]["dtype"] == "float32"


def test_signature_tensor_ids_follow_the_data():
    # One id per tensor object: diag's output is mm's left operand; an in-place op's input
    # and output are one tensor; a view is a tensor of its own.
    class M(torch.nn.Module):
        def forward(self, a, b):
            c = torch.diag(a) @ b
            return c.relu_().t()

    ops = record(M(), [torch.randn(4), torch.randn(4, 4)])["ops"]
    diag, mm, relu, t = ops
    assert diag["op"] == "aten::diag_embed" and mm["op"] == "aten::mm"
    assert mm["inputs"][0]["id"] == diag["outputs"][0]["id"] != mm["inputs"][1]["id"]
    assert relu["inputs"][0]["id"] == relu["outputs"][0]["id"] == mm["outputs"][0]["id"]
    assert t["outputs"][0]["id"] not in (t["inputs"][0]["id"], 0)


def test_signature_linear_and_conv():
    lin = torch.nn.Linear(16, 4)
    sig = record(lin, [torch.randn(2, 16)])
    assert sig["flops"] == 2 * 2 * 16 * 4
    assert sig["min_bytes"] == (2 * 16 + 16 * 4 + 4 + 2 * 4) * 4
    conv = torch.nn.Conv2d(3, 8, 3, bias=False)
    sig = record(conv, [torch.randn(1, 3, 10, 10)])
    assert sig["flops"] == 2 * (8 * 8 * 8) * 3 * 9


def test_signature_records_scalar_arguments():
    """OpRecord.scalars: torch.selu is aten::elu with SELU's alpha and scale, which tells
    it from F.elu (alpha 1, scale 1); slopes and bounds; schema defaults; bools 0/1;
    numbers passed for tensor arguments; short lists as name.i; strings and non-finite
    values left out."""
    def ops_of(fn, x=None):
        class M(torch.nn.Module):
            def forward(self, x):
                return fn(x)
        sig = record(M(), [torch.randn(4, 6) if x is None else x])
        json.dumps(sig, allow_nan=False)  # what the harness writes: strict JSON
        return [(o["op"], o.get("scalars", {})) for o in sig["ops"]]

    import torch.nn.functional as F
    selu = ops_of(torch.selu)
    assert selu == [("aten::elu", {"alpha": 1.6732632423543772, "scale": 1.0507009873554805,
                                   "input_scale": 1.0})]
    # F.elu passes alpha only: scale and input_scale are the schema's defaults.
    assert ops_of(F.elu) == [("aten::elu", {"alpha": 1.0, "scale": 1.0, "input_scale": 1.0})]
    assert ops_of(torch.nn.SELU()) == selu
    assert ops_of(lambda x: F.leaky_relu(x, 0.2)) == [("aten::leaky_relu", {"negative_slope": 0.2})]
    assert ops_of(F.relu6) == [("aten::hardtanh", {"min_val": 0.0, "max_val": 6.0})]
    assert ops_of(lambda x: F.softplus(x, beta=2, threshold=10)) == [
        ("aten::softplus", {"beta": 2.0, "threshold": 10.0})]
    assert ops_of(torch.relu) == [("aten::relu", {})]
    # A number where the schema takes a tensor; bools as 0/1; lists element by element.
    assert ops_of(lambda x: x * 2.5) == [("aten::mul", {"other": 2.5})]
    assert ops_of(lambda x: x.sum(dim=1, keepdim=True)) == [
        ("aten::sum", {"dim.0": 1.0, "keepdim": 1.0})]
    # Strings (gelu's approximate) go to OpRecord.strings, not scalars; non-finite
    # numbers are not recorded.
    assert ops_of(lambda x: F.gelu(x, approximate="tanh")) == [("aten::gelu", {})]
    assert ops_of(lambda x: torch.clamp(x, min=float("-inf"), max=3)) == [
        ("aten::clamp", {"max": 3.0})]
    # Long lists are left out whole; at most 16 entries per op.
    long = ops_of(lambda x: x.permute(*range(10)), torch.randn(*[1] * 10))
    assert long == [("aten::permute", {})]
    conv = record(torch.nn.Conv3d(2, 4, 3, padding=1), [torch.randn(1, 2, 5, 5, 5)])["ops"][0]
    assert conv["op"] == "aten::convolution"
    assert conv["scalars"]["stride.2"] == 1.0 and conv["scalars"]["padding.0"] == 1.0
    assert len(conv["scalars"]) <= 16


def test_signature_attention_scalars_and_flops():
    """F.scaled_dot_product_attention: is_causal and an explicit scale are recorded (the
    brain's attention rule reads them); FLOPs are 2 * (D + Dv) per query-key pair, the
    top-left triangle when causal."""
    import torch.nn.functional as F

    class A(torch.nn.Module):
        def __init__(self, **kw):
            super().__init__()
            self.kw = kw

        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, **self.kw)

    # (The CPU's fused op needs equal head dims; others take the math path.)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)
    sig = record(A(), [q, k, v])
    op = sig["ops"][0]
    assert "scaled_dot_product" in op["op"]
    assert op["scalars"]["is_causal"] == 0.0 and "scale" not in op["scalars"]
    assert sig["flops"] == 2 * 6 * 5 * 7 * (8 + 8)
    sig = record(A(is_causal=True, scale=0.25), [q, k, v])
    op = sig["ops"][0]
    assert op["scalars"]["is_causal"] == 1.0 and op["scalars"]["scale"] == 0.25
    assert sig["flops"] == 2 * 6 * (1 + 2 + 3 + 4 + 5) * (8 + 8)
    # More queries than keys: the rows past the last key keep all of them.
    sig = record(A(is_causal=True), [torch.randn(1, 9, 8), torch.randn(1, 4, 8), torch.randn(1, 4, 8)])
    assert sig["flops"] == 2 * 1 * (1 + 2 + 3 + 4 + 4 * 5) * 16


def test_signature_records_string_arguments():
    """OpRecord.strings: gelu's approximate, passed or the schema's default; ops without
    string arguments record none."""
    import torch.nn.functional as F

    def strings_of(fn):
        class M(torch.nn.Module):
            def forward(self, x):
                return fn(x)
        sig = record(M(), [torch.randn(4, 6)])
        json.dumps(sig, allow_nan=False)
        return [(o["op"], o.get("strings", {})) for o in sig["ops"]]

    assert strings_of(lambda x: F.gelu(x, approximate="tanh")) == [
        ("aten::gelu", {"approximate": "tanh"})]
    assert strings_of(torch.nn.GELU()) == [("aten::gelu", {"approximate": "none"})]
    assert strings_of(torch.relu) == [("aten::relu", {})]


# -- loading and seeding ----------------------------------------------------------------
CANDIDATE_LINEAR = """
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def __init__(self, i, o):
        super().__init__()
        self.fc = nn.Linear(i, o)
    def forward(self, x):
        return self.fc(x)
"""


def test_same_seed_same_weights(tmp_path):
    prob = loader.load_source(read("problem_linear.py"), "t_problem_linear", str(tmp_path))
    cand = loader.load_source(CANDIDATE_LINEAR, "t_cand_linear", str(tmp_path))
    init = loader.make_init_inputs(prob, 1234)
    m1 = loader.build_model(prob.Model, init, 1234, "cpu")
    m2 = loader.build_model(cand.ModelNew, init, 1234, "cpu")
    m3 = loader.build_model(prob.Model, init, 99, "cpu")
    assert torch.equal(m1.fc.weight, m2.fc.weight) and torch.equal(m1.fc.bias, m2.fc.bias)
    assert not torch.equal(m1.fc.weight, m3.fc.weight)
    x1 = loader.make_inputs(prob.get_inputs, 5, "cpu")
    x2 = loader.make_inputs(prob.get_inputs, 5, "cpu")
    x3 = loader.make_inputs(prob.get_inputs, 6, "cpu")
    assert torch.equal(x1[0], x2[0]) and not torch.equal(x1[0], x3[0])


class _SlowDraws(torch.nn.Module):
    """A constructor that draws in several steps with pauses between them, so another
    thread's seeding or drawing would land in the middle."""

    def __init__(self):
        super().__init__()
        import time
        parts = []
        for _ in range(8):
            parts.append(torch.randn(16))
            time.sleep(0.002)
        self.w = torch.nn.Parameter(torch.cat(parts))


def test_seeded_draws_on_threads_give_what_one_thread_gives():
    """The supervisor builds references and makes inputs on several threads at once:
    each build must still give what a process seeded alike gives (loader.SEEDED)."""
    import threading
    alone = {s: loader.build_model(_SlowDraws, [], s, "cpu").w.detach().clone()
             for s in (1, 2, 3, 4)}
    inputs_alone = loader.make_inputs(lambda: [torch.randn(64)], 9, "cpu")[0]
    got, inputs = {}, []

    def build(s):
        got[s] = loader.build_model(_SlowDraws, [], s, "cpu").w.detach().clone()

    def draw():
        for _ in range(20):
            inputs.append(loader.make_inputs(lambda: [torch.randn(64)], 9, "cpu")[0])

    threads = [threading.Thread(target=build, args=(s,)) for s in alone]
    threads.append(threading.Thread(target=draw))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s, w in alone.items():
        assert torch.equal(got[s], w), f"seed {s} gave other weights on a thread"
    assert all(torch.equal(x, inputs_alone) for x in inputs)


def test_problem_loading_and_get_inputs_override(tmp_path):
    prob = loader.load_source(read("problem_relu_add.py"), "t_problem_relu", str(tmp_path))
    loader.check_problem(prob)
    gi = loader.override_get_inputs(prob, "return [torch.rand(3, 5), torch.rand(3, 5)]")
    assert gi()[0].shape == (3, 5)
    gi = loader.override_get_inputs(prob, "def get_inputs():\n    return [torch.ones(2)]\n")
    assert gi()[0].shape == (2,)
    with pytest.raises(ValueError):
        loader.check_problem(loader.load_source("x = 1\n", "t_empty", str(tmp_path)))


# -- timing -----------------------------------------------------------------------------
def test_time_callable_honours_counts_on_cpu():
    calls, marks = [], []
    res = time_callable(lambda: calls.append(1), "cpu", reps=7, warmup_iters=3, warmup_ms=0,
                        flush_bytes=1024, mark=marks.append)
    assert len(res["times_ms"]) == 7 and len(res["wall_ms"]) == 7
    assert res["warmup_calls"] == 3 and len(calls) == 10
    assert marks == ["timing_begin", "timing_end"]
    assert all(t >= 0 and math.isfinite(t) for t in res["times_ms"])


def test_time_callable_warmup_ms_is_a_floor():
    res = time_callable(lambda: None, "cpu", reps=1, warmup_iters=1, warmup_ms=30)
    assert res["warmup_calls"] > 1


def test_time_callable_stops_a_slow_call_at_its_budget():
    import time as _time
    from kagent_harness.protocol import MIN_TIMED_REPS, MIN_WARMUP_CALLS
    from kagent_harness.timing import timed_count
    # 5 ms calls, 30 ms budget: the warm-up ends after MIN_WARMUP_CALLS calls and 15 ms
    # (not 25 calls), the timed loop after MIN_TIMED_REPS calls (not 100).
    res = time_callable(lambda: _time.sleep(0.005), "cpu", reps=100, warmup_iters=25,
                        warmup_ms=0, budget_ms=30)
    assert res["warmup_calls"] == MIN_WARMUP_CALLS
    assert len(res["times_ms"]) == MIN_TIMED_REPS
    assert timed_count(res["wall_ms"], 100, 30) == MIN_TIMED_REPS
    # Fast calls are untouched by the budget; no budget, every rep.
    res = time_callable(lambda: None, "cpu", reps=40, warmup_iters=5, warmup_ms=0,
                        budget_ms=1000)
    assert len(res["times_ms"]) == 40 and res["warmup_calls"] == 5
    assert timed_count([50.0] * 40, 40, 0) == 40
    # The rule: the first count at or past MIN_TIMED_REPS whose calls have taken the budget.
    assert timed_count([10.0] * 40, 40, 150) == 15
    assert timed_count([10.0] * 40, 40, 20) == MIN_TIMED_REPS
    assert timed_count([10.0] * 8, 8, 20) == 8


# -- sandbox ----------------------------------------------------------------------------
def test_innermost_frame_of_a_faulthandler_dump():
    from kagent_harness.sandbox import innermost_frame
    dump = ('Thread 0x00007f01 (most recent call first):\n'
            '  File "/usr/lib/python3.11/threading.py", line 324 in wait\n'
            '  File "/usr/lib/python3.11/threading.py", line 1002 in _bootstrap\n'
            '\n'
            'Current thread 0x00007f02 (most recent call first):\n'
            '  File "/site/triton/compiler/compiler.py", line 300 in compile\n'
            '  File "/dev/shm/w/kagent_candidate.py", line 40 in forward\n')
    assert innermost_frame(dump) == \
        'File "/site/triton/compiler/compiler.py", line 300 in compile'
    # A helper thread caught the signal ("Current thread", listed first as the newest):
    # the main thread's block is still the last.
    helper_caught = ('Current thread 0x00007f01 (most recent call first):\n'
                     '  File "/usr/lib/python3.11/threading.py", line 324 in wait\n'
                     '\n'
                     'Thread 0x00007f02 (most recent call first):\n'
                     '  File "/site/triton/compiler/compiler.py", line 300 in compile\n')
    assert innermost_frame(helper_caught) == \
        'File "/site/triton/compiler/compiler.py", line 300 in compile'
    assert innermost_frame("") == "" and innermost_frame("no dump here\n") == ""


def test_rss_of_a_process_tree_and_workdir_privacy():
    import os
    import stat
    from kagent_harness.procfs import rss_bytes
    from kagent_harness.sandbox import make_workdir
    assert rss_bytes(os.getpid()) > 10 * 1024 * 1024
    assert rss_bytes(2**22 + 12345) == 0  # no such process
    d = make_workdir()
    try:
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    finally:
        os.rmdir(d)


def test_workdirs_of_supervisors_no_longer_running_are_swept(tmp_path):
    # A supervisor killed with SIGKILL leaves its candidates' workdirs on /dev/shm; the
    # next server removes them, and only them (sandbox.sweep_stale_workdirs).
    import os
    import subprocess
    import sys
    from kagent_harness.sandbox import make_workdir, sweep_stale_workdirs
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    dead = p.pid
    old = 1_000_000_000  # 2001: long unchanged
    ns = "p%d" % os.stat("/proc/self/ns/pid").st_ino
    made = {}
    # Only a directory of this PID namespace, of a pid no process has, unchanged for a
    # while, goes: not another namespace's (a container sharing /dev/shm), not a file.
    for name in (f"kagent-{dead}-{ns}-gone", f"kagent-{dead}-{ns}-fresh",
                 f"kagent-{os.getpid()}-{ns}-mine", "kagent-noowner",
                 f"kagent-{dead}-p1-otherns", f"kagent-{dead}-{ns}-afile",
                 f"other-{dead}-{ns}-x"):
        path = tmp_path / name
        if name.endswith("afile"):
            path.write_text("x")
        else:
            path.mkdir()
            (path / "triton_cache").mkdir()
        if not name.endswith("fresh"):
            os.utime(path, (old, old))
        made[name] = path
    own = make_workdir(base=str(tmp_path))
    assert os.path.basename(own).startswith(f"kagent-{os.getpid()}-{ns}-")
    os.utime(own, (old, old))
    assert sweep_stale_workdirs(bases=[str(tmp_path)]) == 1
    assert not made[f"kagent-{dead}-{ns}-gone"].exists()
    for name, path in made.items():
        assert path.exists() or name.endswith("gone"), name
    assert os.path.isdir(own)
    assert sweep_stale_workdirs(bases=[str(tmp_path)], min_age_s=0) == 1  # the fresh one
    assert sweep_stale_workdirs(bases=[str(tmp_path / "missing")]) == 0


def test_a_pool_leaves_no_workdir_behind():
    # Retired processes are reaped on threads of their own; close() waits for them and
    # for a start in flight, so nothing of the pool's stays on /dev/shm or /tmp.
    import os
    from conftest import workdirs_of_this_process as mine
    from kagent_harness import protocol as P
    from kagent_harness.pool import ChildPool, ChildSpec
    before = mine()
    pool = ChildPool(ChildSpec("cpu", sandbox="best-effort"), 1, P.Log())
    taken = []
    try:
        for _ in range(2):
            c = pool.take(pool.spec, P.Log(), 60, 2048)
            taken.append(c.workdir)
            assert os.path.isdir(c.workdir)
            pool.retire(c)
    finally:
        pool.close()
    with pool._lock:
        ready = [c.workdir for c in pool._ready]
    assert not ready
    left = [d for d in taken if os.path.exists(d)]
    assert not left, left
    assert mine() <= before, mine() - before   # the refill's processes' too


def test_child_exception_classification():
    from kagent_harness.child import classify_exception
    assert classify_exception(MemoryError(), "call") == "OOM"
    assert classify_exception(RuntimeError("CUDA out of memory. Tried"), "call") == "OOM"
    assert classify_exception(RuntimeError("an illegal memory access was encountered"),
                              "call") == "CRASH"
    assert classify_exception(SyntaxError("x"), "import") == "COMPILE_ERROR"
    assert classify_exception(ValueError("x"), "construct") == "COMPILE_ERROR"
    assert classify_exception(ValueError("x"), "call") == "CRASH"


def test_candidate_process_dies_with_the_supervisor():
    # A worker killed mid-measurement takes its supervisor with it (the C++ side's
    # PR_SET_PDEATHSIG); the candidate's process must follow, not keep the GPU busy.
    import os
    import signal
    import subprocess
    import sys
    import time
    from conftest import PYDIR
    # The real thing: a sandboxed candidate process (setpriv clears the parent-death
    # signal; bwrap's --die-with-parent must carry it), every process of its sandbox.
    code = ("import os, sys, time\n"
            "sys.path.insert(0, %r)\n"
            "from kagent_harness import protocol as P\n"
            "from kagent_harness.pool import ChildSpec, spawn\n"
            "c = spawn(ChildSpec('cpu', sandbox='best-effort'), P.Log(), 60, 4096)\n"
            "deadline = time.time() + 30\n"
            "while len(c._sandbox_pids()) < 3 and c.status is not None and "
            "time.time() < deadline:\n"
            "    time.sleep(0.05)\n"
            "print(' '.join(str(p) for p in c._sandbox_pids()), flush=True)\n"
            "time.sleep(60)\n" % PYDIR)
    sup = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in sup.stdout.readline().split()]
    assert pids and all(os.path.exists(f"/proc/{p}") for p in pids)
    sup.send_signal(signal.SIGKILL)
    sup.wait()

    def alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
        except OSError:
            return False
    deadline = time.time() + 5
    while any(alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.02)
    assert not any(alive(p) for p in pids), pids


def test_compile_dry_run_launches_nothing_and_knows_when_it_needed_values():
    # dryrun.NoKernels: views run, in-place ops leave their destination untouched, other
    # ops only allocate outputs of the right metadata; a read of values makes the run
    # "not clean" (a compile error there would not be final).
    import torch
    from kagent_harness.dryrun import compile_dry_run, stand_ins

    class M(torch.nn.Module):
        def forward(self, x, w, s):
            y = x.t().contiguous() @ w          # a view, a copy, a matmul
            x.add_(1.0)                          # in place: must not happen
            return torch.relu(y) * s

    spec = [{"shape": [8, 4], "stride": [4, 1], "dtype": "float32", "device": "cpu"},
            {"shape": [8, 3], "stride": [3, 1], "dtype": "float32", "device": "cpu"},
            {"value": 2.0}]
    res = compile_dry_run(M(), spec, "cpu")
    assert res["clean"] is True and res["error"] == "" and res["ops"] >= 4, res
    xs = stand_ins(spec, "cpu")
    assert xs[0].shape == (8, 4) and xs[0].stride() == (4, 1) and xs[2] == 2.0

    class Reads(torch.nn.Module):
        def forward(self, x):
            n = int(x.sum().item())              # a value the run cannot know
            return x * n

    res = compile_dry_run(Reads(), spec[:1], "cpu")
    assert res["clean"] is False and "_local_scalar_dense" in res["data_dependent"]

    seen = {}

    class Writes(torch.nn.Module):
        def forward(self, x):
            seen["x"] = x
            x.fill_(7.0)
            return x

    x = torch.zeros(4)
    from kagent_harness.dryrun import NoKernels
    with NoKernels("cpu"):
        Writes()(x)
    assert bool((x == 0).all()), "an in-place op ran during the dry run"


def test_compare_in_chunks_agrees_with_one_pass(monkeypatch):
    # compare() works through large outputs in chunks (bounded temporaries): the verdict,
    # errors, worst index and counts must not depend on the chunk size.
    import torch
    from kagent_harness import compare as C
    g = torch.Generator().manual_seed(3)
    ref = torch.randn(37, 53, generator=g)
    cases = [ref + 1e-6, ref.clone(), ref * 1.01]
    bad = ref.clone()
    bad[20, 7] = float("nan")
    cases.append(bad)
    ninf = ref.clone()
    ninf[5, 5] = float("inf")
    results = []
    for chunk in (1 << 26, 100, 7):
        monkeypatch.setattr(C, "CHUNK_ELEMENTS", chunk)
        results.append([C.compare([ref], [c], 1e-4, 1e-4) for c in cases] +
                       [C.compare([ninf], [ref], 1e-4, 1e-4)])
    assert results[0] == results[1] == results[2]
    assert results[0][0]["ok"] and not results[0][2]["ok"]
    assert "NaN/Inf" in results[0][3]["reason"] and results[0][3]["worst_index"] == "[20, 7]"
    assert "non-finite reference" in results[0][4]["reason"]


def test_fused_comparison_kernel_agrees_with_the_torch_path(monkeypatch):
    # On the GPU, fp32/fp16/bf16 outputs are compared by one Triton kernel
    # (compare_fused.py; here under Triton's interpreter): every statistic compare() reads
    # must equal the torch path's, over NaN/Inf patterns, block edges and failing outputs,
    # and compare() built on it gives the same verdicts and messages.
    import math
    import torch
    from kagent_harness import compare as C
    from kagent_harness import compare_fused as F
    g = torch.Generator().manual_seed(5)

    def pair(n, dtype, noise):
        r = torch.randn(n, generator=g).to(dtype)
        c = (r.float() + noise * torch.randn(n, generator=g)).to(dtype)
        return r, c

    cases = []
    for n in (1, F.BLOCK - 1, F.BLOCK, 3 * F.BLOCK + 5):
        for dtype in F.DTYPES:
            cases.append(pair(n, dtype, 1e-6))
    r, c = pair(2 * F.BLOCK + 9, torch.float32, 1e-3)       # fails: many over the bound
    cases.append((r, c))
    r, c = pair(F.BLOCK + 100, torch.float32, 0.0)
    c[F.BLOCK + 3] = float("nan")                            # NaN where the reference is finite
    c[7] = float("inf")
    cases.append((r, c))
    r, c = pair(F.BLOCK + 100, torch.float16, 0.0)
    r[50], c[50] = float("nan"), float("nan")                # matched non-finite reference
    r[F.BLOCK + 1], c[F.BLOCK + 1] = float("-inf"), 2.0      # unmatched one
    cases.append((r, c))
    r, c = pair(5000, torch.float32, 0.0)
    c[4321] += 1.0                                           # one element off
    cases.append((r.reshape(50, 100), c.reshape(50, 100)))
    for r, c in cases:
        want = C._float_stats_torch(r, c, 1e-4, 1e-4)
        got = F.float_stats(r, c, 1e-4, 1e-4)
        assert set(got) == set(want)
        for key, w in want.items():
            if isinstance(w, float):
                assert math.isclose(got[key], w, rel_tol=1e-6, abs_tol=1e-12), (key, got, want)
            else:
                assert got[key] == w, (key, got, want)
    # compare() through the fused path (as on the GPU) and through torch's agree.
    monkeypatch.setattr(C, "_float_stats_torch", F.float_stats)
    fused = [C.compare([r], [c], 1e-4, 1e-4) for r, c in cases]
    monkeypatch.undo()
    plain = [C.compare([r], [c], 1e-4, 1e-4) for r, c in cases]
    assert [f["ok"] for f in fused] == [p["ok"] for p in plain]
    assert [f["reason"] for f in fused] == [p["reason"] for p in plain]
    assert [f["worst_index"] for f in fused] == [p["worst_index"] for p in plain]
    assert [p["ok"] for p in plain[-4:]] == [False, False, False, False]


def test_compile_dry_run_turns_triton_launches_into_compilations():
    # Inside the dry run a Triton launch only compiles (under the interpreter: does
    # nothing); once it is over, launches run again.
    import torch
    import triton
    import triton.language as tl
    from kagent_harness.dryrun import NoKernels, _TritonCompileOnly

    @triton.jit
    def fill_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, 1.0, mask=offs < n)

    x = torch.zeros(64)
    with torch.no_grad(), _TritonCompileOnly(), NoKernels("cpu"):
        fill_kernel[(1,)](x, 64, BLOCK=64)
    assert bool((x == 0).all()), "a Triton kernel ran during the dry run"
    fill_kernel[(1,)](x, 64, BLOCK=64)
    assert bool((x == 1).all())


def test_compile_dry_run_loads_kernels_so_too_much_shared_memory_fails_before_the_gpu(
        monkeypatch):
    # On the GPU a kernel over the SM's shared memory compiles, and fails only when it is
    # loaded (Triton's OutOfResources): the dry run loads what it compiled, so such a
    # kernel is a compile error without the GPU slot. An autotuner's configs are not
    # loaded: it skips those that fail. Stand-in here: the warm-up's compiled kernel.
    import torch
    import triton
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.errors import OutOfResources
    from triton.runtime.jit import JITFunction
    from kagent_harness.dryrun import compile_dry_run

    loaded = []

    class Compiled:
        def __init__(self, name):
            self.name = name

        def _init_handles(self):
            loaded.append(self.name)
            if self.name == "big":
                raise OutOfResources(262176, 232448, "shared memory")

    monkeypatch.setattr(JITFunction, "run", lambda self, *a, **kw: Compiled(
        self.fn.__name__) if kw.get("warmup") else None)
    monkeypatch.setattr(Autotuner, "warmup", lambda self, *a, **kw: [
        self.fn.run(*a, warmup=True, **kw)])

    def make(name):
        def body(x_ptr):
            pass
        body.__name__ = name
        return JITFunction(body)

    small, big = make("small"), make("big")
    tuned = Autotuner(make("big"), ["x_ptr"], [triton.Config({})], [], None, None)

    class Model(torch.nn.Module):
        def __init__(self, kernels):
            super().__init__()
            self.kernels = kernels

        def forward(self, x):
            for k in self.kernels:
                k.run(x, grid=(1,), warmup=False)
            return x

    spec = [{"shape": [4], "stride": [1], "dtype": "float32"}]
    ok = compile_dry_run(Model([small, tuned]), spec, "cpu")
    assert ok["clean"] and "compile_error" not in ok, ok
    assert loaded == ["small"]  # the autotuner's config was compiled, not loaded
    bad = compile_dry_run(Model([small, big]), spec, "cpu")
    assert "OutOfResources" in bad.get("compile_error", ""), bad


def test_a_released_trial_set_in_use_closes_when_its_request_is_done():
    # release_job while a measurement still uses the job's trial set: the set is forgotten
    # at once (nothing more is kept for it) and closed when that request is done.
    from kagent_harness import protocol as P
    from kagent_harness.trials import TrialCache
    from conftest import read
    cache = TrialCache(1 << 30, P.Log())
    req = P.Request({"problem_source": read("problem_relu_add.py"), "device": "cpu"})
    jt, state = cache.get(req, "job-r", "cpu", P.Log())
    assert state == "built"
    jt.load()
    t = jt.trials[0]
    jt.inputs_of(t)
    assert jt.kept_bytes > 0 and cache.stats()["cache_bytes"] == jt.kept_bytes
    assert cache.release("job-r") is True
    assert not jt.closed and jt.model is not None  # its request goes on
    jt.ref_of(t, jt.inputs_of(t))
    assert cache.stats()["cache_bytes"] == 0 and cache.stats()["jobs"] == 0
    cache.done(jt)
    assert jt.closed and jt.model is None
    again, state = cache.get(req, "job-r", "cpu", P.Log())
    assert state == "built" and again is not jt


def test_sandbox_scratch_goes_where_the_dropped_user_can_reach(monkeypatch):
    # A worker hands its harness a private 0700 TMPDIR; bwrap running as the dropped
    # user (user-namespace mode) cannot enter it, so the sandboxes' directories (and the
    # start-time probe's) must go elsewhere. Seen on the H200 under kagentd.
    import os
    import shutil
    import tempfile
    from kagent_harness import bwrap
    private = tempfile.mkdtemp(prefix="kagent-test-private-", dir="/tmp")
    shared = tempfile.mkdtemp(prefix="kagent-test-shared-", dir="/tmp")
    try:
        os.chmod(private, 0o700)
        os.chmod(shared, 0o755)
        nested = os.path.join(private, "tmp")
        os.mkdir(nested, 0o777)
        os.chmod(nested, 0o777)
        monkeypatch.setattr(tempfile, "tempdir", nested)
        assert not bwrap._passable(nested)
        base = bwrap.scratch_base()
        assert base in ("/tmp", "/var/tmp") and bwrap._passable(base)
        monkeypatch.setattr(tempfile, "tempdir", shared)
        assert bwrap.scratch_base() == shared
        from kagent_harness.sandbox import make_workdir
        d = make_workdir()
        try:
            assert bwrap._passable(os.path.dirname(d))
            assert os.stat(d).st_mode & 0o777 == 0o700
        finally:
            shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(shared, ignore_errors=True)


def test_compile_dry_run_gives_its_device_memory_back(monkeypatch):
    # A prepared process waits beside the measurement that holds the GPU: the caching
    # allocator's blocks of the dry run's stand-ins and outputs go back to the driver,
    # after a clean run and after a failed one alike (the "cuda" path, with CPU tensors).
    import torch
    from kagent_harness import dryrun
    freed = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: freed.append(1))
    monkeypatch.setattr(dryrun, "stand_ins", lambda spec, device, alloc=None: [torch.empty(4, 3)])

    class View(torch.nn.Module):
        def forward(self, x):
            return x[0]

    class Fails(torch.nn.Module):
        def forward(self, x):
            raise ValueError("the candidate's own error")

    assert dryrun.compile_dry_run(View(), [{}], "cuda")["error"] == "" and freed == [1]
    res = dryrun.compile_dry_run(Fails(), [{}], "cuda")
    assert "the candidate's own error" in res["error"] and freed == [1, 1]


class _FakeArena:
    """phantom.PhantomArena's interface on the CPU: counts what it allocated, and says
    which of its tensors are still alive when asked to make survivors real."""

    def __init__(self):
        import weakref
        self.made = weakref.WeakSet()
        self.count = 0
        self.reserved = 0

    def empty_strided(self, shape, stride, dtype):
        import torch
        t = torch.empty_strided(shape, stride, dtype=dtype)
        self.count += 1
        self.reserved += 1 << 20
        self.made.add(t)
        return t

    def materialize_survivors(self):
        import gc
        gc.collect()
        return sum(t.numel() * t.element_size() for t in list(self.made)) << 20


def test_no_kernels_makes_stand_ins_and_outputs_on_its_device_from_the_allocator():
    # On the GPU the allocator is the phantom arena: the stand-ins and every output the
    # forward makes on the device cost no device memory. Here the device is the CPU.
    import torch
    from kagent_harness import dryrun
    made = []

    def alloc(shape, stride, dtype):
        made.append(tuple(shape))
        return torch.empty_strided(shape, stride, dtype=dtype)
    spec = [{"shape": [4, 3], "stride": [3, 1], "dtype": "float32"}, {"value": 2}]
    x, k = dryrun.stand_ins(spec, "cpu", alloc)
    assert made == [(4, 3)] and k == 2
    with dryrun.NoKernels("cpu", alloc):
        y = (x * k).sum(dim=1)          # two outputs made
        v = y.view(2, 2)                # a view: no allocation
    assert made == [(4, 3), (4, 3), (4,)] and v.shape == (2, 2)


def test_a_phantom_dry_run_makes_what_the_candidate_kept_real(monkeypatch):
    # A phantom that outlives the dry run (here an input the model keeps) would alias
    # other data in the real calls: compile_dry_run has the arena make it real.
    import torch
    from kagent_harness import dryrun, phantom
    arena = _FakeArena()
    monkeypatch.setattr(phantom, "PhantomArena", lambda: arena)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(dryrun, "stand_ins", lambda spec, device, alloc=None:
                        [alloc([4, 3], [3, 1], torch.float32)])

    class Keeps(torch.nn.Module):
        def forward(self, x):
            self.kept = x
            return x[0]

    class Forgets(torch.nn.Module):
        def forward(self, x):
            return x[0]

    res = dryrun.compile_dry_run(Forgets(), [{}], "cuda", phantom=True)
    assert res["error"] == "" and res["phantom"] == {"reserved_mb": 1, "materialized_mb": 0}
    keeps = Keeps()
    res = dryrun.compile_dry_run(keeps, [{}], "cuda", phantom=True)
    assert res["phantom"]["materialized_mb"] == 48 and keeps.kept.shape == (4, 3)


def test_a_phantom_kept_that_cannot_be_made_real_marks_the_process_unsafe(monkeypatch):
    import torch
    from kagent_harness import dryrun, phantom
    from kagent_harness.vmm import VmmError
    arena = _FakeArena()

    def no_memory():
        raise VmmError("cuMemCreate failed: CUresult 2 (CUDA_ERROR_OUT_OF_MEMORY)")
    arena.materialize_survivors = no_memory
    monkeypatch.setattr(phantom, "PhantomArena", lambda: arena)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    monkeypatch.setattr(dryrun, "stand_ins", lambda spec, device, alloc=None:
                        [alloc([4], [1], torch.float32)])

    class Keeps(torch.nn.Module):
        def forward(self, x):
            self.kept = x
            return x

    res = dryrun.compile_dry_run(Keeps(), [{}], "cuda", phantom=True)
    assert "CUDA_ERROR_OUT_OF_MEMORY" in res["phantom_unsafe"]
    assert res["phantom"]["materialized_mb"] == 0


def test_a_phantom_dry_run_where_none_can_be_made_runs_nothing(monkeypatch):
    from kagent_harness import dryrun, phantom
    from kagent_harness.vmm import VmmError

    def fails():
        raise VmmError("cuMemCreate failed: CUresult 2")
    monkeypatch.setattr(phantom, "PhantomArena", fails)
    ran = []

    class Model:
        def __call__(self, *a):
            ran.append(1)
    res = dryrun.compile_dry_run(Model(), [{}], "cuda", phantom=True)
    assert res["phantom_error"] == "VmmError: cuMemCreate failed: CUresult 2" and not ran


def test_a_compile_dry_run_that_times_out_is_tried_once_more_in_a_fresh_process(monkeypatch):
    # No GPU is held while preparing: a dry run that hangs once (49_conv3d_fp32 on the
    # H100, 120 s, fine in the next run) gets a second, fresh process before its TIMEOUT
    # is final; a second hang is final.
    from conftest import FAST, read
    from kagent_harness import prepare as PR
    from kagent_harness import protocol as P
    from kagent_harness.measure import Supervisor
    from kagent_harness.sandbox import ChildFailure
    real = PR.PrepareMixin.compile_dry_run

    def run(hangs):
        calls = []

        def dry_run(self, child, language):
            calls.append(child)
            if len(calls) <= hangs:
                raise ChildFailure(P.TIMEOUT, "no answer from the candidate within 120.0s "
                                   "during the compile dry run")
            return real(self, child, language)
        monkeypatch.setattr(PR.PrepareMixin, "compile_dry_run", dry_run)
        raw = dict(FAST, problem_source=read("problem_relu_add.py"),
                   kernel_source=read("cand_relu_add_good.py"))
        sup = Supervisor(P.Request(raw, mode="measure"), P.Log(), job_id="job-dry")
        prepared, final, reason = sup.run_prepare()
        return calls, prepared, final, reason, sup

    calls, prepared, final, _, sup = run(hangs=1)
    assert prepared is not None and final is None and len(calls) == 2
    assert calls[0] is not calls[1] and prepared.child is calls[1]
    assert "the compile dry run once more, in a fresh process" in sup.log.tail("")
    sup.env.pool.retire(prepared.child)
    calls, prepared, final, reason, _ = run(hangs=2)
    assert prepared is None and len(calls) == 2
    assert final["verdict"] == "TIMEOUT" and "compile dry run" in reason
