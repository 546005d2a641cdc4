"""conv2d_depthwise_separable under Triton's interpreter: the fused depthwise then pointwise
kernel against nn.Conv2d pairs built with the same seed, over awkward shapes (odd channel
counts, pixel tiles and channel chunks that do not divide, several output-channel tiles,
depth multipliers, per-dim stride / padding / dilation, size-1 dims, biases on either
layer, 16-bit inputs, non-contiguous inputs)."""
import pytest
import torch
import torch.nn as nn

from template_render import load_model_new


def _hw(v):
    return (v, v) if isinstance(v, int) else v


def _run(x, cout, mult=1, k=3, stride=1, padding=0, dilation=1, dw_bias=False, pw_bias=False,
         blocks=None):
    """The reference pair and the candidate built with the same seed; returns both outputs."""
    c = x.shape[1]
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = map(_hw, (k, stride, padding, dilation))
    torch.manual_seed(11)
    depthwise = nn.Conv2d(c, c * mult, (kh, kw), stride=stride, padding=padding,
                          dilation=dilation, groups=c, bias=dw_bias)
    pointwise = nn.Conv2d(c * mult, cout, 1, bias=pw_bias)
    params = dict(CHANNELS=c, MULT=mult, KH=kh, KW=kw, STRIDE=sh, STRIDE_W=sw, PADDING=ph,
                  PADDING_W=pw, DILATION=dh, DILATION_W=dw, DW_BIAS=str(dw_bias),
                  OUT_CHANNELS=cout, PW_BIAS=str(pw_bias),
                  **(blocks or dict(BLOCK_P=16, BLOCK_C=16, BLOCK_CO=16)))
    torch.manual_seed(11)
    cand = load_model_new("conv2d_depthwise_separable", **params)()
    assert torch.equal(cand.depthwise.weight, depthwise.weight)
    assert torch.equal(cand.pointwise.weight, pointwise.weight)
    with torch.no_grad():
        ref = pointwise(depthwise(x))
        out = cand(x)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    return ref, out


@pytest.mark.parametrize("shape,cout,kw", [
    # KernelBench's form: 3x3, padding 1, no biases; pixels and channels ragged.
    ((2, 5, 9, 11), 7, dict(padding=1)),
    # 37 intermediate channels (3 chunks of 16), 40 outputs (3 tiles of 16), both biases.
    ((1, 37, 5, 6), 40, dict(dw_bias=True, pw_bias=True)),
    # Depth multiplier 2, stride and padding per dim, the depthwise bias only.
    ((2, 3, 10, 13), 5, dict(mult=2, k=(3, 5), stride=(2, 1), padding=(1, 2), dw_bias=True)),
    # Dilation per dim, the pointwise bias only, a kernel wider than the image.
    ((1, 4, 7, 3), 9, dict(k=(2, 5), dilation=(3, 1), padding=(0, 2), pw_bias=True)),
    # Size-1 dims: one channel, one output channel, a 1 x 1 image and kernel.
    ((3, 1, 1, 1), 1, dict(k=1, dw_bias=True, pw_bias=True)),
    # A row image (aspect 1:40), stride 3.
    ((1, 6, 1, 40), 17, dict(k=(1, 3), stride=3)),
])
def test_depthwise_separable(shape, cout, kw):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    ref, out = _run(x, cout, **kw)
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_depthwise_separable_wide_tiles_and_noncontiguous():
    torch.manual_seed(1)
    x = torch.randn(2, 9, 12, 20).permute(0, 3, 1, 2)  # (2, 20, 9, 12) channels-last strides
    ref, out = _run(x, 33, padding=1, dw_bias=True,
                    blocks=dict(BLOCK_P=64, BLOCK_C=32, BLOCK_CO=64, num_warps=8))
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_depthwise_separable_bf16_rounds_the_intermediate():
    # The reference rounds the depthwise output to bf16 before the pointwise conv; the
    # kernel does the same, so it matches the bf16 pair (computed here in fp32 from the
    # rounded intermediate) closely.
    torch.manual_seed(2)
    x = torch.randn(1, 8, 6, 7, dtype=torch.bfloat16)
    torch.manual_seed(3)
    cand = load_model_new("conv2d_depthwise_separable", CHANNELS=8, KH=3, KW=3, PADDING=1,
                          OUT_CHANNELS=12, PW_BIAS="True", BLOCK_P=16, BLOCK_C=16,
                          BLOCK_CO=16)().to(torch.bfloat16)
    out = cand(x)
    assert out.dtype == torch.bfloat16
    mid = nn.functional.conv2d(x.float(), cand.depthwise.weight.float(), padding=1,
                               groups=8).bfloat16()
    ref = nn.functional.conv2d(mid.float(), cand.pointwise.weight.float(),
                               cand.pointwise.bias.float())
    torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)
