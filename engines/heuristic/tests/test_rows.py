import pytest
import torch
import torch.nn.functional as F

from template_render import load_model_new


@pytest.mark.parametrize("shape,dim,blocks", [
    ((4, 37), 1, dict(BLOCK_R=16)),          # two-pass, R not a multiple
    ((4, 37), 1, dict(BLOCK_R=64)),          # one pass
    ((1, 1), 1, dict(BLOCK_R=16)),
    ((3, 10, 6), 1, dict(BLOCK_R=4, BLOCK_I=4)),  # softmax over a middle dim
    ((2, 3, 5), 0, dict(BLOCK_R=2, BLOCK_I=2)),
])
@pytest.mark.parametrize("log", ["False", "True"])
def test_softmax(shape, dim, blocks, log):
    torch.manual_seed(0)
    x = torch.randn(*shape) * 5
    out = load_model_new("softmax_online", DIM=dim, LOG=log, **blocks)()(x)
    ref = F.log_softmax(x, dim) if log == "True" else F.softmax(x, dim)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_softmax_bf16_noncontiguous():
    x = torch.randn(16, 40, dtype=torch.bfloat16).t()  # (40, 16) non-contiguous
    out = load_model_new("softmax_online", DIM=1, BLOCK_R=8)()(x)
    torch.testing.assert_close(out.float(), F.softmax(x.float(), 1), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("shape,nshape,blocks", [
    ((4, 3, 5), (3, 5), dict(BLOCK_R=4)),
    ((6, 33), (33,), dict(BLOCK_R=64)),
    ((1, 1), (1,), dict(BLOCK_R=8)),
    ((4, 3, 5), (3, 5), dict(BLOCK_R=16)),  # one pass: R = 15 in one masked chunk
])
def test_layernorm_module(shape, nshape, blocks):
    torch.manual_seed(1)
    ref_mod = torch.nn.LayerNorm(nshape)
    with torch.no_grad():
        ref_mod.weight.normal_()
        ref_mod.bias.normal_()
    model = load_model_new("row_norm", NORM="layer", AFFINE="layernorm_module", **blocks)(nshape)
    model.load_state_dict(ref_mod.state_dict(), strict=False) if hasattr(model, "norm") else None
    model.norm.load_state_dict(ref_mod.state_dict())
    x = torch.randn(*shape) * 3 + 10  # offset mean: checks the stable variance
    torch.testing.assert_close(model(x), ref_mod(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("shape,blocks", [((2, 5, 3, 4), dict(BLOCK_R=2, BLOCK_I=8)),
                                          ((3, 7, 1, 1), dict(BLOCK_R=4, BLOCK_I=1)),
                                          ((2, 5, 3, 4), dict(BLOCK_R=8, BLOCK_I=8))])  # one pass
def test_rmsnorm_over_features(shape, blocks):
    # KernelBench RMSNorm: Model(num_features, eps); x / sqrt(mean(x^2, dim=1) + eps)
    x = torch.randn(*shape)
    model = load_model_new("row_norm", NORM="rms", AFFINE="none", DIM=1, NUM_DIMS=1, **blocks)(shape[1], 1e-5)
    ref = x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)
    torch.testing.assert_close(model(x), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("block_r", [16, 32])  # two passes, one pass
def test_rmsnorm_module_bf16(block_r):
    ref_mod = torch.nn.RMSNorm(24, eps=1e-6)
    model = load_model_new("row_norm", NORM="rms", AFFINE="rmsnorm_module", BLOCK_R=block_r)(24, eps=1e-6)
    x = torch.randn(5, 24, dtype=torch.bfloat16)
    torch.testing.assert_close(model(x).float(), ref_mod(x.float()), atol=2e-2, rtol=2e-2)


OPS = {
    "sum": lambda x, d, k: torch.sum(x, d, keepdim=k),
    "mean": lambda x, d, k: torch.mean(x, d, keepdim=k),
    "max": lambda x, d, k: torch.max(x, d, keepdim=k).values,
    "min": lambda x, d, k: torch.min(x, d, keepdim=k).values,
    "prod": lambda x, d, k: torch.prod(x, d, keepdim=k),
    "argmax": lambda x, d, k: torch.argmax(x, d, keepdim=k),
    "argmin": lambda x, d, k: torch.argmin(x, d, keepdim=k),
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("shape,dim,keep,blocks", [
    ((3, 37, 5), 1, "False", dict(BLOCK_R=8, BLOCK_I=4)),
    ((3, 37, 5), 1, "True", dict(BLOCK_R=8, BLOCK_I=4, SPLIT_R=3)),
    ((6, 33), 1, "False", dict(BLOCK_R=16, SPLIT_R=2)),
    ((1,), 0, "False", dict(BLOCK_R=4)),
])
def test_reduce(op, shape, dim, keep, blocks):
    torch.manual_seed(2)
    x = torch.randn(*shape)
    if op == "prod":
        x = 1.0 + 0.05 * x
    model = load_model_new("reduce_dim", OP=op, DIM=dim, KEEPDIM=keep, **blocks)(dim)
    ref = OPS[op](x, dim, keep == "True")
    out = model(x)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_reduce_argmax_ties_and_noncontiguous():
    x = torch.zeros(4, 20)
    x[:, 3] = 1.0
    x[:, 15] = 1.0  # tie: the first index wins, across splits too
    model = load_model_new("reduce_dim", OP="argmax", DIM=1, BLOCK_R=4, SPLIT_R=4)(1)
    assert torch.equal(model(x), torch.argmax(x, 1))
    y = torch.randn(9, 6).t()
    model = load_model_new("reduce_dim", OP="sum", DIM=0, BLOCK_R=4, BLOCK_I=4)(0)
    torch.testing.assert_close(model(y), y.sum(0), atol=1e-5, rtol=1e-5)
