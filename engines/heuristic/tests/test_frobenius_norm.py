"""frobenius_norm: x / torch.norm(x, p='fro') (KernelBench level 1, Frobenius norm
normalization) against torch, under Triton's interpreter.

Compared the harness's way (kagent_harness.compare with the default tolerance of the
output dtype). Shapes: size 1 and 0-dim, 1-D with and without a ragged last chunk, 4-D
KernelBench-like and awkward sizes, several pass-1 programs each streaming several
chunks, SPLIT at its 1024 maximum, SPLIT clamped to the chunk count; fp32, bf16 and fp16;
both pass-2 orders; non-contiguous and empty inputs; all zeros (nan, like torch); fp16
norm overflow (zeros, like torch); run-to-run and order-to-order bitwise reproducibility.
"""
import os
import sys

import pytest
import torch
import torch.nn as nn

from template_render import load_model_new

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))

from kagent_harness.compare import compare, tolerances  # noqa: E402


class Model(nn.Module):
    """The KernelBench reference."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        norm = torch.norm(x, p="fro")
        return x / norm


def _check(out, ref):
    atol, rtol = tolerances([ref])
    res = compare([ref], [out], atol, rtol)
    assert res["ok"], res


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape,params", [
    ((1,), dict(BLOCK=64, SPLIT=8, BLOCK_SCALE=64)),             # one element; SPLIT -> 1
    ((4096,), dict(BLOCK=64, SPLIT=4, BLOCK_SCALE=256)),         # 16 chunks / program, no tail
    ((4099,), dict(BLOCK=64, SPLIT=5, BLOCK_SCALE=128)),         # ragged last chunk and block
    ((4, 8, 16, 16), {}),                                        # KernelBench-like, defaults
    ((2, 3, 17, 19), dict(BLOCK=128, SPLIT=7, BLOCK_SCALE=64)),  # awkward 4-D, 1938 elements
    ((3, 5, 7), dict(BLOCK=64, SPLIT=1, BLOCK_SCALE=1024)),      # one pass-1 program
    ((2, 64, 33), dict(BLOCK=256, SPLIT=3, BLOCK_SCALE=512, ORDER="forward")),
    ((65 * 1024 + 7,), dict(BLOCK=64, SPLIT=1024, BLOCK_SCALE=4096, num_warps=4)),  # SPLIT max
])
def test_frobenius_norm(shape, params, dtype):
    torch.manual_seed(0)
    x = (torch.randn(*shape) * 3).to(dtype)
    out = load_model_new("frobenius_norm", **params)()(x)
    ref = Model()(x)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    _check(out, ref)


def test_fp16_scalar_and_order_agree():
    torch.manual_seed(1)
    x = torch.randn(5, 301).half()
    fwd = load_model_new("frobenius_norm", BLOCK=64, SPLIT=6, BLOCK_SCALE=64, ORDER="forward")()
    rev = load_model_new("frobenius_norm", BLOCK=64, SPLIT=6, BLOCK_SCALE=64, ORDER="reverse")()
    a, b = fwd(x), rev(x)
    _check(a, Model()(x))
    assert torch.equal(a, b) and torch.equal(rev(x), b)  # same norm whatever the order, run to run
    s = torch.tensor(-2.5)  # 0-dim: -1
    out = rev(s)
    assert out.shape == () and out.item() == -1.0


def test_noncontiguous_and_empty():
    torch.manual_seed(2)
    model = load_model_new("frobenius_norm", BLOCK=64, SPLIT=3, BLOCK_SCALE=128)()
    base = torch.randn(9, 40, 6)
    for x in (base.transpose(0, 2), base[:, ::3, 1:5], base.permute(1, 0, 2)[3:]):
        assert not x.is_contiguous()
        _check(model(x), Model()(x))
    for x in (torch.randn(0), torch.randn(3, 0, 4).bfloat16()):
        out = model(x)
        assert out.shape == x.shape and out.dtype == x.dtype


@pytest.mark.filterwarnings("ignore:divide by zero encountered")
@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_all_zeros_is_nan_like_torch(dtype):
    x = torch.zeros(3, 50, dtype=dtype)
    out = load_model_new("frobenius_norm", BLOCK=64, SPLIT=2, BLOCK_SCALE=64)()(x)
    ref = Model()(x)
    assert torch.isnan(ref).all() and torch.isnan(out).all()
    _check(out, ref)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")
def test_fp16_norm_overflow_gives_zeros_like_torch():
    # ||x|| = 1000 * 100 = 1e5 > fp16 max: torch.norm returns inf in fp16, x / inf = 0.
    x = torch.full((100, 100), 1000.0, dtype=torch.float16)
    x[0, :7] = -3.0
    out = load_model_new("frobenius_norm", BLOCK=256, SPLIT=4, BLOCK_SCALE=1024)()(x)
    ref = Model()(x)
    assert torch.equal(ref, torch.zeros_like(ref))
    _check(out, ref)


def test_large_values_fp32():
    # Squares up to 1e36: fp32 accumulation stays finite (sum < 3.4e38).
    torch.manual_seed(3)
    x = torch.randn(2000) * 1e17
    _check(load_model_new("frobenius_norm", BLOCK=128, SPLIT=4)()(x), Model()(x))


_SM90 = r"""
import compile_sm90 as c
m = c._load("frobenius_norm")
for dt in ("*fp32", "*bf16"):
    for n in ("i32", "i64"):  # i64: more than 2**31 - 1 elements
        c._compile(f"frobenius_norm partial {dt} n {n}", m.fro_partial_kernel,
                   dict(x_ptr=dt, part_ptr="*fp32", n=n), dict(BLOCK=4096), 8, 2,
                   aligned=("x_ptr", "part_ptr", "n"))
        c._compile(f"frobenius_norm scale {dt} n {n}", m.fro_scale_kernel,
                   dict(x_ptr=dt, y_ptr=dt, part_ptr="*fp32", n=n, num_parts="i32",
                        num_blocks="i32"),
                   dict(BLOCK_SCALE=4096, BLOCK_P=1024, ORDER="reverse"), 8, 1,
                   aligned=("x_ptr", "y_ptr", "part_ptr", "n", "num_blocks"))
c._compile("frobenius_norm scale fp16 forward n unaligned", m.fro_scale_kernel,
           dict(x_ptr="*fp16", y_ptr="*fp16", part_ptr="*fp32", n="i32", num_parts="i32",
                num_blocks="i32"),
           dict(BLOCK_SCALE=1024, BLOCK_P=16, ORDER="forward"), 4, 1,
           aligned=("x_ptr", "y_ptr", "part_ptr"))
"""


def test_compiles_for_sm90_without_spills():
    """Both kernels compile for Hopper at the default sizes (compile_sm90.py's helpers in a
    subprocess without the interpreter; needs triton's NVIDIA backend tools, no GPU)."""
    import json
    import subprocess

    from test_compile_sm90 import _backend
    if not _backend():
        pytest.skip("triton's NVIDIA backend tools are not installed")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    r = subprocess.run([sys.executable, "-c", _SM90], cwd=HERE, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 9, r.stdout + r.stderr[-3000:]
    assert not [row for row in rows if "error" in row or row["stack"] != 0], rows
