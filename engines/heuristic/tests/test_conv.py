import os
import sys

import pytest
import torch
import torch.nn as nn

from template_render import load_model_new

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from kagent_harness.compare import compare, tolerances  # noqa: E402

SMALL = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)


def _run(x, ctor, kw, params, ref_kw=None):
    """Reference nn.Conv2d and the candidate built with the same seed (the harness's way)."""
    torch.manual_seed(123)
    ref = nn.Conv2d(*ctor, **(kw if ref_kw is None else ref_kw))
    torch.manual_seed(123)
    cand = load_model_new("conv2d_implicit_gemm", **dict(SMALL, **params))(*ctor, **kw)
    assert torch.equal(cand.conv.weight, ref.weight)
    r, out = ref(x), cand(x)
    assert out.shape == r.shape and out.dtype == r.dtype
    return r, out


@pytest.mark.parametrize("shape,ctor,kw", [
    ((2, 5, 9, 11), (5, 7, 3), dict(padding=1, bias=False)),        # odd channels, ragged tiles
    ((1, 3, 8, 8), (3, 20, 3, 2, 1, 1, 1, False), {}),              # stride 2, all positional
    ((2, 17, 7, 6), (17, 4, (3, 2)), dict(dilation=2, bias=True)),  # non-square, dilation, bias
    ((1, 1, 1, 1), (1, 1, 1), dict(bias=True)),                     # 1x1 everything
    ((1, 2, 5, 4), (2, 3, 3, 1, 2), dict(bias=False)),              # padding larger than needed
])
def test_conv2d(shape, ctor, kw):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    ref, out = _run(x, ctor, kw, {})
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_conv2d_shape_params_when_constructor_omits_them():
    # problems/35: Model(in, out, k) with padding k // 2 and no bias inside the model: the
    # brain infers PADDING/BIAS from the recorded shapes and the template uses them.
    x = torch.randn(1, 4, 6, 5)
    ref, out = _run(x, (4, 6, 3), {}, dict(PADDING=1, BIAS="True", STRIDE=2),
                    ref_kw=dict(padding=1, bias=True, stride=2))
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_conv2d_noncontiguous_and_bf16():
    x = torch.randn(2, 6, 7, 16).permute(0, 3, 1, 2)  # (2, 16, 6, 7) channels-last strides
    ref, out = _run(x, (16, 8, 3), dict(padding=1), dict(BIAS="True"))  # nn.Conv2d's default bias
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    xb = torch.randn(1, 8, 5, 6, dtype=torch.bfloat16)
    torch.manual_seed(5)
    cand = load_model_new("conv2d_implicit_gemm", **SMALL)(8, 5, 3).to(torch.bfloat16)
    out = cand(xb)
    assert out.dtype == torch.bfloat16
    ref = nn.functional.conv2d(xb.float(), cand.conv.weight.float())
    torch.testing.assert_close(out.float(), ref, atol=5e-2, rtol=2e-2)


def test_conv2d_64bit_offsets_path():
    # The 64-bit offset path (tensors of 2**31+ elements) on a small problem: forced.
    x = torch.randn(2, 3, 7, 6)
    torch.manual_seed(9)
    cand = load_model_new("conv2d_implicit_gemm", **SMALL)(3, 5, 3, 2, 1, 1, 1, True)
    cand.forward.__globals__["_INT64_FROM"] = 0
    torch.manual_seed(9)
    ref = nn.Conv2d(3, 5, 3, 2, 1, 1, 1, True)
    torch.testing.assert_close(cand(x), ref(x), atol=1e-4, rtol=1e-4)


def _check_harness(out, ref):
    """The harness's gate: the output dtype's default tolerance, atol scaled by max(1, rms(ref))."""
    atol, rtol = tolerances([ref])
    rms = ref.double().pow(2).mean().sqrt().item() if ref.numel() else 0.0
    res = compare([ref], [out], atol * max(1.0, rms), rtol)
    assert res["ok"], res


