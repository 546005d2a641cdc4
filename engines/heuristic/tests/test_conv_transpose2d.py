"""conv_transpose2d against torch.nn.ConvTranspose2d built with the same seed (the harness's
way), compared with the harness's gate: the output dtype's default tolerance, atol scaled
by max(1, rms(reference)). Strides 1-4 (phases with no taps at all), padding 0-2,
output_padding, dilation (also sharing a factor with the stride), kernels 1-5, non-square
and asymmetric arguments, ragged tiles, batch 1, channel counts not multiples of 16, bias
on and off, fp32, bf16 and fp16, non-contiguous inputs, both constructor modes (CTOR), the
64-bit offset path and the refusals."""
import os
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

from template_render import load_model_new

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
from kagent_harness.compare import compare, tolerances  # noqa: E402

SMALL = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)


def _check(out, ref):
    """The harness's gate: default tolerance of the output dtype, atol * max(1, rms(ref))."""
    assert out.shape == ref.shape and out.dtype == ref.dtype
    atol, rtol = tolerances([ref])
    rms = ref.double().pow(2).mean().sqrt().item() if ref.numel() else 0.0
    res = compare([ref], [out], atol * max(1.0, rms), rtol)
    assert res["ok"], res


def _pair(ctor, kw, seed=123, params=None, ref_ctor=None, ref_kw=None):
    """(reference nn.ConvTranspose2d, candidate) built with the same seed."""
    torch.manual_seed(seed)
    ref = nn.ConvTranspose2d(*(ctor if ref_ctor is None else ref_ctor),
                             **(kw if ref_kw is None else ref_kw))
    torch.manual_seed(seed)
    cand = load_model_new("conv_transpose2d", **dict(SMALL, **(params or {})))(*ctor, **kw)
    assert torch.equal(cand.conv.weight, ref.weight)
    assert (cand.conv.bias is None) == (ref.bias is None)
    assert ref.bias is None or torch.equal(cand.conv.bias, ref.bias)
    return ref, cand


CASES = [
    # x shape, ctor (nn.ConvTranspose2d order), kw
    ((2, 5, 6, 7), (5, 7, 3), dict(bias=False)),                                    # stride 1, ragged tiles
    ((2, 5, 6, 7), (5, 7, 3), dict(padding=1, bias=True)),                          # padding 1, bias
    ((1, 3, 5, 6), (3, 20, 3, 2, 1, 1, 1, False), {}),                              # stride 2, output_padding 1, all positional
    ((2, 17, 4, 5), (17, 6, 4, 2, 1), dict(bias=True)),                             # kernel 4 stride 2 (DCGAN-like), C_in 17
    ((1, 4, 4, 3), (4, 9, (5, 3), 3, 2), dict(output_padding=(2, 1), bias=False)),  # stride 3, padding 2, non-square kernel
    ((2, 3, 5, 4), (3, 5, 3), dict(dilation=2, padding=2, bias=True)),              # dilation 2
    ((1, 6, 4, 5), (6, 5, 3, 2, 1, 1, 1, True, 2)),                                 # dilation 2 shares the factor 2 with stride 2
    ((1, 3, 4, 4), (3, 4, 2), dict(stride=4, dilation=2, bias=True)),               # phases without any tap: bias only
    ((2, 7, 3, 3), (7, 18, 1), dict(stride=2, output_padding=1, bias=False)),       # kernel 1, stride 2
    ((1, 5, 6, 3), (5, 3, (2, 4)), dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2), dilation=(1, 2), bias=True)),  # asymmetric everything
    ((1, 1, 1, 1), (1, 1, 3), dict(stride=2, bias=True)),                           # 1x1 input
    ((1, 2, 7, 9), (2, 3, 3), dict(stride=2, padding=2, bias=False)),               # padding 2 with stride 2
]


