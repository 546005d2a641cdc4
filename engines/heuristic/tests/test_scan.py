import pytest
import torch

from template_render import load_model_new


def _ref(x, dim, op, reverse=False, exclusive=False, mask=None):
    if mask is not None:
        x = torch.where(mask, x, torch.zeros_like(x) if op == "cumsum" else torch.ones_like(x))
    xf = x.double()
    if reverse:
        xf = xf.flip(dim)
    y = torch.cumsum(xf, dim) if op == "cumsum" else torch.cumprod(xf, dim)
    if exclusive:
        ident = torch.zeros_like(y.narrow(dim, 0, 1)) if op == "cumsum" else torch.ones_like(y.narrow(dim, 0, 1))
        y = torch.cat([ident, y.narrow(dim, 0, y.shape[dim] - 1)], dim)
    if reverse:
        y = y.flip(dim)
    return y.to(x.dtype)


def _input(shape, op, dtype=torch.float32):
    x = torch.randn(*shape)
    if op == "cumprod":
        x = 1.0 + 0.05 * x  # keeps long products finite and away from 0
    return x.to(dtype)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("shape,dim,blocks", [
    ((3, 37), 1, dict(BLOCK_R=8)),             # several chunks, R not a multiple of the block
    ((4, 64), -1, dict(BLOCK_R=64)),           # one chunk exactly
    ((1, 1), 1, dict(BLOCK_R=8)),
    ((5,), 0, dict(BLOCK_R=2)),                # 1-D
    ((2, 19, 6), 1, dict(BLOCK_R=4, BLOCK_I=4)),   # middle dim: inner columns per program
    ((7, 3, 5), 0, dict(BLOCK_R=2, BLOCK_I=2)),
])
def test_scan_inclusive(op, shape, dim, blocks):
    torch.manual_seed(0)
    x = _input(shape, op)
    model = load_model_new("scan_rows", OP=op, **blocks)(dim)
    out = model(x)
    assert out.shape == x.shape and out.dtype == x.dtype
    torch.testing.assert_close(out, _ref(x, dim, op), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("reverse,exclusive", [("True", "False"), ("False", "True"), ("True", "True")])
@pytest.mark.parametrize("shape,dim,blocks", [
    ((3, 21), 1, dict(BLOCK_R=8)),
    ((4, 9, 3), 1, dict(BLOCK_R=4, BLOCK_I=2)),
    ((2, 1), 1, dict(BLOCK_R=4)),
])
def test_scan_reverse_exclusive(op, reverse, exclusive, shape, dim, blocks):
    torch.manual_seed(1)
    x = _input(shape, op)
    model = load_model_new("scan_rows", OP=op, REVERSE=reverse, EXCLUSIVE=exclusive, **blocks)(dim)
    ref = _ref(x, dim, op, reverse=reverse == "True", exclusive=exclusive == "True")
    torch.testing.assert_close(model(x), ref, atol=1e-5, rtol=1e-5)


def test_scan_masked_and_dim_keyword():
    torch.manual_seed(2)
    x = torch.randn(4, 45)
    mask = torch.rand(4, 45) > 0.5
    model = load_model_new("scan_rows", MASKED="True", BLOCK_R=16)(dim=1)
    torch.testing.assert_close(model(x, mask), torch.cumsum(x * mask, dim=1), atol=1e-5, rtol=1e-5)


def test_scan_noncontiguous_bf16_and_default_dim():
    torch.manual_seed(3)
    x = torch.randn(30, 12, dtype=torch.bfloat16).t()   # (12, 30), strides (1, 12)
    model = load_model_new("scan_rows", BLOCK_R=8, DIM=1)()  # no constructor dim: DIM
    out = model(x)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), torch.cumsum(x.float(), 1), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("reverse,exclusive", [("False", "False"), ("True", "False"), ("True", "True")])
@pytest.mark.parametrize("shape,dim,blocks", [
    ((2, 45), 1, dict(BLOCK_R=4, SPLIT_R=3)),          # slices of 3 chunks, ragged end
    ((3, 10, 5), 1, dict(BLOCK_R=2, BLOCK_I=4, SPLIT_R=4)),
    ((2, 9), 1, dict(BLOCK_R=4, SPLIT_R=8)),           # more splits than chunks: clamped
])
def test_scan_two_level(op, reverse, exclusive, shape, dim, blocks):
    torch.manual_seed(7)
    x = _input(shape, op)
    model = load_model_new("scan_rows", OP=op, REVERSE=reverse, EXCLUSIVE=exclusive, **blocks)(dim)
    ref = _ref(x, dim, op, reverse=reverse == "True", exclusive=exclusive == "True")
    torch.testing.assert_close(model(x), ref, atol=1e-5, rtol=1e-5)


def test_scan_two_level_masked():
    torch.manual_seed(8)
    x = torch.randn(3, 50)
    mask = torch.rand(3, 50) > 0.3
    model = load_model_new("scan_rows", MASKED="True", BLOCK_R=8, SPLIT_R=3)(1)
    torch.testing.assert_close(model(x, mask), torch.cumsum(x * mask, dim=1), atol=1e-5, rtol=1e-5)
