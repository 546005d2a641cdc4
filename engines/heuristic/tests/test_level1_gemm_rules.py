"""The brain's first kernels for KernelBench level 1's matrix-product forms
(tests/gpu/level1_gemm: square, rectangular, batched, matvec, scalar, long and short K,
irregular, tall-skinny, 3-D and 4-D tensor-matrix, diagonal, symmetric, triangular,
transposed A, B or both, at KernelBench's sizes), on an H200's description (sm_90, 132 SMs):
each fp32 product must start on the tensor cores in 3xTF32 (gemm_sm90_tf32x3 or
gemm_cutlass_tf32x3, the layouts and triangle its signature asks for), the memory-bound
forms on their own templates. Render only, on the meta device (full sizes, no memory): a
form whose rule falls back to the FMA kernels (gemm_tiled's fp32, 0.27-0.8x cuBLAS) fails
here before a GPU is held. The GPU figures: tests/gpu/README.md (level1_gemm)."""
import importlib.util
import json
import os
import re
import subprocess

import pytest
import torch

from template_render import REPO
from test_problems_first_kernel import BINARY, record

pytestmark = pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")

FOLDER = os.path.join(REPO, "tests", "gpu", "level1_gemm")
NAMES = sorted(f[:-3] for f in os.listdir(FOLDER) if re.match(r"\d\d_.*\.py$", f))
TENSOR_CORES = ("gemm_sm90_tf32x3", "gemm_cutlass_tf32x3")
# The forms that are no product on the tensor cores, and the template each starts from.
OTHER = {"04_matvec_fp32": ("matvec_row_per_program", "matvec_split_k"),
         "05_matrix_scalar_fp32": ("elementwise",),
         "12_diag_matmul_fp32": ("gemm_diag",)}


def first_kernel(folder, name):
    """The brain's first kernel for problem NAME of FOLDER (a standalone problem file) on an
    H200's description, from its op signature recorded on the meta device."""
    spec = importlib.util.spec_from_file_location(f"l1_{name}", os.path.join(folder, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with torch.device("meta"):
        model = mod.Model(*mod.get_init_inputs())
        inputs = mod.get_inputs()
    sig = record(model, inputs)
    r = subprocess.run([BINARY, "--first-kernel", "132", "--arch", "sm_90"],
                       input=json.dumps(sig), capture_output=True, text=True)
    assert r.returncode == 0, f"{name}: refused: {r.stderr.strip()[-400:]}"
    return r.stdout


def assert_builds_the_reference_layers(folder, name, source, monkeypatch):
    """The first kernel's ModelNew, built from the problem's own constructor arguments (on
    the meta device; a CUDA template's extension a CPU stand-in), has the reference's
    state_dict keys and shapes, so the harness copies the reference's weights into it.
    Session 36's H100 run saw 7 level-1 kernels fail at construction where a problem's
    module holds its sizes inside (no constructor arguments); the pools' windows, which no
    state_dict shows, are test_first_kernel_ops.py's fixed_* cases."""
    from conv_cutlass_double import exec_module
    spec = importlib.util.spec_from_file_location(f"l1ref_{name}", os.path.join(folder, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cand_mod = exec_module(source, monkeypatch)
    with torch.device("meta"):
        ref = mod.Model(*mod.get_init_inputs())
        cand = cand_mod.ModelNew(*mod.get_init_inputs())
    want = {k: tuple(v.shape) for k, v in ref.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in cand.state_dict().items()}
    assert got == want, f"{name}: {got} against the reference's {want}"


def _param(source, pattern):
    m = re.search(pattern, source)
    return m.group(1) if m else None


def test_the_folder_holds_every_form():
    assert len(NAMES) == 18 and NAMES[0].startswith("01_") and NAMES[-1].startswith("18_")


@pytest.mark.parametrize("name", NAMES)
def test_each_form_starts_on_the_template_its_shape_calls_for(name):
    source = first_kernel(FOLDER, name)
    template = source.split("\n", 1)[0].split(": ")[-1]
    if name in OTHER:
        assert template in OTHER[name], f"{name}: {template}"
        return
    assert template in TENSOR_CORES, f"{name}: {template}, not a 3xTF32 tensor-core kernel"
    # The module reads a transposed operand in place (its expression A.mT / B.mT) and
    # keeps the triangle the form asks for.
    a_expr, b_expr = re.search(r"\n        A, B = (.+), (.+)\n", source).groups()
    assert (a_expr == "A.mT") == ("transposed_a" in name or "transposed_both" in name), name
    assert (b_expr == "B.mT") == ("transposed_b" in name or "transposed_both" in name), name
    triangle = _param(source, r'constexpr char kTriangle\[\] = "(\w+)";') or "none"
    want = "upper" if "upper" in name else "lower" if "lower" in name else "none"
    assert triangle == want, f"{name}: TRIANGLE {triangle}"
