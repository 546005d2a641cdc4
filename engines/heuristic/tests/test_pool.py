import pytest
import torch
import torch.nn as nn

from template_render import load_model_new


@pytest.mark.parametrize("load", ["auto", "taps"])
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("shape,ctor,blocks", [
    ((2, 3, 37), (3, 2, 1), dict(BLOCK_W=16)),     # the problems' 1-D pools; L not a multiple
    ((1, 1, 1), (1, 1, 0), dict(BLOCK_W=16)),
    ((2, 2, 50), (4, 3, 2), dict(BLOCK_W=16)),
    ((3, 1, 8), (2, None, 0), dict(BLOCK_W=16)),   # stride None: the window size
])
def test_pool1d(op, shape, ctor, blocks, load):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    ref = (nn.MaxPool1d if op == "max" else nn.AvgPool1d)(*ctor)
    model = load_model_new("pool_nd", OP=op, LOAD=load, **blocks)(*ctor)
    out = model(x)
    r = ref(x)
    assert out.shape == r.shape and out.dtype == r.dtype
    torch.testing.assert_close(out, r, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("load", ["auto", "taps"])
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("shape,ctor,blocks", [
    ((2, 3, 11, 13), (3, 2, 1), dict(BLOCK_H=4, BLOCK_W=16)),
    ((1, 2, 9, 9), (3, 1, 1), dict(BLOCK_H=2, BLOCK_W=16)),   # stride 1 (problem 34)
    ((1, 1, 1, 1), (1, 1, 0), dict(BLOCK_H=4, BLOCK_W=16)),
    ((2, 2, 10, 7), ((3, 2), (2, 1), (1, 0)), dict(BLOCK_H=8, BLOCK_W=16)),  # non-square
])
def test_pool2d(op, shape, ctor, blocks, load):
    torch.manual_seed(1)
    x = torch.randn(*shape)
    ref = (nn.MaxPool2d if op == "max" else nn.AvgPool2d)(*ctor)
    model = load_model_new("pool_nd", OP=op, LOAD=load, **blocks)(*ctor)
    torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)


def test_maxpool2d_dilation_noncontiguous_nan():
    torch.manual_seed(2)
    x = torch.randn(2, 12, 3, 14).permute(0, 2, 3, 1)  # (2, 3, 14, 12), channels-last strides
    x[0, 1, 4, 5] = float("nan")
    ref = nn.MaxPool2d(3, 2, 1, 2)  # dilation 2
    model = load_model_new("pool_nd", OP="max", BLOCK_H=4, BLOCK_W=16)(3, 2, 1, 2)
    torch.testing.assert_close(model(x), ref(x), atol=0, rtol=0, equal_nan=True)


@pytest.mark.parametrize("load", ["auto", "taps"])
def test_avgpool_options_and_bf16(load):
    torch.manual_seed(3)
    x = torch.randn(2, 3, 9, 10)
    for kw in (dict(count_include_pad=False), dict(divisor_override=5)):
        ref = nn.AvgPool2d(3, stride=2, padding=1, **kw)
        model = load_model_new("pool_nd", OP="avg", LOAD=load, BLOCK_H=4, BLOCK_W=16)(
            3, stride=2, padding=1, **kw)
        torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)
    xb = torch.randn(2, 4, 40, dtype=torch.bfloat16)
    model = load_model_new("pool_nd", OP="avg", LOAD=load, BLOCK_W=16)(4, 2, 1)
    out = model(xb)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), nn.AvgPool1d(4, 2, 1)(xb.float()), atol=1e-2, rtol=1e-2)


def test_pool_defaults_without_constructor_args():
    x = torch.randn(1, 2, 6, 6)
    model = load_model_new("pool_nd", OP="max", KERNEL=3, STRIDE=0, PADDING=1)()
    torch.testing.assert_close(model(x), nn.MaxPool2d(3, 3, 1)(x))
    with pytest.raises(NotImplementedError):
        load_model_new("pool_nd", OP="max")(2, ceil_mode=True)


