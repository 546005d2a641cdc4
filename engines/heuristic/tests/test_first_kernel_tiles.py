"""The reduction problems' first kernels tile the dim the reference reduces.

At KAGENT_PROBLEM_SCALE=64, problems 20-24 have an input of 2 x 64 x 64: the output's
shape alone cannot tell a reduction over dim 1 from one over dim 2. The brain must read
the dim the harness recorded (OpRecord.scalars), else a reduction over dim 1 gets the
last-dim tiles (BLOCK_I = 1: one strided column per program; 15x slower than the
starting kernel on an H200 for problems/24) while staying correct, which the
correctness test (test_problems_first_kernel.py) cannot see. Skipped without the binary.
"""
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))

from kagent_harness.signature import record  # noqa: E402
from test_problems_first_kernel import BINARY  # noqa: E402

# problem -> (reduced dim, whether the kernel tiles inner columns)
CASES = {
    "20_sum_dim_fp32": (1, True),
    "21_mean_dim_bf16": (2, False),
    "22_max_dim_fp32": (1, True),
    "23_argmax_dim_fp32": (2, False),
    "24_min_dim_bf16": (1, True),
}


@pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")
@pytest.mark.parametrize("name", sorted(CASES))
def test_reduction_tiles_follow_the_recorded_dim(name, monkeypatch):
    monkeypatch.setenv("KAGENT_PROBLEM_SCALE", "64")
    spec = importlib.util.spec_from_file_location(f"tiles_{name}", os.path.join(REPO, "problems", name + ".py"))
    prob = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(prob)
    inputs = prob.get_inputs()
    assert inputs[0].shape[1] == inputs[0].shape[2], "the case needs equal dims 1 and 2"
    sig = record(prob.Model(*prob.get_init_inputs()), inputs)
    r = subprocess.run([BINARY, "--first-kernel", "132"], input=json.dumps(sig),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    dim, tiled = CASES[name]
    assert f"dim={dim}" in r.stderr, r.stderr
    block_i = re.search(r"BLOCK_I = min\((\d+),", r.stdout)
    assert block_i, r.stdout[:2000]
    assert (int(block_i.group(1)) > 1) == tiled, r.stderr
