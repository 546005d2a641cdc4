"""The own-kernel rule (ownwork.py): the work of each gate call is the candidate's own.

End to end on the CPU (Triton interpreter, the candidate in its own child process): a
token kernel beside a library op (matmul, conv2d, softmax, a full sum) is REJECTED with
the op named; a candidate that steps around the op recorder is REJECTED as tampering; a
real kernel with torch glue is CORRECT. Then the rule itself on recorded summaries and
synthetic GPU kernel times, and the doc's tables against the code's sets."""

import os
import re

import pytest

from conftest import measure
from kagent_harness import ownwork as W

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RED = [
    # problem, candidate, fragment of the reason
    ("problem_own_matmul.py", "cand_own_token_matmul.py", "library op aten::mm"),
    ("problem_own_conv.py", "cand_own_token_conv.py", "library op aten::convolution"),
    ("problem_own_softmax.py", "cand_own_token_softmax.py", "torch's aten::_softmax"),
    ("problem_own_sum.py", "cand_own_token_sum.py", "torch's aten::sum"),
    ("problem_own_sum.py", "cand_own_tamper_pop.py", W.TAMPERED),
    ("problem_own_sum.py", "cand_own_tamper_disable.py", W.TAMPERED),
    ("problem_own_sum.py", "cand_own_tamper_modes.py", W.TAMPERED),
]


@pytest.mark.parametrize("problem,cand,why", RED, ids=[c[1][9:-3] for c in RED])
def test_library_work_beside_a_token_kernel_is_rejected(problem, cand, why):
    r = measure(problem, cand, time_candidate=False)
    assert r["verdict"] == "REJECTED", r["correctness"]["reason"] + r["log"][-2000:]
    assert why in r["correctness"]["reason"]
    assert r["correctness"]["trials_passed"] == 0  # the first call already breaks it


def test_real_kernel_with_torch_glue_is_correct():
    r = measure("problem_own_sum.py", "cand_own_sum_partials.py")
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"][-2000:]


def test_the_suites_good_candidates_still_pass():
    r = measure("problem_linear.py", "cand_linear_triton.py", time_candidate=False)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"]


# -- the rule on summaries (no child) ----------------------------------------------------

def _summary(ops, sentinels=2, on_stack=True, tampered=None):
    return {"ops": ops, "events": sum(v[0] for v in ops.values()), "sentinels": sentinels,
            "on_stack": on_stack, "tampered": tampered}


def test_glue_at_full_size_passes_and_small_partials_pass():
    s = _summary({"aten::empty": [2, 4096, 4096], "aten::clone": [1, 4096, 4096],
                  "aten::view": [3, 4096, 4096], "aten::_to_copy": [1, 4096, 4096],
                  "aten::sum": [1, 255, 255]})  # 255 < 4096 / 16
    assert W.judge_ops(s, {"sum"}, 4096, "t")


def test_size_is_summed_over_calls():
    # torch.sum row by row: every call small, together the whole input.
    s = _summary({"aten::sum": [64, 4096, 64]})
    v = W.judge_ops(s, set(), 4096, "t")
    assert not v and "4096 elements in 64 call(s)" in v.reason


def test_the_references_elementwise_op_at_full_size_is_rejected_other_ops_are_not():
    s = _summary({"aten::relu": [1, 4096, 4096]})
    assert not W.judge_ops(s, {"relu"}, 4096, "t")
    assert W.judge_ops(s, {"sigmoid"}, 4096, "t")  # not the op: the GPU share judges it


def test_heavy_ops_are_rejected_at_any_size():
    for op in ("aten::mm", "aten::addmm", "aten::bmm", "aten::convolution",
               "aten::_scaled_dot_product_flash_attention", "aten::cudnn_convolution",
               "aten::_scaled_mm", "aten::mv"):
        v = W.judge_ops(_summary({op: [1, 4, 4]}), set(), 1 << 20, "t")
        assert not v and op in v.reason, op


def test_device_moves_of_the_problems_size_are_rejected():
    assert not W.judge_ops(_summary({W.DEVICE_MOVE: [1, 4096, 4096]}), set(), 4096, "t")
    assert W.judge_ops(_summary({W.DEVICE_MOVE: [1, 16, 16]}), set(), 4096, "t")


@pytest.mark.parametrize("s", [
    None, {"ops": []}, {"ops": {"aten::mm": [1, 2]}, "sentinels": 2, "events": 1},
    _summary({}, sentinels=1), _summary({}, on_stack=False),
    _summary({}, tampered="the dispatch mode was popped")])
def test_missing_malformed_or_tampered_recordings_are_rejected(s):
    v = W.judge_ops(s, set(), 100, "t")
    assert not v and W.TAMPERED in v.reason