@pytest.mark.parametrize("load", ["auto", "taps"])
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("shape,ctor", [
    ((1, 2, 5, 6, 7), (3, 2, 1)),                       # odd sizes, padding
    ((2, 1, 4, 4, 4), (2, None, 0)),                    # stride None: the window
    ((1, 2, 3, 5, 6), ((1, 3, 2), (1, 2, 1), (0, 1, 1))),  # non-cubic window
])
def test_pool3d(op, shape, ctor, load):
    torch.manual_seed(5)
    x = torch.randn(*shape)
    ref = (nn.MaxPool3d if op == "max" else nn.AvgPool3d)(*ctor)
    model = load_model_new("pool_nd", OP=op, LOAD=load, BLOCK_H=4, BLOCK_W=16)(*ctor)
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


# The packed loads: one contiguous [BLOCK_W, SW] load per group of SW taps.

class _Spy:
    """Wraps the module's pool_kernel to record each launch's PACKED."""

    def __init__(self, model_cls):
        self.globals = model_cls.forward.__globals__
        self.kernel = self.globals["pool_kernel"]
        self.packed = []
        self.globals["pool_kernel"] = self

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.packed.append(kwargs["PACKED"])
            return self.kernel[grid](*args, **kwargs)
        return launch


def _packed_model(op, ctor, load="auto", kwargs=None, **blocks):
    cls = load_model_new("pool_nd", OP=op, LOAD=load, **blocks)
    return cls(*ctor, **(kwargs or {})), _Spy(cls)


