"""conv3d_implicit_gemm under Triton's interpreter: nn.Conv3d and nn.Conv1d (run as 3-D
with unit depth and height) against torch, with ragged tiles, unit dims, strides,
dilations, asymmetric kernels and paddings, groups, bias on and off, fp32 and bf16, and
non-contiguous inputs; both constructor modes (CTOR torch and recorded)."""
import os
import sys

import pytest
import torch
import torch.nn as nn

from template_render import load_model_new

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from kagent_harness.compare import compare, tolerances  # noqa: E402

# Triton's interpreter pays per program and loop step, not per element: the tests mostly
# take one 128-row tile of voxels (ragged) and keep the multi-tile cases small.
SMALL = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)
WIDE = dict(BLOCK_M=128, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)
MODULES = {1: nn.Conv1d, 3: nn.Conv3d}


def _check_harness(out, ref):
    """The harness's gate: the output dtype's default tolerance, atol scaled by max(1, rms(ref))."""
    assert out.shape == ref.shape and out.dtype == ref.dtype
    atol, rtol = tolerances([ref])
    rms = ref.double().pow(2).mean().sqrt().item() if ref.numel() else 0.0
    res = compare([ref], [out], atol * max(1.0, rms), rtol)
    assert res["ok"], res


def _run(dims, x, ctor, kw, params=None, dtype=torch.float32, blocks=WIDE):
    """Reference nn.Conv3d / nn.Conv1d and the candidate built with the same seed."""
    params = dict(params or {})
    if "bias" not in kw and len(ctor) < 8:
        params.setdefault("BIAS", "True")  # nn.Conv3d's default; the brain renders the recorded one
    torch.manual_seed(123)
    ref = MODULES[dims](*ctor, **kw).to(dtype)
    torch.manual_seed(123)
    cand = load_model_new("conv3d_implicit_gemm", DIMS=dims,
                          **dict(blocks, **params))(*ctor, **kw).to(dtype)
    assert type(cand.conv) is MODULES[dims]
    assert torch.equal(cand.conv.weight, ref.weight)
    with torch.no_grad():
        return ref(x.to(dtype)), cand(x.to(dtype))


CONV3D = [  # input shape, (in, out, kernel), the rest, tiles
    ((2, 3, 4, 5, 7), (3, 5, 3), dict(padding=1), WIDE),  # 280 voxels: 3 ragged tiles, bias
    ((1, 2, 7, 6, 5), (2, 3, 3), dict(stride=2, dilation=2, padding=2, bias=False), SMALL),
    ((1, 8, 3, 6, 5), (8, 12, (1, 3, 2)), dict(groups=2, dilation=(1, 2, 1), bias=True), WIDE),
    ((2, 5, 1, 1, 9), (5, 4, (1, 1, 3)), dict(padding=(0, 0, 1)), WIDE),  # size-1 D and H
    ((1, 1, 2, 3, 2), (1, 1, 1), {}, WIDE),                                # 1x1x1, one channel
    # groups 2 with C/G 18 > BLOCK_K and C_out/G 20 > BLOCK_N: two K chunks, two N tiles
    ((1, 36, 3, 3, 4), (36, 40, 2), dict(groups=2, stride=(2, 1, 1)), WIDE),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape,ctor,kw,blocks", CONV3D)
def test_conv3d(shape, ctor, kw, blocks, dtype):
    torch.manual_seed(0)
    ref, out = _run(3, torch.randn(*shape), ctor, kw, dtype=dtype, blocks=blocks)
    _check_harness(out, ref)
    if dtype == torch.float32:
        torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_conv3d_asymmetric_kernel_stride_padding():
    # KernelBench level 1's (3, 5, 7) kernel, with stride and padding per dim.
    torch.manual_seed(0)
    x = torch.randn(1, 4, 4, 9, 11)
    ref, out = _run(3, x, (4, 6, (3, 5, 7), (1, 2, 1), (0, 1, 3)), {})
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


CONV1D = [
    ((2, 3, 17), (3, 5, 3), dict(padding=1), WIDE),
    ((1, 4, 40), (4, 6, 5, 2, 2, 2, 1, False), {}, SMALL),  # all positional: stride 2, dilation 2
    ((3, 6, 9), (6, 8, 3), dict(groups=2, bias=True, padding=4), WIDE),  # padding > kernel
    ((1, 2, 1), (2, 3, 1), {}, WIDE),                                     # length 1
    ((2, 8, 33), (8, 16, 4), dict(stride=3, groups=4, bias=False), WIDE),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("shape,ctor,kw,blocks", CONV1D)
def test_conv1d(shape, ctor, kw, blocks, dtype):
    torch.manual_seed(0)
    ref, out = _run(1, torch.randn(*shape), ctor, kw, dtype=dtype, blocks=blocks)
    _check_harness(out, ref)
    if dtype == torch.float32:
        torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_noncontiguous_inputs():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 4, 5, 16).permute(0, 4, 1, 2, 3)  # (1, 16, 3, 4, 5) channels-last
    ref, out = _run(3, x, (16, 8, 3), dict(padding=1))
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    x = torch.randn(2, 9, 3, 22)[:, ::2, 1, ::2]  # (2, 5, 11), every dim strided
    ref, out = _run(1, x, (5, 7, 3), dict(stride=2, padding=1))
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    x = torch.randn(2, 11, 5).transpose(1, 2)  # (2, 5, 11), channel stride 1
    ref, out = _run(1, x, (5, 7, 3), dict(stride=2, padding=1))
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dims,shape,ctor,ref_kw", [
    # KernelBench's (k, k, 1) kernel built from an int, stride and padding per dim.
    (3, (1, 3, 6, 7, 5), (3, 4), dict(kernel_size=(3, 3, 1), stride=(1, 2, 1),
                                      padding=(1, 0, 0), bias=True)),
    (3, (1, 4, 5, 5, 6), (4, 8), dict(kernel_size=(2, 3, 4), dilation=(2, 1, 1), groups=2)),
    # A 1-D constructor without padding (in, out, kernel, stride, dilation, bias).
    (1, (2, 3, 19), (3, 6), dict(kernel_size=3, stride=3, dilation=4, bias=False)),
])
def test_recorded_constructor(dims, shape, ctor, ref_kw):
    # CTOR recorded: the layer from the params alone (what the brain renders), whatever the
    # arguments the candidate is given.
    kernel = ref_kw["kernel_size"]
    kd, kh, kw_ = (1, 1, kernel) if dims == 1 else kernel

    def per_dim(name, unit):
        v = ref_kw.get(name, unit)
        d, h, w = (unit, unit, v) if dims == 1 else (v if isinstance(v, tuple) else (v,) * 3)
        return {f"{name.upper()}_D": d, f"{name.upper()}_H": h, f"{name.upper()}_W": w}

    params = dict(CTOR="recorded", IN_CHANNELS=ctor[0], OUT_CHANNELS=ctor[1], KERNEL_D=kd,
                  KERNEL_H=kh, KERNEL_W=kw_, GROUPS=ref_kw.get("groups", 1),
                  BIAS=str(ref_kw.get("bias", True)), **per_dim("stride", 1),
                  **per_dim("padding", 0), **per_dim("dilation", 1))
    torch.manual_seed(123)
    ref = MODULES[dims](*ctor, **ref_kw)
    torch.manual_seed(123)
    cand = load_model_new("conv3d_implicit_gemm", DIMS=dims, **dict(WIDE, **params))(
        *ctor, "ignored", 99)
    assert torch.equal(cand.conv.weight, ref.weight)
    assert cand.state_dict().keys() == {"conv." + k for k in ref.state_dict()}
    torch.manual_seed(0)
    x = torch.randn(*shape)
    with torch.no_grad():
        torch.testing.assert_close(cand(x), ref(x), atol=1e-4, rtol=1e-4)