@pytest.mark.parametrize("shape,ctor,kw", [c if len(c) == 3 else (c[0], c[1], {}) for c in CASES])
def test_conv_transpose2d_fp32(shape, ctor, kw):
    ref, cand = _pair(ctor, kw)
    torch.manual_seed(0)
    x = torch.randn(*shape)
    _check(cand(x), ref(x))


def test_conv_transpose2d_larger_tiles_and_grouped_order():
    # Several pixel and channel tiles per phase, GROUP_M swizzle, BLOCK_K < C_in (chunks).
    ref, cand = _pair((40, 36, 3, 2, 1, 1), dict(bias=True),
                      params=dict(BLOCK_M=32, BLOCK_N=16, BLOCK_K=16, GROUP_M=2))
    x = torch.randn(2, 40, 7, 6)
    _check(cand(x), ref(x))


def test_conv_transpose2d_shape_params_when_constructor_omits_them():
    # Model(in, out, k) whose layer has stride/padding/output_padding/dilation/bias inside:
    # the brain gives them as params, the constructor's own arguments take precedence.
    ref, cand = _pair((4, 6, 3), {}, ref_kw=dict(stride=2, padding=1, output_padding=1, dilation=1, bias=True),
                      params=dict(STRIDE=2, PADDING=1, OUTPUT_PADDING=1, BIAS="True"))
    x = torch.randn(1, 4, 5, 6)
    _check(cand(x), ref(x))
    # A given keyword beats its param.
    ref, cand = _pair((4, 6, 3), dict(stride=3), ref_kw=dict(stride=3, padding=1, bias=False),
                      params=dict(STRIDE=2, PADDING=1))
    _check(cand(x), ref(x))


def test_conv_transpose2d_ctor_recorded_asymmetric_params():
    # KernelBench-style constructor in another order, (in, out, k, stride, padding,
    # dilation, bias): CTOR recorded takes nothing from it, everything from the params
    # (the recorded op's weight shape and scalars), W values apart from H.
    params = dict(CTOR="recorded", IN_CHANNELS=3, OUT_CHANNELS=5, KERNEL_H=3, KERNEL_W=3,
                  STRIDE=2, STRIDE_W=3, PADDING=1, PADDING_W=0, OUTPUT_PADDING=1,
                  OUTPUT_PADDING_W=2, DILATION=1, DILATION_W=2, BIAS="False")
    ref, cand = _pair((3, 5, 3, (2, 3), (1, 0), (1, 2), False), {}, params=params,
                      ref_ctor=(3, 5, 3), ref_kw=dict(stride=(2, 3), padding=(1, 0),
                                                      output_padding=(1, 2), dilation=(1, 2),
                                                      bias=False))
    x = torch.randn(2, 3, 4, 5)
    _check(cand(x), ref(x))


def test_conv_transpose2d_ctor_recorded_without_constructor_arguments():
    # A module with its sizes inside (Model() with no arguments, as tests/gpu/level1_conv's
    # are): session 36's H100 run saw the constructor's None reach nn.ConvTranspose2d
    # ("unsupported operand type(s) for %: 'NoneType' and 'int'") on six such problems.
    params = dict(CTOR="recorded", IN_CHANNELS=4, OUT_CHANNELS=6, KERNEL_H=3, KERNEL_W=5,
                  STRIDE=2, PADDING=1, OUTPUT_PADDING=1, BIAS="True")
    ref, cand = _pair((), {}, params=params, ref_ctor=(4, 6, (3, 5)),
                      ref_kw=dict(stride=2, padding=1, output_padding=1, bias=True))
    x = torch.randn(2, 4, 5, 6)
    _check(cand(x), ref(x))


