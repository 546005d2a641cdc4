"""conv_transpose_nd under Triton's interpreter against torch.nn.ConvTranspose1d/2d/3d built
with the same seed (the harness's way), compared with the harness's gate (the output
dtype's default tolerance, atol scaled by max(1, rms(reference))): 1-D, grouped and
ungrouped 2-D and 3-D; strides 1-3 (phases without any tap), padding, output_padding,
dilation 1-2 (also sharing a factor with the stride), asymmetric per-dim arguments, groups
1/2/4 with channel counts per group that are not multiples of the tiles, size-1 and odd
dims, bias on and off, fp32 and bf16, non-contiguous and unbatched inputs, both constructor
modes (CTOR), the 64-bit offset path and the refusals."""
import os
import sys

import pytest
import torch
import torch.nn as nn

from template_render import load_model_new

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
from kagent_harness.compare import compare, tolerances  # noqa: E402

# Triton's interpreter pays per program and loop step, not per element: one wide tile of
# rows per phase, narrow channel tiles (so groups and channel chunks still split them).
WIDE = dict(BLOCK_M=128, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)
SMALL = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)
MODULES = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}


def _check(out, ref):
    """The harness's gate: default tolerance of the output dtype, atol * max(1, rms(ref))."""
    assert out.shape == ref.shape and out.dtype == ref.dtype
    atol, rtol = tolerances([ref])
    rms = ref.double().pow(2).mean().sqrt().item() if ref.numel() else 0.0
    res = compare([ref], [out], atol * max(1.0, rms), rtol)
    assert res["ok"], res


def _pair(dims, ctor, kw, params=None, blocks=WIDE, seed=123):
    """(reference nn.ConvTranspose*d, candidate) built with the same seed."""
    params = dict(params or {})
    if "bias" not in kw and len(ctor) < 8:
        params.setdefault("BIAS", "True")  # torch's default; the brain renders the recorded one
    torch.manual_seed(seed)
    ref = MODULES[dims](*ctor, **kw)
    torch.manual_seed(seed)
    cand = load_model_new("conv_transpose_nd", DIMS=dims, **dict(blocks, **params))(*ctor, **kw)
    assert type(cand.conv) is MODULES[dims]
    assert torch.equal(cand.conv.weight, ref.weight)
    assert (cand.conv.bias is None) == (ref.bias is None)
    return ref, cand


CASES = [
    # dims, x shape, ctor (nn.ConvTranspose*d order), kw
    (1, (2, 5, 7), (5, 6, 3), dict(stride=2, padding=1, output_padding=1)),
    (1, (1, 8, 9), (8, 6, 4), dict(stride=3, groups=2, dilation=2, output_padding=2, bias=False)),
    (1, (3, 6, 1), (6, 6, 5), dict(stride=2, groups=2, padding=2)),       # length 1
    (1, (2, 3, 11), (3, 5, 1), dict(bias=False)),                          # kernel 1, stride 1
    (2, (2, 6, 5, 7), (6, 4, 3), dict(stride=(2, 3), groups=2, padding=(1, 0),
                                      output_padding=(1, 2), dilation=(1, 2))),
    (2, (1, 20, 4, 5), (20, 12, 3), dict(stride=(2, 1), groups=4, padding=1, output_padding=(1, 0),
                                         dilation=2, bias=False)),  # 5 in, 3 out per group
    (1, (1, 3, 4), (3, 4, 2), dict(stride=4, dilation=2)),                 # phases without taps
    (3, (1, 4, 3, 4, 5), (4, 6, (2, 3, 2)), dict(stride=(1, 2, 3), padding=(0, 1, 1),
                                                 output_padding=(0, 1, 2), dilation=(2, 1, 1),
                                                 groups=2)),
    (3, (2, 3, 2, 3, 3), (3, 5, 3), dict(stride=(2, 2, 1), padding=1, output_padding=(1, 1, 0))),
    (3, (1, 8, 2, 3, 2), (8, 4, 2), dict(stride=(2, 1, 1), dilation=2, groups=4,
                                         output_padding=(1, 0, 0), bias=False)),
    (3, (1, 2, 1, 1, 1), (2, 3, (1, 2, 3)), dict(stride=(1, 3, 2))),      # 1x1x1 input
]


@pytest.mark.parametrize("dims,shape,ctor,kw", CASES)
def test_conv_transpose_nd_fp32(dims, shape, ctor, kw):
    ref, cand = _pair(dims, ctor, kw)
    torch.manual_seed(0)
    x = torch.randn(*shape)
    with torch.no_grad():
        _check(cand(x), ref(x))


def test_conv_transpose_nd_channel_chunks_and_tiles():
    # Groups 2 with 18 input and 20 output channels per group: two K chunks and two N tiles
    # per group; two pixel tiles, GROUP_M swizzle.
    ref, cand = _pair(2, (36, 40, 1), dict(groups=2, bias=True), blocks=SMALL)
    x = torch.randn(1, 36, 5, 4)
    with torch.no_grad():
        _check(cand(x), ref(x))