def test_recorder_in_process():
    import torch
    W.install_guards()
    x = torch.randn(64, 64)
    rec = W.make_recorder()
    with rec:
        rec.sentinel()
        y = torch.empty_like(x)
        y.copy_(x)
        torch.sum(x.view(-1)[:100])
        torch.mm(x, x)
        rec.sentinel()
        on = W.mode_on_stack(rec)
    s = rec.summary(on)
    assert s["sentinels"] == 2 and s["on_stack"] and s["tampered"] is None
    assert s["ops"]["aten::mm"] == [1, 4096, 4096]
    assert s["ops"]["aten::sum"] == [1, 100, 100]
    rec = W.make_recorder()
    with rec:
        with torch._C._DisableTorchDispatch():
            torch.mm(x, x)
    assert "disabled" in rec.summary(True)["tampered"]
    assert "aten::mm" not in rec.summary(True)["ops"]


def test_gpu_rule_on_kernel_times():
    own = lambda n: n == "my_kernel"  # noqa: E731
    busy, heavy = W.split_busy([("my_kernel", 0.01), ("ampere_sgemm_128x64_nn", 1.0)], own)
    v = W.judge_kernels(busy, heavy, "c")
    assert not v and "ampere_sgemm" in v.reason
    busy, heavy = W.split_busy(
        [("my_kernel", 0.1), ("void at::native::reduce_kernel<512, 1>", 0.5)], own)
    v = W.judge_kernels(busy, heavy, "c")
    assert not v and "17%" in v.reason
    assert W.judge_kernels(busy, heavy, "c", share_rule=False)
    # copies and fills are glue: left out of the share
    busy, heavy = W.split_busy(
        [("my_kernel", 0.1), ("void at::native::elementwise_kernel<direct_copy_kernel_cuda>", 5.0),
         ("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>", 5.0),
         ("void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>", 0.05)], own)
    assert heavy == [] and busy["glue"] == pytest.approx(10.0)
    assert W.judge_kernels(busy, heavy, "c")


# -- the doc says what the code does --------------------------------------------------

def _doc_section():
    text = open(os.path.join(REPO, "docs", "harness.md"), encoding="utf-8").read()
    m = re.search(r"^## Own-kernel rule\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, "docs/harness.md has no '## Own-kernel rule' section"
    return m.group(1)


def _doc_list(section, label):
    m = re.search(r"^\| " + re.escape(label) + r" \| (.*?) \|$", section, re.M)
    assert m, f"no table row '{label}'"
    return {t for t in re.findall(r"`([^`]+)`", m.group(1))}


@pytest.mark.parametrize("label,values", [
    ("glue (any size)", W.GLUE_OPS),
    ("heavy (any size)", W.HEAVY_OPS),
    ("heavy prefixes", set(W.HEAVY_PREFIXES)),
    ("reductions (comparable size)", W.REDUCTION_OPS),
    ("reduction prefixes", set(W.REDUCTION_PREFIXES)),
    ("heavy kernel names", set(W.HEAVY_KERNEL_PATTERNS)),
    ("glue kernel names", set(W.GLUE_KERNEL_PATTERNS)),
])
def test_doc_tables_match_the_code(label, values):
    assert _doc_list(_doc_section(), label) == set(values)


def test_doc_thresholds_match_the_code():
    s = _doc_section()
    assert f"1/{round(1 / W.COMPARABLE_FRACTION)}" in s
    assert f"{round(100 * W.MIN_OWN_GPU_SHARE)} %" in s


def test_a_mode_left_above_the_recorder_is_tampering():
    # The child's wrapper around a gate call's forward (child._OpRecording), in process.
    import torch
    import torch.utils._python_dispatch as pd
    from torch.utils._python_dispatch import TorchDispatchMode
    from kagent_harness.child import _OpRecording

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    try:
        with _OpRecording() as ops:
            PassThrough().__enter__()   # never exited: the recorder's exit pops it instead
            torch.ones(8).sum()
        v = W.judge_ops(ops.summary, set(), 8, "t")
        assert not v and "left above the recorder" in v.reason
    finally:
        while pd._len_torch_dispatch_stack() > 0:
            pd._pop_mode()
    with _OpRecording() as ops:         # a clean call afterwards
        torch.ones(8).sum()
    assert ops.summary["tampered"] is None and ops.summary["sentinels"] == 2


def test_the_warm_up_pays_the_first_recording_and_leaves_no_mode_behind():
    """ownwork.warm_up, in a process of its own (this one imported torch._dynamo long
    ago): the import the first op under a dispatch mode makes happens in it, and neither
    a mode nor an active recorder is left; a candidate's process reports it when ready."""
    import subprocess
    import sys
    code = ("import sys, torch\n"
            "from kagent_harness import ownwork\n"
            "before = 'torch._dynamo' in sys.modules\n"
            "s = ownwork.warm_up(torch, 'cpu')\n"
            "from torch.utils._python_dispatch import _get_current_dispatch_mode\n"
            "print(before, 'torch._dynamo' in sys.modules, _get_current_dispatch_mode(),\n"
            "      ownwork._ACTIVE[0], s > 0)\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(W.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.stdout.split() == ["False", "True", "None", "None", "True"], out.stderr[-2000:]
    r = measure("problem_relu_add.py", "cand_relu_add_good.py", time_candidate=False)
    assert "the op recorder warmed up when the process started: " in r["log"], r["log"][-3000:]
