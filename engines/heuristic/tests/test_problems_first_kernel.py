"""The heuristic brain's first kernel for the suite's scan, pooling, loss and conv problems.

For each problem of those classes (31-44): record the reference's op signature with the harness, ask the C++ brain
for its first kernel (`kagent-template-render --first-kernel`, found through
KAGENT_TEMPLATE_RENDER or in build/), and compare it with the reference the harness's way
(one seed for both constructors, the reference's state_dict loaded when the keys match,
|c - r| <= atol * max(1, RMS(r)) + rtol * |r| with the default tolerances by dtype), at
KAGENT_PROBLEM_SCALE (default here 300; the scans at their 3-row floor, since the
interpreter runs tl.associative_scan slowly) under Triton's interpreter. Skipped without
the binary.
"""
import importlib.util
import json
import os
import subprocess
import sys
import types

SCALE = os.environ.get("KAGENT_PROBLEM_SCALE", "300")

import pytest  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))

from kagent_harness import compare  # noqa: E402
from kagent_harness.signature import record  # noqa: E402


def _binary():
    env = os.environ.get("KAGENT_TEMPLATE_RENDER")
    if env:
        return env
    for build in ("build", "build-test", "build-heur"):
        path = os.path.join(REPO, build, "engines", "heuristic", "kagent-template-render")
        if os.path.exists(path):
            return path
    return None


BINARY = _binary()
pytestmark = pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")

PROBLEMS = {
    "31_maxpool1d_fp32": "pool_nd",
    "32_avgpool1d_bf16": "pool_nd",
    "33_maxpool2d_fp32": "pool_nd",
    "34_avgpool2d_bf16": "pool_nd",
    "35_conv2d_fp32": "conv2d_implicit_gemm",
    "36_conv2d_depthwise_fp32": "conv2d_depthwise",
    "37_mse_loss_fp32": "loss_reduce",
    "38_cross_entropy_fp32": "loss_rows",
    "39_hinge_loss_fp32": "loss_reduce",
    "40_kl_div_fp32": "loss_reduce",
    "41_smooth_l1_loss_bf16": "loss_reduce",
    "42_cosine_similarity_loss_fp32": "loss_rows",
    "43_cumsum_fp32": "scan_rows",
    "44_cumprod_fp32": "scan_rows",
}
SCALES = {"43_cumsum_fp32": "100000", "44_cumprod_fp32": "100000"}


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _first_kernel(signature):
    r = subprocess.run([BINARY, "--first-kernel", "132"], input=json.dumps(signature),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


def _exec(source, name):
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"kagent_first_{os.getpid()}_{name}.py")
    with open(path, "w") as f:
        f.write(source)
    module = types.ModuleType(f"first_{name}")
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    return module.ModelNew


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_first_kernel_matches_reference(name, monkeypatch):
    # Problems read the scale when they are imported.
    monkeypatch.setenv("KAGENT_PROBLEM_SCALE", SCALES.get(name, SCALE))
    prob = _load(os.path.join(REPO, "problems", name + ".py"), f"prob_{name}")
    torch.manual_seed(1234)
    init = list(prob.get_init_inputs())
    model = prob.Model(*init)
    inputs = prob.get_inputs()
    sig = record(model, inputs)
    source, moves = _first_kernel(sig)
    assert source.startswith("# kagent-template: " + PROBLEMS[name]), moves
    torch.manual_seed(1234)
    cand = _exec(source, name)(*init)
    ref_state = model.state_dict()
    if ref_state and set(ref_state) == set(cand.state_dict()):
        cand.load_state_dict(ref_state)
    with torch.no_grad():
        ref = model(*inputs)
        out = cand(*[t.clone() for t in inputs])
    assert out.shape == ref.shape and out.dtype == ref.dtype
    atol, rtol = compare.tolerances([ref])
    rms = ref.double().pow(2).mean().sqrt().item() if ref.numel() else 0.0
    res = compare.compare([ref], [out], atol * max(1.0, rms), rtol)
    assert res["ok"], f"{name} ({moves.strip()}): {res['reason']}"