@pytest.mark.parametrize("dims,shape,ctor,kw", [
    (1, (2, 8, 9), (8, 6, 3), dict(stride=2, groups=2, padding=1, output_padding=1)),
    (3, (1, 4, 2, 3, 3), (4, 4, 3), dict(stride=(1, 2, 1), padding=1, groups=2, bias=False)),
])
def test_conv_transpose_nd_bf16(dims, shape, ctor, kw):
    ref, cand = _pair(dims, ctor, kw)
    ref, cand = ref.to(torch.bfloat16), cand.to(torch.bfloat16)
    x = torch.randn(*shape, dtype=torch.bfloat16)
    with torch.no_grad():
        out = cand(x)
        assert out.dtype == torch.bfloat16
        _check(out, ref(x))


def test_conv_transpose_nd_ctor_recorded():
    # KernelBench-style constructor in another order (in, out, kernel, stride, padding,
    # dilation, bias): CTOR recorded builds the layer from the params alone (what the brain
    # reads from the recorded op), whatever the constructor passes.
    params = dict(CTOR="recorded", IN_CHANNELS=6, OUT_CHANNELS=4, KERNEL_D=2, KERNEL_H=1,
                  KERNEL_W=3, STRIDE_D=1, STRIDE_H=1, STRIDE_W=3, PADDING_W=1,
                  OUTPUT_PADDING_D=0, OUTPUT_PADDING_W=2, DILATION_H=2, GROUPS=2, BIAS="False")
    torch.manual_seed(5)
    ref = nn.ConvTranspose3d(6, 4, (2, 1, 3), stride=(1, 1, 3), padding=(0, 0, 1),
                             output_padding=(0, 0, 2), groups=2, bias=False, dilation=(1, 2, 1))
    torch.manual_seed(5)
    cand = load_model_new("conv_transpose_nd", DIMS=3, **dict(WIDE, **params))(
        6, 4, 3, 1, 0, 1, False)
    assert torch.equal(cand.conv.weight, ref.weight)
    x = torch.randn(1, 6, 3, 2, 4)
    with torch.no_grad():
        _check(cand(x), ref(x))


def test_conv_transpose_nd_noncontiguous_and_unbatched():
    ref, cand = _pair(2, (8, 6, 2), dict(groups=2, padding=1))
    x = torch.randn(1, 5, 6, 8).permute(0, 3, 1, 2)  # channels-last strides
    assert not x.is_contiguous()
    xs = torch.randn(1, 16, 10, 14)[:, ::2, 1::2, ::3]  # no unit stride anywhere
    with torch.no_grad():
        _check(cand(x), ref(x))
        _check(cand(xs), ref(xs))
        u = torch.randn(8, 4, 3)  # unbatched (C, H, W), as nn.ConvTranspose2d accepts it
        _check(cand(u), ref(u))


def test_conv_transpose_nd_deterministic_and_weight_layout():
    ref, cand = _pair(1, (6, 4, 3), dict(stride=2, groups=2))
    x = torch.randn(2, 6, 5)
    g = cand.forward.__globals__
    kernel, launches = g["conv_transpose_nd_kernel"], []

    class Spy:
        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                launches.append((grid, args))
                return kernel[grid](*args, **kwargs)
            return launch

    g["conv_transpose_nd_kernel"] = Spy()
    try:
        with torch.no_grad():
            assert torch.equal(cand(x), cand(x))
    finally:
        g["conv_transpose_nd_kernel"] = kernel
    # The weight goes as (KD, KH, KW, C_in, C_out/G) contiguous; the grid is phases x
    # tiles by groups.
    grid, args = launches[0]
    w = args[1]
    assert w.shape == (1, 1, 3, 6, 2) and w.is_contiguous()
    assert torch.equal(w[0, 0], ref.weight.permute(2, 0, 1))
    assert grid == (2 * 1 * 1, 2)


def test_conv_transpose_nd_64bit_offsets_path():
    ref, cand = _pair(3, (4, 6, 2), dict(stride=(1, 1, 2), groups=2), seed=9)
    cand.forward.__globals__["_INT64_FROM"] = 0
    x = torch.randn(1, 4, 2, 3, 2)
    with torch.no_grad():
        _check(cand(x), ref(x))


def test_conv_transpose_nd_refusals():
    cand = load_model_new("conv_transpose_nd", DIMS=1, **WIDE)(2, 3, 3)
    with pytest.raises(ValueError, match="rank-4 input to a 1-D conv"):
        cand(torch.randn(1, 2, 3, 3))
    with pytest.raises(NotImplementedError, match="padding_mode"):
        load_model_new("conv_transpose_nd", DIMS=2)(2, 3, 3, padding_mode="reflect")
    # Strides / dilations of 0 from the constructor: refused at the call, like torch.
    x = torch.randn(1, 2, 5)
    for kw, match in [(dict(stride=0), "stride"), (dict(dilation=0), "dilation")]:
        with pytest.raises(RuntimeError, match=match):
            nn.ConvTranspose1d(2, 3, 3, **kw)(x)
        with pytest.raises(RuntimeError, match=match):
            load_model_new("conv_transpose_nd", DIMS=1, **WIDE)(2, 3, 3, **kw)(x)
