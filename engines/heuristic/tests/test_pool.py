import pytest
import torch
import torch.nn as nn

from template_render import load_model_new


@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("shape,ctor,blocks", [
    ((2, 3, 37), (3, 2, 1), dict(BLOCK_W=16)),     # the problems' 1-D pools; L not a multiple
    ((1, 1, 1), (1, 1, 0), dict(BLOCK_W=16)),
    ((2, 2, 50), (4, 3, 2), dict(BLOCK_W=16)),
    ((3, 1, 8), (2, None, 0), dict(BLOCK_W=16)),   # stride None: the window size
])
def test_pool1d(op, shape, ctor, blocks):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    ref = (nn.MaxPool1d if op == "max" else nn.AvgPool1d)(*ctor)
    model = load_model_new("pool_nd", OP=op, **blocks)(*ctor)
    out = model(x)
    r = ref(x)
    assert out.shape == r.shape and out.dtype == r.dtype
    torch.testing.assert_close(out, r, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("shape,ctor,blocks", [
    ((2, 3, 11, 13), (3, 2, 1), dict(BLOCK_H=4, BLOCK_W=16)),
    ((1, 2, 9, 9), (3, 1, 1), dict(BLOCK_H=2, BLOCK_W=16)),   # stride 1 (problem 34)
    ((1, 1, 1, 1), (1, 1, 0), dict(BLOCK_H=4, BLOCK_W=16)),
    ((2, 2, 10, 7), ((3, 2), (2, 1), (1, 0)), dict(BLOCK_H=8, BLOCK_W=16)),  # non-square
])
def test_pool2d(op, shape, ctor, blocks):
    torch.manual_seed(1)
    x = torch.randn(*shape)
    ref = (nn.MaxPool2d if op == "max" else nn.AvgPool2d)(*ctor)
    model = load_model_new("pool_nd", OP=op, **blocks)(*ctor)
    torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)


def test_maxpool2d_dilation_noncontiguous_nan():
    torch.manual_seed(2)
    x = torch.randn(2, 12, 3, 14).permute(0, 2, 3, 1)  # (2, 3, 14, 12), channels-last strides
    x[0, 1, 4, 5] = float("nan")
    ref = nn.MaxPool2d(3, 2, 1, 2)  # dilation 2
    model = load_model_new("pool_nd", OP="max", BLOCK_H=4, BLOCK_W=16)(3, 2, 1, 2)
    torch.testing.assert_close(model(x), ref(x), atol=0, rtol=0, equal_nan=True)


def test_avgpool_options_and_bf16():
    torch.manual_seed(3)
    x = torch.randn(2, 3, 9, 10)
    for kw in (dict(count_include_pad=False), dict(divisor_override=5)):
        ref = nn.AvgPool2d(3, stride=2, padding=1, **kw)
        model = load_model_new("pool_nd", OP="avg", BLOCK_H=4, BLOCK_W=16)(3, stride=2, padding=1, **kw)
        torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)
    xb = torch.randn(2, 4, 40, dtype=torch.bfloat16)
    model = load_model_new("pool_nd", OP="avg", BLOCK_W=16)(4, 2, 1)
    out = model(xb)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), nn.AvgPool1d(4, 2, 1)(xb.float()), atol=1e-2, rtol=1e-2)


def test_pool_defaults_without_constructor_args():
    x = torch.randn(1, 2, 6, 6)
    model = load_model_new("pool_nd", OP="max", KERNEL=3, STRIDE=0, PADDING=1)()
    torch.testing.assert_close(model(x), nn.MaxPool2d(3, 3, 1)(x))
    with pytest.raises(NotImplementedError):
        load_model_new("pool_nd", OP="max")(2, ceil_mode=True)


@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("shape,ctor", [
    ((1, 2, 5, 6, 7), (3, 2, 1)),                       # odd sizes, padding
    ((2, 1, 4, 4, 4), (2, None, 0)),                    # stride None: the window
    ((1, 2, 3, 5, 6), ((1, 3, 2), (1, 2, 1), (0, 1, 1))),  # non-cubic window
])
def test_pool3d(op, shape, ctor):
    torch.manual_seed(5)
    x = torch.randn(*shape)
    ref = (nn.MaxPool3d if op == "max" else nn.AvgPool3d)(*ctor)
    model = load_model_new("pool_nd", OP=op, BLOCK_H=4, BLOCK_W=16)(*ctor)
    out = model(x)
    r = ref(x)
    assert out.shape == r.shape
    torch.testing.assert_close(out, r, atol=1e-5, rtol=1e-5)


def test_maxpool3d_dilation_and_avgpool3d_exclude_pad():
    torch.manual_seed(6)
    x = torch.randn(1, 2, 7, 6, 8).transpose(2, 4)  # non-contiguous (1, 2, 8, 6, 7)
    model = load_model_new("pool_nd", OP="max", BLOCK_H=2, BLOCK_W=16)(2, 1, 1, 2)
    torch.testing.assert_close(model(x), nn.MaxPool3d(2, 1, 1, 2)(x))
    avg = load_model_new("pool_nd", OP="avg", BLOCK_H=4, BLOCK_W=16)(3, 2, 1, count_include_pad=False)
    torch.testing.assert_close(avg(x), nn.AvgPool3d(3, 2, 1, count_include_pad=False)(x),
                               atol=1e-5, rtol=1e-5)