def test_conv_transpose2d_noncontiguous_inputs():
    # Channels-last strides, then a strided slice (no unit stride anywhere).
    ref, cand = _pair((16, 8, 3, 2, 1, 1), {}, params=dict(BIAS="True"))  # nn's default bias
    x = torch.randn(2, 6, 7, 16).permute(0, 3, 1, 2)
    assert not x.is_contiguous()
    _check(cand(x), ref(x))
    xs = torch.randn(1, 32, 10, 14)[:, ::2, 1::2, ::3]
    _check(cand(xs), ref(xs))


def test_conv_transpose2d_bf16():
    ref, cand = _pair((8, 20, 3, 2, 1, 1, 1, True), {})
    ref, cand = ref.to(torch.bfloat16), cand.to(torch.bfloat16)
    x = torch.randn(2, 8, 5, 6, dtype=torch.bfloat16)
    out = cand(x)
    assert out.dtype == torch.bfloat16
    _check(out, ref(x))


def test_conv_transpose2d_fp16_and_half_input_on_fp32_module():
    ref, cand = _pair((5, 6, 4, 2, 1), dict(bias=True))
    x = torch.randn(1, 5, 6, 5)
    # fp16 output compared with the fp32 layer's result rounded to fp16 (torch's CPU
    # ConvTranspose2d has no fp16 kernel everywhere).
    out = cand.to(torch.float16)(x.half())
    assert out.dtype == torch.float16
    _check(out, ref.half().float()(x.half().float()).half())


def test_conv_transpose2d_deterministic_and_weight_layout():
    ref, cand = _pair((6, 5, 3, 2, 1, 1), dict(bias=True))
    x = torch.randn(1, 6, 4, 5)
    g = cand.forward.__globals__
    kernel, launches = g["conv_transpose2d_kernel"], []

    class Spy:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                launches.append(args)
                return kernel[grid](*args, **kwargs)
            return launch

    g["conv_transpose2d_kernel"] = Spy()
    try:
        assert torch.equal(cand(x), cand(x))
    finally:
        g["conv_transpose2d_kernel"] = kernel
    # The weight goes as (KH, KW, C_in, C_out) contiguous: B tiles load along C_out.
    w = launches[0][1]
    assert w.shape == (3, 3, 6, 5) and w.is_contiguous()
    assert torch.equal(w, ref.weight.permute(2, 3, 0, 1))


def test_conv_transpose2d_64bit_offsets_path():
    # The 64-bit offset path (tensors of 2**31+ elements) on a small problem: forced.
    ref, cand = _pair((3, 5, 3, 2, 1, 1, 1, True), {}, seed=9)
    cand.forward.__globals__["_INT64_FROM"] = 0
    x = torch.randn(2, 3, 4, 5)
    _check(cand(x), ref(x))


def test_conv_transpose2d_refusals():
    with pytest.raises(NotImplementedError, match="groups must be 1"):
        load_model_new("conv_transpose2d")(8, 8, 3, groups=2)
    with pytest.raises(NotImplementedError, match="groups must be 1"):
        load_model_new("conv_transpose2d")(8, 8, 3, 1, 0, 0, 4)
    for param in ("STRIDE", "STRIDE_W", "DILATION", "DILATION_W"):  # 0: refused at render time
        # (ValueError from the Python renderer, a failed kagent-template-render with
        # KAGENT_TEMPLATE_RENDER set.)
        with pytest.raises((ValueError, subprocess.CalledProcessError)) as e:
            load_model_new("conv_transpose2d", **{param: 0})
        assert f"{param}=0" in (getattr(e.value, "stderr", None) or str(e.value))
    # Strides / dilations of 0 from the constructor: refused at the call, like torch.
    x = torch.randn(1, 2, 5, 5)
    for kw, match in [(dict(stride=(1, 0)), "stride"), (dict(dilation=(0, 1)), "dilation")]:
        with pytest.raises(RuntimeError, match=match):
            nn.ConvTranspose2d(2, 3, 3, **kw)(x)
        with pytest.raises(RuntimeError, match=match):
            load_model_new("conv_transpose2d", **SMALL)(2, 3, 3, **kw)(x)
