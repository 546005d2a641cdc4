"""torch.compile compiled beside the gate (compile_ahead.py): the baseline measured from
the compilation the thread made, a graph break refused before anything ran, and the
measurement end to end with it on (KAGENT_COMPILE_AHEAD=1; off by default)."""

import torch

from conftest import measure

PROBLEM = "problem_relu_add.py"


class _Plain(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y) * 2.0


class _Breaks(torch.nn.Module):
    """A graph break before its first op: with fullgraph=False, Dynamo would run the
    code around it on the stand-ins."""

    def __init__(self):
        super().__init__()
        self.ran = 0

    def forward(self, x):
        self.ran += 1
        if x.sum().item() > 0:  # data-dependent control flow: a graph break
            return x * 2
        return x * 3


def test_the_first_real_call_uses_the_compilation_made_ahead():
    from kagent_harness import compile_ahead as ca
    torch.set_grad_enabled(False)
    model = _Plain()
    x, y = torch.randn(64, 33), torch.randn(64, 33)
    ahead = ca.CompileAhead(model, [x, y], "cpu")
    assert ahead.join(timeout=300)
    assert ahead.error is None, ahead.error
    assert ahead.seconds > 0
    before = ca.compiles()
    got = ca.compiled_module(model)(x, y)
    assert ca.compiles() == before  # served by the thread's compilation
    torch.testing.assert_close(got, torch.relu(x + y) * 2.0)
    # Other shapes are other guards: compiled on their first call, as without it.
    ca.compiled_module(model)(torch.randn(8, 5), torch.randn(8, 5))
    assert ca.compiles() == before + 1


def test_a_graph_break_is_an_error_before_the_forward_runs():
    from kagent_harness import compile_ahead as ca
    model = _Breaks()
    ahead = ca.CompileAhead(model, [torch.randn(16)], "cpu")
    assert ahead.join(timeout=300)
    assert ahead.error and "forward returned" not in ahead.error, ahead.error
    assert model.ran == 0  # traced, never run on the stand-ins
    # The measurement's own module still compiles it (with the break) on its first call.
    x = torch.randn(16)
    expected = x * 2 if x.sum() > 0 else x * 3
    torch.testing.assert_close(ca.compiled_module(model)(x), expected)


def test_stand_ins_keep_the_metadata_and_pass_other_values():
    from kagent_harness.compile_ahead import stand_ins
    x = torch.randn(4, 6).t()
    out, arena = stand_ins([x, 3, "s"], "cpu")
    assert arena is None
    assert out[0].shape == x.shape and out[0].stride() == x.stride()
    assert out[0].dtype == x.dtype and out[0].data_ptr() != x.data_ptr()
    assert out[1:] == [3, "s"]


def test_wanted_follows_the_setting(monkeypatch):
    from kagent_harness.compile_ahead import wanted
    monkeypatch.delenv("KAGENT_COMPILE_AHEAD", raising=False)
    assert not wanted("cuda") and not wanted("cpu")  # off by default (session 27)
    monkeypatch.setenv("KAGENT_COMPILE_AHEAD", "auto")
    assert wanted("cuda") and not wanted("cpu")
    monkeypatch.setenv("KAGENT_COMPILE_AHEAD", "1")
    assert wanted("cpu")
    monkeypatch.setenv("KAGENT_COMPILE_AHEAD", "0")
    assert not wanted("cuda")


def test_a_measurement_compiles_torch_compile_beside_the_gate(monkeypatch):
    monkeypatch.setenv("KAGENT_COMPILE_AHEAD", "1")
    r = measure(PROBLEM, "cand_relu_add_good.py", baselines=True)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    assert r["compiled"] is not None and r["compiled"]["count"] == 3, r["log"]
    assert r["eager"] is not None and r["eager"]["count"] == 3
    phases = r["harness"]["phases_ms"]
    assert "baselines: torch.compile's compilation ahead (beside the gate)" in phases
    assert "baselines: torch.compile's compilation ahead, waited for" in phases
    assert "compiled again" not in r["log"] and "ahead failed" not in r["log"], r["log"]


def test_a_rejected_candidate_still_gets_its_torch_compile_baseline(monkeypatch):
    monkeypatch.setenv("KAGENT_COMPILE_AHEAD", "1")
    r = measure(PROBLEM, "cand_relu_add_wrong.py", baselines=True)
    assert r["verdict"] == "INCORRECT"
    assert r["compiled"] is not None and r["compiled"]["count"] == 3, r["log"]


def test_a_compilation_that_does_not_end_leaves_no_torch_compile_baseline(monkeypatch):
    # Bounded wait: no second compilation racing the first, a warning instead.
    from kagent_harness import compile_ahead as ca
    monkeypatch.setenv("KAGENT_COMPILE_AHEAD", "1")
    monkeypatch.setattr(ca.CompileAhead, "join", lambda self, timeout=None: False)
    r = measure(PROBLEM, "cand_relu_add_good.py", baselines=True)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    assert r["compiled"] is None and r["eager"] is not None
    assert any("did not end within" in w for w in r["harness"]["warnings"])