# Grouped convolution: one implicit GEMM per group on grid axis 1. Per-group channel counts
# that are not multiples of 16, BLOCK_N and BLOCK_K larger than CO/G and C/G (masked to the
# group), stride 2, padding, dilation, bias on and off, batch 1, ragged pixel tiles.
GROUPED = [  # input shape, (in, out, kernel), the rest
    ((2, 8, 9, 11), (8, 12, 3), dict(padding=1, groups=2, bias=False)),  # CO/G 6
    ((1, 24, 10, 7), (24, 18, 3), dict(stride=2, padding=1, groups=3, bias=True)),  # C/G 8
    ((1, 32, 13, 12), (32, 64, (3, 2)),  # non-square kernel, CO/G 16
     dict(dilation=2, padding=(2, 1), groups=4, bias=True)),
    ((2, 40, 6, 9), (40, 24, 1), dict(groups=8, bias=False)),  # 1x1, C/G 5, CO/G 3
    ((1, 48, 11, 11), (48, 40, 5),  # C/G 6, CO/G 5
     dict(stride=2, padding=2, dilation=2, groups=8, bias=True)),
    ((1, 36, 9, 8), (36, 60, 3),  # C/G 18 > BLOCK_K 16, CO/G 30
     dict(stride=(2, 1), padding=1, groups=2, bias=True)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape,ctor,kw", GROUPED)
def test_conv2d_grouped(shape, ctor, kw, dtype):
    torch.manual_seed(0)
    x = torch.randn(*shape).to(dtype)
    blocks = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, GROUP_M=2)
    torch.manual_seed(123)
    ref_mod = nn.Conv2d(*ctor, **kw).to(dtype)
    torch.manual_seed(123)
    cand = load_model_new("conv2d_implicit_gemm", **blocks)(*ctor, **kw).to(dtype)
    assert torch.equal(cand.conv.weight, ref_mod.weight)
    with torch.no_grad():
        ref, out = ref_mod(x), cand(x)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    _check_harness(out, ref)


@pytest.mark.parametrize("blocks", [
    dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=1),   # CO/G 20 spans two N tiles
    dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8),   # every tile larger than the group
])
def test_conv2d_grouped_positional_and_groups_param(blocks):
    # All positional (nn.Conv2d order, groups at index 6), and a constructor that omits
    # groups: the GROUPS param (the brain's fallback from the recorded weight shape).
    torch.manual_seed(0)
    x = torch.randn(1, 16, 7, 9)
    ref, out = _run(x, (16, 80, 3, 2, 1, 1, 4, True), {}, blocks)
    _check_harness(out, ref)
    ref, out = _run(x, (16, 80, 3), {}, dict(blocks, GROUPS=4, PADDING=1, BIAS="True"),
                    ref_kw=dict(padding=1, groups=4, bias=True))
    _check_harness(out, ref)


def test_conv2d_grouped_groups_are_independent_and_deterministic():
    # Zeroing one group's input changes only that group's outputs; runs are bitwise equal.
    torch.manual_seed(0)
    x = torch.randn(1, 24, 8, 8)
    torch.manual_seed(1)
    cand = load_model_new("conv2d_implicit_gemm", **SMALL)(24, 12, 3, 1, 1, 1, 3, False)
    y = cand(x)
    assert torch.equal(y, cand(x))
    x2 = x.clone()
    x2[:, 8:16] = 0
    y2 = cand(x2)
    assert torch.equal(y2[:, :4], y[:, :4]) and torch.equal(y2[:, 8:], y[:, 8:])
    assert torch.count_nonzero(y2[:, 4:8]) == 0


def test_conv2d_grouped_64bit_offsets_path():
    x = torch.randn(2, 12, 7, 6)
    torch.manual_seed(9)
    cand = load_model_new("conv2d_implicit_gemm", **SMALL)(12, 9, 3, 2, 1, 1, 3, True)
    cand.forward.__globals__["_INT64_FROM"] = 0
    torch.manual_seed(9)
    ref = nn.Conv2d(12, 9, 3, 2, 1, 1, 3, True)
    _check_harness(cand(x), ref(x))


def test_conv2d_depthwise_runs_correctly_too():
    # Depthwise (groups = C) belongs to conv2d_depthwise, but the implicit GEMM is correct.
    x = torch.randn(1, 6, 5, 7)
    ref, out = _run(x, (6, 12, 3), dict(padding=1, groups=6), dict(BIAS="True"))
    _check_harness(out, ref)