PACKED_1D = [  # (shape, ctor): L not a multiple of BLOCK_W * SW, unit dims
    ((2, 3, 37), (3, 2, 1)),
    ((2, 3, 70), (4, 2, 1)),
    ((1, 2, 33), (2, 2, 0)),
    ((2, 2, 35), (3, 1, 1)),
    ((1, 2, 50), (3, 3, 0)),      # stride 3: groups padded to 4 lanes
    ((1, 2, 41), (5, 4, 2)),
    ((1, 1, 1), (1, 1, 0)),
    ((1, 1, 2), (3, 2, 1)),       # one output from padding and two inputs
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("shape,ctor", PACKED_1D)
def test_packed_pool1d(op, dtype, shape, ctor):
    torch.manual_seed(7)
    x = torch.randn(*shape, dtype=dtype)
    model, spy = _packed_model(op, ctor, BLOCK_W=16)
    out = model(x)
    ref = (nn.MaxPool1d if op == "max" else nn.AvgPool1d)(*ctor)(x.float())
    assert spy.packed == [True]
    assert out.dtype == dtype and out.shape == ref.shape
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(out.float(), ref, atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("op", ["max", "avg"])
@pytest.mark.parametrize("shape,ctor,blocks", [
    ((2, 3, 11, 13), (3, 2, 1), dict(BLOCK_H=4, BLOCK_W=16)),
    ((1, 2, 9, 37), (4, 2, 1), dict(BLOCK_H=2, BLOCK_W=16)),
    ((2, 1, 6, 34), (2, 2, 0), dict(BLOCK_H=4, BLOCK_W=16)),
    ((1, 2, 9, 20), (3, 1, 1), dict(BLOCK_H=8, BLOCK_W=16)),     # stride 1 (problem 34)
    ((1, 2, 10, 7), ((3, 2), (2, 1), (1, 0)), dict(BLOCK_H=4, BLOCK_W=16)),
    ((1, 2, 1, 9), ((1, 3), (1, 2), (0, 1)), dict(BLOCK_H=4, BLOCK_W=16)),  # H = 1
    ((1, 1, 7, 1), (3, 2, 1), dict(BLOCK_H=4, BLOCK_W=16)),      # W = 1
])
def test_packed_pool2d(op, dtype, shape, ctor, blocks):
    torch.manual_seed(8)
    x = torch.randn(*shape, dtype=dtype)
    model, spy = _packed_model(op, ctor, **blocks)
    out = model(x)
    ref = (nn.MaxPool2d if op == "max" else nn.AvgPool2d)(*ctor)(x.float())
    assert spy.packed == [True]
    assert out.dtype == dtype and out.shape == ref.shape
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    torch.testing.assert_close(out.float(), ref, atol=tol, rtol=tol)


@pytest.mark.parametrize("ctor", [(3, 2, 1), (4, 2, 1), (2, 2, 0), (3, 1, 1)])
@pytest.mark.parametrize("kwargs", [dict(count_include_pad=False), dict(divisor_override=3)])
def test_packed_avgpool_options(ctor, kwargs):
    torch.manual_seed(9)
    x = torch.randn(2, 3, 9, 21)
    model, spy = _packed_model("avg", ctor, kwargs=kwargs, BLOCK_H=4, BLOCK_W=16)
    torch.testing.assert_close(model(x), nn.AvgPool2d(*ctor, **kwargs)(x), atol=1e-5, rtol=1e-5)
    x1 = torch.randn(2, 3, 41)      # 1-D: torch's AvgPool1d has no divisor_override
    ref1 = nn.AvgPool2d((1, ctor[0]), (1, ctor[1]), (0, ctor[2]), **kwargs)(x1.unsqueeze(2))
    torch.testing.assert_close(model(x1), ref1.squeeze(2), atol=1e-5, rtol=1e-5)
    assert spy.packed == [True, True]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("ctor", [(3, 2, 1), (4, 2, 1), (2, 2, 0), (3, 1, 1)])
def test_packed_maxpool_nan(ctor, dtype):
    torch.manual_seed(10)
    x = torch.randn(2, 2, 8, 35, dtype=dtype)
    x[0, 1, 3, 0] = float("nan")      # in the left padding's window
    x[1, 0, 5, 17] = float("nan")
    x[1, 1, 7, 34] = float("nan")     # the last input
    model, spy = _packed_model("max", ctor, BLOCK_H=4, BLOCK_W=16)
    torch.testing.assert_close(model(x), nn.MaxPool2d(*ctor)(x), atol=0, rtol=0, equal_nan=True)
    x1 = x[:, :, 3]                   # 1-D, a non-contiguous view with W stride 1
    torch.testing.assert_close(model(x1), nn.MaxPool1d(*ctor)(x1), atol=0, rtol=0, equal_nan=True)
    assert spy.packed == [True, True]


def test_packed_pool3d():
    torch.manual_seed(11)
    x = torch.randn(1, 2, 5, 6, 19)
    for op, cls in (("max", nn.MaxPool3d), ("avg", nn.AvgPool3d)):
        model, spy = _packed_model(op, (3, 2, 1), BLOCK_H=4, BLOCK_W=16)
        torch.testing.assert_close(model(x), cls(3, 2, 1)(x), atol=1e-5, rtol=1e-5)
        assert spy.packed == [True]
    model, spy = _packed_model("max", (3, 2, 1, (2, 2, 1)), BLOCK_H=4, BLOCK_W=16)  # D, H dilated
    torch.testing.assert_close(model(x), nn.MaxPool3d(3, 2, 1, (2, 2, 1))(x))
    assert spy.packed == [True]


def test_load_selection():
    """auto packs when 1 <= SW <= KW, W is contiguous and not dilated; taps never packs;
    packed packs whatever the strides (not with dilation along W)."""
    torch.manual_seed(12)
    x = torch.randn(2, 3, 9, 20)
    cl = torch.randn(2, 20, 9, 3).permute(0, 3, 2, 1)   # (2, 3, 9, 20), W stride 3
    cases = [  # (load, ctor, input, packed)
        ("auto", (3, 2, 1), x, True),
        ("auto", (2, 3, 0), x, False),          # SW > KW: gaps between windows
        ("auto", (3, 2, 1, 2), x, False),       # dilation
        ("auto", (3, 2, 1, (2, 1)), x, True),   # dilation along H only
        ("auto", (3, 2, 1), cl, False),         # W not contiguous
        ("taps", (3, 2, 1), x, False),
        ("packed", (3, 2, 1), cl, True),
        ("packed", (2, 3, 0), x, True),
        ("packed", (3, 2, 1, 2), x, False),
    ]
    for load, ctor, inp, packed in cases:
        model, spy = _packed_model("max", ctor, load=load, BLOCK_H=4, BLOCK_W=16)
        torch.testing.assert_close(model(inp), nn.MaxPool2d(*ctor)(inp))
        assert spy.packed == [packed], (load, ctor)
    avg, spy = _packed_model("avg", (2, 3, 0), load="packed", BLOCK_H=4, BLOCK_W=16)
    torch.testing.assert_close(avg(cl), nn.AvgPool2d(2, 3, 0)(cl), atol=1e-5, rtol=1e-5)
    assert spy.packed == [True]