def test_unbatched_input_and_fp32_module_with_bf16_input():
    torch.manual_seed(0)
    ref, out = _run(1, torch.randn(4, 10), (4, 3, 3), dict(padding=1))  # (C, L)
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    # A bf16 input to an fp32 layer: the weight follows the input, the output is bf16.
    torch.manual_seed(5)
    cand = load_model_new("conv3d_implicit_gemm", **WIDE)(4, 5, 3)
    xb = torch.randn(1, 4, 3, 4, 5, dtype=torch.bfloat16)
    out = cand(xb)
    assert out.dtype == torch.bfloat16
    ref = nn.functional.conv3d(xb.float(), cand.conv.weight.bfloat16().float(), cand.conv.bias)
    torch.testing.assert_close(out.float(), ref, atol=5e-2, rtol=2e-2)


def test_groups_are_independent_and_64bit_offsets_path():
    torch.manual_seed(0)
    x = torch.randn(1, 12, 3, 4, 5)
    torch.manual_seed(1)
    cand = load_model_new("conv3d_implicit_gemm", **WIDE)(12, 9, 2, 1, 1, 1, 3, False)
    y = cand(x)
    assert torch.equal(y, cand(x))
    x2 = x.clone()
    x2[:, 4:8] = 0
    y2 = cand(x2)
    assert torch.equal(y2[:, :3], y[:, :3]) and torch.equal(y2[:, 6:], y[:, 6:])
    assert torch.count_nonzero(y2[:, 3:6]) == 0
    # The 64-bit offset path (tensors of 2**31+ elements) on a small problem: forced.
    cand.forward.__globals__["_INT64_FROM"] = 0
    ref = nn.functional.conv3d(x, cand.conv.weight, None, 1, 1, 1, 3)
    assert ref.shape == y.shape
    _check_harness(cand(x), ref)


def test_larger_tiles_and_precisions():
    # The brain's fp32 tiles (64 x 64 x 32) with tiles larger than the problem, and tf32x3.
    torch.manual_seed(0)
    x = torch.randn(1, 6, 3, 4, 5)
    blocks = dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8)
    ref, out = _run(3, x, (6, 10, 3), dict(padding=1), blocks=blocks)
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    ref, out = _run(3, x, (6, 10, 3), dict(padding=1), dict(INPUT_PRECISION="tf32x3"),
                    blocks=blocks)
    _check_harness(out, ref)


def test_string_padding_and_padding_mode_are_refused():
    cls = load_model_new("conv3d_implicit_gemm", **WIDE)
    with pytest.raises(NotImplementedError):
        cls(2, 3, 3, padding="same")
    with pytest.raises(NotImplementedError):
        cls(2, 3, 3, padding_mode="reflect")
