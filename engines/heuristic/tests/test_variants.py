"""The brain's variants of a first kernel are correct kernels, run under the interpreter.

`kagent-template-render --first-kernel SMS --variants` prints the brain's first kernel for
a recorded op signature and its variants (BrainResult::variants: renders of the same
template at neighbouring knob values, which the coordinator screens together with the
kernel). Each variant must be a distinct render of the kernel's template and compute what
the reference computes, the harness's way (test_problems_first_kernel.py, at its scale),
since the screen's winner may be any of them. A few problems of different templates, so
that every variant runs. Skipped without the binary.
"""
import json
import subprocess

import pytest

from test_problems_first_kernel import BINARY, PROBLEMS, _problem, assert_matches_reference

pytestmark = pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")

MAX_VARIANTS = 6  # kDefaultMaxVariants (template_variants.h)

# Problems whose first kernels come from different templates and whose variants move
# different knobs (tl.dot tiles, split-K, inner columns, row chunks, loss rows); about ten
# seconds in all (pooling and convolution variants take a minute each here).
CASES = ["01_matmul_square_fp32", "08_matvec_bf16", "20_sum_dim_fp32", "25_softmax_fp32",
         "38_cross_entropy_fp32"]


def _first_kernel_and_variants(signature):
    r = subprocess.run([BINARY, "--first-kernel", "132", "--variants"],
                       input=json.dumps(signature), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", CASES)
def test_first_kernel_variants_match_reference(name, monkeypatch):
    prob, init, model, inputs, sig = _problem(name, monkeypatch)
    out = _first_kernel_and_variants(sig)
    header = "# kagent-template: " + PROBLEMS[name] + "\n"
    assert out["origin"] == "template:" + PROBLEMS[name]
    assert out["kernel"].startswith(header)
    variants = out["variants"]
    assert 1 <= len(variants) <= MAX_VARIANTS
    sources = [out["kernel"]] + [v["source"] for v in variants]
    assert len(set(sources)) == len(sources), "variants repeat each other or the kernel"
    for v in variants:
        assert v["source"].startswith(header), v["change"]
        # One knob moved: "NAME old -> new".
        assert v["change"].count("->") == 1, v["change"]
        assert_matches_reference(name, model, init, inputs, v["source"], v["change"])
