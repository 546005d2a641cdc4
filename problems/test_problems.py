"""Every problem of the suite, shrunk, against its starting kernel on the CPU.

For each `NN_name.py` / `NN_name_start.py` pair: build `Model` and `ModelNew` under one
seed (the reference's weights loaded into `ModelNew` when the state_dict matches, as the
harness does), run both on a seeded draw of `get_inputs()` and on a constant-input draw
(every floating input 0.75, like the harness's `const` wide trial), and compare with the
harness's rule: `|c - r| <= atol * max(1, RMS(r)) + rtol * |r|`, default tolerances by
dtype (fp32 1e-4, bf16 1e-2). Triton runs under its interpreter (TRITON_INTERPRET=1).

Sizes: KAGENT_PROBLEM_SCALE (default here 300, an odd divisor so block sizes do not
divide the shapes) shrinks every problem; set it before running to try another.
One problem: `pytest problems/test_problems.py -k 33_maxpool2d`.
The `harness` test loads one problem through `python -m kagent_harness measure`.
"""

import glob
import importlib.util
import json
import os
import subprocess
import sys

os.environ.setdefault("KAGENT_PROBLEM_SCALE", "300")
os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))

from kagent_harness import compare  # noqa: E402

PROBLEMS = sorted(p[:-len("_start.py")] for p in glob.glob(os.path.join(HERE, "*_start.py")))
IDS = [os.path.basename(p) for p in PROBLEMS]


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _flat(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for o in out for t in _flat(o)]


def _check(ref_out, cand_out, what):
    refs, cands = _flat(ref_out), _flat(cand_out)
    assert len(refs) == len(cands), what
    for i, (r, c) in enumerate(zip(refs, cands)):
        atol, rtol = compare.tolerances([r])
        if r.is_floating_point():
            rms = r.double().pow(2).mean().sqrt().item() if r.numel() else 0.0
            atol *= max(1.0, rms)
        res = compare.compare([r], [c], atol, rtol)
        assert res["ok"], f"{what}, output {i}: {res['reason']}"


def test_suite_shape():
    assert len(PROBLEMS) >= 40
    for p in PROBLEMS:
        assert os.path.exists(p + ".py"), p
    dtypes = {open(p + ".py").read().count("bfloat16") > 0 for p in PROBLEMS}
    assert dtypes == {True, False}, "both fp32 and bf16 problems"


@pytest.mark.parametrize("stem", PROBLEMS, ids=IDS)
def test_start_kernel_matches_reference(stem):
    name = os.path.basename(stem)
    prob = _load(stem + ".py", f"prob_{name}")
    cand = _load(stem + "_start.py", f"cand_{name}")
    src = open(stem + ".py").read()
    assert "manual_seed" not in src, "problems must not seed themselves"
    torch.manual_seed(1234)
    init = list(prob.get_init_inputs())
    torch.manual_seed(1)
    model = prob.Model(*init)
    torch.manual_seed(1)
    new = cand.ModelNew(*init)
    ref_sd = model.state_dict()
    new_sd = new.state_dict()
    if ref_sd and set(ref_sd) == set(new_sd) and all(
            ref_sd[k].shape == new_sd[k].shape for k in ref_sd):
        new.load_state_dict(ref_sd)
    torch.manual_seed(7)
    inputs = list(prob.get_inputs())
    const = [torch.full_like(x, 0.75) if isinstance(x, torch.Tensor) and x.is_floating_point()
             else x for x in inputs]
    for label, xs in (("seeded", inputs), ("const", const)):
        with torch.no_grad():
            ref = model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in xs])
            out = new(*[x.clone() if isinstance(x, torch.Tensor) else x for x in xs])
        _check(ref, out, f"{name} ({label} inputs)")


@pytest.mark.parametrize("name", ["28_rmsnorm_fp32"])
def test_loads_in_harness(name, tmp_path):
    stem = os.path.join(HERE, name)
    req = {
        "problem_source": open(stem + ".py").read(),
        "kernel_source": open(stem + "_start.py").read(),
        "device": "cpu",
        "trials": 2,
        "timing_reps": 2,
        "warmup_iters": 1,
        "warmup_ms": 0,
        "network_isolation": False,
    }
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    proc = subprocess.run([sys.executable, "-m", "kagent_harness", "measure"],
                          input=json.dumps(req), capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads(proc.stdout)
    assert res["verdict"] == "CORRECT", json.dumps(res.get("correctness"))[:2000]
