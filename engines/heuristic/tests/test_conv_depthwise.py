import pytest
import torch
import torch.nn as nn

from template_render import load_model_new


def _hw(v):
    return (v, v) if isinstance(v, int) else v


def _run(x, channels, mult, k, stride, padding, bias, dilation=1, blocks=None, ctor=(), kw=None):
    """Reference depthwise nn.Conv2d and the candidate built with the same seed; k, stride,
    padding, dilation an int or an (H, W) pair."""
    (kh, kw_), (sh, sw), (ph, pw), (dh, dw) = map(_hw, (k, stride, padding, dilation))
    torch.manual_seed(7)
    ref = nn.Conv2d(channels, channels * mult, (kh, kw_), stride=stride, padding=padding,
                    dilation=dilation, groups=channels, bias=bias)
    params = dict(CHANNELS=channels, MULT=mult, KH=kh, KW=kw_, STRIDE=sh, PADDING=ph,
                  DILATION=dh, STRIDE_W=sw, PADDING_W=pw, DILATION_W=dw, BIAS=str(bias),
                  **(blocks or dict(BLOCK_H=4, BLOCK_W=16)))
    torch.manual_seed(7)
    cand = load_model_new("conv2d_depthwise", **params)(*ctor, **(kw or {}))
    assert torch.equal(cand.conv.weight, ref.weight)
    r, out = ref(x), cand(x)
    assert out.shape == r.shape and out.dtype == r.dtype
    return r, out


@pytest.mark.parametrize("shape,mult,k,stride,padding,bias", [
    ((2, 3, 11, 13), 1, 3, 1, 1, True),    # problems/36 layout; ragged tiles
    ((1, 4, 9, 10), 2, 3, 2, 1, False),   # depth multiplier 2, stride 2
    ((1, 2, 1, 1), 1, 1, 1, 0, True),     # 1x1 everything
    ((2, 3, 8, 7), 1, (5, 3), 1, 2, False),  # non-square kernel, padding 2
    # KernelBench's per-dim constructors: stride, padding (dilation below) differ by dim.
    ((2, 4, 11, 13), 1, (3, 5), (1, 2), (2, 0), True),
    ((1, 3, 7, 20), 2, (1, 3), (3, 1), (0, 1), False),
])
def test_depthwise(shape, mult, k, stride, padding, bias):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    ref, out = _run(x, shape[1], mult, k, stride, padding, bias, ctor=(shape[1], k))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_depthwise_keywords_dilation_noncontiguous_bf16():
    torch.manual_seed(1)
    x = torch.randn(2, 9, 12, 5).permute(0, 3, 1, 2)   # (2, 5, 9, 12) channels-last strides
    # The constructor's arguments play no part: the params are the recorded op's.
    ref, out = _run(x, 5, 1, 3, 1, 2, True, dilation=2, ctor=(5, 7, 3), kw=dict(padding=0))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    ref, out = _run(x, 5, 1, (3, 2), 1, (2, 1), False, dilation=(1, 3))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    xb = torch.randn(1, 6, 10, 17, dtype=torch.bfloat16)
    torch.manual_seed(3)
    cand = load_model_new("conv2d_depthwise", CHANNELS=6, KH=3, KW=3, PADDING=1,
                          BLOCK_H=2, BLOCK_W=16)().to(torch.bfloat16)
    out = cand(xb)
    assert out.dtype == torch.bfloat16
    ref = nn.functional.conv2d(xb.float(), cand.conv.weight.float(), padding=1, groups=6)
    torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("shape,mult,k,stride,padding,dilation", [
    ((2, 3, 11, 13), 1, (3, 7), (2, 1), (1, 3), (1, 1)),  # KernelBench's per-dim form
    ((1, 4, 13, 9), 1, (5, 1), (1, 1), (0, 0), (2, 2)),   # (k, 1) kernel, dilation 2
    ((1, 2, 10, 17), 2, (3, 3), (1, 3), (2, 0), (2, 1)),  # everything differs by dim
])
def test_depthwise_per_dim(shape, mult, k, stride, padding, dilation):
    # The _W params carry W's stride, padding and dilation where they differ from H's; the
    # constructor's positional arguments (KernelBench's kernel_size_h, kernel_size_w,
    # stride_h, ...) are ignored.
    torch.manual_seed(7)
    ref = nn.Conv2d(shape[1], shape[1] * mult, k, stride=stride, padding=padding,
                    dilation=dilation, groups=shape[1], bias=True)
    torch.manual_seed(7)
    cand = load_model_new(
        "conv2d_depthwise", CHANNELS=shape[1], MULT=mult, KH=k[0], KW=k[1], STRIDE=stride[0],
        STRIDE_W=stride[1], PADDING=padding[0], PADDING_W=padding[1], DILATION=dilation[0],
        DILATION_W=dilation[1], BIAS="True", BLOCK_H=4, BLOCK_W=16)(shape[1], shape[1], *k)
    assert torch.equal(cand.conv.weight, ref.weight)
    x = torch.randn(*shape)
    r, out = ref(x), cand(x)
    assert out.shape == r.shape
    torch.testing.assert_close(out, r, atol=1e-5, rtol=1e-5)
