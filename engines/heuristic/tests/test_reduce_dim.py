"""reduce_dim: every op on the 1-D row path (INNER == 1) and the 2-D tile path (INNER > 1),
single and two pass, fp32 and bf16, keepdim on and off; argmax/argmin ties; p-norms;
var/std (Welford merges). The older cases stay in test_rows.py."""
import pytest
import torch
import triton

from template_render import load_model_new

# var/std with R <= CORRECTION are nan/inf on purpose (torch warns; numpy warns on 0/0).
pytestmark = [pytest.mark.filterwarnings("ignore:.*degrees of freedom"),
              pytest.mark.filterwarnings("ignore:invalid value encountered")]

# (OP, extra params) -> reference on fp32 values.
OPS = {
    "sum": (dict(OP="sum"), lambda x, d, k: torch.sum(x, d, keepdim=k)),
    "mean": (dict(OP="mean"), lambda x, d, k: torch.mean(x, d, keepdim=k)),
    "max": (dict(OP="max"), lambda x, d, k: torch.max(x, d, keepdim=k).values),
    "min": (dict(OP="min"), lambda x, d, k: torch.min(x, d, keepdim=k).values),
    "prod": (dict(OP="prod"), lambda x, d, k: torch.prod(x, d, keepdim=k)),
    "argmax": (dict(OP="argmax"), lambda x, d, k: torch.argmax(x, d, keepdim=k)),
    "argmin": (dict(OP="argmin"), lambda x, d, k: torch.argmin(x, d, keepdim=k)),
    "norm2": (dict(OP="norm", ORD="2"),
              lambda x, d, k: torch.linalg.vector_norm(x, 2, d, keepdim=k)),
    "norm1": (dict(OP="norm", ORD="1"), lambda x, d, k: torch.norm(x, 1, d, keepdim=k)),
    "norm_inf": (dict(OP="norm", ORD="inf"),
                 lambda x, d, k: torch.linalg.vector_norm(x, float("inf"), d, keepdim=k)),
    "norm_neg_inf": (dict(OP="norm", ORD="-inf"),
                     lambda x, d, k: torch.linalg.vector_norm(x, float("-inf"), d, keepdim=k)),
    "norm0": (dict(OP="norm", ORD="0"),
              lambda x, d, k: torch.linalg.vector_norm(x, 0, d, keepdim=k)),
    "var": (dict(OP="var"), lambda x, d, k: torch.var(x, d, keepdim=k)),
    "std": (dict(OP="std"), lambda x, d, k: torch.std(x, d, keepdim=k)),
    "var_biased": (dict(OP="var", CORRECTION=0),
                   lambda x, d, k: torch.var(x, d, correction=0, keepdim=k)),
    "std_c2": (dict(OP="std", CORRECTION=2),
               lambda x, d, k: torch.std(x, d, correction=2, keepdim=k)),
}

CASES = [
    # 1-D row path (INNER == 1): one row per program.
    ((4, 1), 1, "False", dict(BLOCK_R=8)),                   # R == 1
    ((5, 37), 1, "True", dict(BLOCK_R=8)),                   # 5 chunks, the last one partial
    ((5, 37), -1, "False", dict(BLOCK_R=64)),                # one masked chunk
    ((2, 3, 100), 2, "True", dict(BLOCK_R=16, SPLIT_R=3)),   # two pass, R not a multiple
    ((3, 100), 1, "False", dict(BLOCK_R=8, SPLIT_R=10)),     # 16 per split: splits 7..9 empty
    ((70,), 0, "True", dict(BLOCK_R=16)),                    # 1-D input
    ((3, 64), 1, "False", dict(BLOCK_R=16, SPLIT_R=4)),      # one full chunk per split
    # 2-D tile path (INNER > 1).
    ((3, 37, 5), 1, "False", dict(BLOCK_R=8, BLOCK_I=4)),
    ((3, 37, 5), 1, "True", dict(BLOCK_R=8, BLOCK_I=4, SPLIT_R=3)),
    ((37, 6), 0, "False", dict(BLOCK_R=16, BLOCK_I=1)),      # [BLOCK_R, 1] strided tiles
    ((2, 1, 5), 1, "True", dict(BLOCK_R=4, BLOCK_I=8)),      # R == 1 on tiles
]


def _input(name, shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    if name == "prod":
        x = 1.0 + 0.05 * x
    elif name == "norm0":
        x = torch.where(x.abs() < 0.5, torch.zeros_like(x), x)
    elif name.startswith("var") or name.startswith("std"):
        x = 3.0 * x + 10.0  # an offset mean: the merges must stay centered
    return x.to(dtype)


def _check(name, x, dim, keep, out):
    ref = OPS[name][1](x.float(), dim, keep == "True")
    if ref.is_floating_point():
        ref = ref.to(x.dtype)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    if x.dtype == torch.bfloat16:
        torch.testing.assert_close(out.float(), ref.float(), atol=1e-2, rtol=1.6e-2, equal_nan=True)
    else:
        torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4, equal_nan=True)


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("shape,dim,keep,blocks", CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_reduce_dim(name, shape, dim, keep, blocks, dtype):
    x = _input(name, shape, dtype, seed=11)
    model = load_model_new("reduce_dim", DIM=dim, KEEPDIM=keep, **OPS[name][0], **blocks)(dim)
    _check(name, x, dim, keep, model(x))


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("shape,dim,blocks", [
    ((6, 37), 1, dict(BLOCK_R=8)),
    ((6, 37), 1, dict(BLOCK_R=8, SPLIT_R=3)),
    ((6, 37), 1, dict(BLOCK_R=64)),
    ((4, 37, 3), 1, dict(BLOCK_R=8, BLOCK_I=2, SPLIT_R=2)),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_reduce_dim_arg_ties(op, shape, dim, blocks, dtype):
    # Few distinct values: the extreme value recurs within chunks, across chunks and
    # across splits; the first index wins like torch. Row 0 is constant (index 0), row 1
    # holds +-inf, row 2 the extreme value only in its last element.
    g = torch.Generator().manual_seed(7)
    x = torch.randint(0, 3, shape, generator=g).float()
    x[0] = 1.0
    x[1].view(-1)[5::7] = float("inf")
    x[1].view(-1)[3::9] = float("-inf")
    x[2] = 1.0
    x[2].select(0, -1).fill_(5.0 if op == "argmax" else -5.0)
    x = x.to(dtype)
    model = load_model_new("reduce_dim", OP=op, DIM=dim, **blocks)(dim)
    out = model(x)
    ref = getattr(torch, op)(x, dim)
    assert torch.equal(out, ref)


@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
@pytest.mark.parametrize("op", ["argmax", "argmin", "max", "min"])
def test_reduce_dim_rows_all_infinite(value, op):
    # Rows of one infinite value (the masked lanes hold the same value as the neutral).
    x = torch.full((3, 21), value)
    model = load_model_new("reduce_dim", OP=op, DIM=1, BLOCK_R=8, SPLIT_R=2)(1)
    ref = getattr(torch, op)(x, 1)
    ref = ref if op.startswith("arg") else ref.values
    assert torch.equal(model(x), ref)


@pytest.mark.parametrize("name", ["sum", "argmax", "norm2", "var"])
def test_reduce_dim_noncontiguous(name):
    base = _input(name, (37, 6), torch.float32, seed=3)
    for x in (base.t(), base[::2, 1:]):
        model = load_model_new("reduce_dim", DIM=1, BLOCK_R=8, **OPS[name][0])(1)
        _check(name, x, 1, "False", model(x))
        model = load_model_new("reduce_dim", DIM=0, BLOCK_R=8, BLOCK_I=2, **OPS[name][0])(0)
        _check(name, x, 0, "False", model(x))


@pytest.mark.parametrize("ord_", ["2", "1", "inf", "-inf", "0"])
@pytest.mark.parametrize("shape,dim,blocks", [
    ((3, 1000), 1, dict(BLOCK_R=128, SPLIT_R=3)),
    ((2, 999, 3), 1, dict(BLOCK_R=64, BLOCK_I=2, SPLIT_R=5)),
    ((1, 1), 0, dict(BLOCK_R=4)),
    ((17, 13), 0, dict(BLOCK_R=4, BLOCK_I=4)),
])
def test_reduce_dim_norm_awkward(ord_, shape, dim, blocks):
    x = _input("norm0" if ord_ == "0" else "norm2", shape, torch.float32, seed=5) * 40
    model = load_model_new("reduce_dim", OP="norm", ORD=ord_, DIM=dim, KEEPDIM="True",
                           **blocks)(dim)
    ref = torch.norm(x, float(ord_), dim, keepdim=True)
    torch.testing.assert_close(model(x), ref, atol=1e-4, rtol=1e-5)


def test_reduce_dim_var_stability():
    # A large mean against a small spread: Welford/Chan merges keep fp32 accurate where
    # sum(x^2)/n - mean^2 would cancel to noise.
    g = torch.Generator().manual_seed(9)
    x = 1e4 + torch.randn(4, 3000, generator=g)
    for blocks in (dict(BLOCK_R=256), dict(BLOCK_R=128, SPLIT_R=7)):
        model = load_model_new("reduce_dim", OP="var", DIM=1, **blocks)(1)
        ref = torch.var(x.double(), 1).float()
        torch.testing.assert_close(model(x), ref, atol=2e-3, rtol=2e-3)


def _kernel(**params):
    return load_model_new("reduce_dim", **params).forward.__globals__["reduce_kernel"]


@pytest.mark.parametrize("R,block_r", [(1, 1), (37, 64), (37, 8), (64, 16)])
@pytest.mark.parametrize("op,agg,order,neutral", [
    ("sum", "sum", "2", 0.0), ("mean", "sum", "2", 0.0), ("prod", "prod", "2", 1.0),
    ("max", "max", "2", float("-inf")), ("min", "min", "2", float("inf")),
    ("argmax", "sum", "2", float("-inf")), ("argmin", "sum", "2", float("inf")),
    ("norm", "sum", "2", 0.0), ("norm", "max", "inf", 0.0), ("norm", "min", "-inf", float("inf")),
    ("var", "sum", "2", 0.0), ("std", "sum", "2", 0.0),
])
def test_reduce_dim_row_path_matches_tile_path(R, block_r, op, agg, order, neutral):
    # The kernel on contiguous rows (INNER == 1) with ROW=True (1-D chunks) and ROW=False
    # ([BLOCK_R, 1] tiles) gives the same results, every op.
    kernel = _kernel()
    g = torch.Generator().manual_seed(6)
    x = torch.randint(-4, 5, (4, R), generator=g).float() * 0.5 + 0.25
    if op == "prod":
        x = 1.0 + 0.05 * x
    r_per_split = triton.cdiv(R, block_r) * block_r
    outs = []
    for row in (True, False):
        out = torch.empty(4, dtype=torch.int64 if op.startswith("arg") else torch.float32)
        kernel[(4, 1)](x, out, out, out, R, 1, 1, r_per_split, 4, 1.0 / R, float(max(0, R - 1)),
                       BLOCK_R=block_r, BLOCK_I=1, OP=op, AGG=agg, ORD=order, NEUTRAL=neutral,
                       FINAL=True, ROW=row)
        outs.append(out)
    torch.testing.assert_close(outs[0], outs[1], atol=1e-6, rtol=1e-6, equal_nan=True)


def _nan_input(shape, dim, dtype, seed):
    # Slices along dim (R = shape[dim] >= 37) with NaN / inf patterns, the rest random:
    # 0 none, 1 one NaN in a later chunk / split, 2 all NaN, 3 NaN after +inf and -inf,
    # 4 two NaNs (the first wins), 5 NaN first, 6 +inf and -inf without NaN, 7 NaN last
    # (the ragged chunk), 8 signed zeros (-0.0 first: torch ties them).
    g = torch.Generator().manual_seed(seed)
    R = shape[dim]
    rest = [s for i, s in enumerate(shape) if i != dim % len(shape)]
    y = torch.randn(max(1, torch.Size(rest).numel()), R, generator=g)
    nan, inf = float("nan"), float("inf")
    y[1, 20] = nan
    y[2] = nan
    y[3, 5], y[3, 10], y[3, 30] = inf, -inf, nan
    y[4, 9], y[4, 33] = nan, nan
    y[5, 0] = nan
    y[6, 3], y[6, 36] = inf, -inf
    y[7, R - 1] = nan
    y[8] = 0.0
    y[8, 0:R:2] = -0.0
    return y.reshape(*rest, R).movedim(-1, dim).contiguous().to(dtype)


f32, bf16 = torch.float32, torch.bfloat16
NAN_CASES = [
    ((9, 37), 1, dict(BLOCK_R=32), f32),                             # row path, 2 chunks
    ((9, 37), -1, dict(BLOCK_R=16, SPLIT_R=3), f32),                 # row path, two pass
    ((3, 37, 4), 1, dict(BLOCK_R=8, BLOCK_I=2), f32),                # tile path (middle dim)
    ((3, 37, 4), 1, dict(BLOCK_R=8, BLOCK_I=4, SPLIT_R=3), f32),     # tile path, two pass
    ((9, 37), 1, dict(BLOCK_R=32), bf16),
    ((37, 9), 0, dict(BLOCK_R=8, BLOCK_I=4, SPLIT_R=2), bf16),
]


@pytest.mark.parametrize("name", ["max", "min", "argmax", "argmin", "norm_inf", "norm_neg_inf"])
@pytest.mark.parametrize("shape,dim,blocks,dtype", NAN_CASES)
def test_reduce_dim_nan_extrema(name, shape, dim, blocks, dtype):
    # Like torch: max / min (and the inf / -inf norms) are NaN for a slice holding one,
    # argmax / argmin the index of its first NaN (exactly: _check compares ints exactly).
    x = _nan_input(shape, dim, dtype, seed=4)
    model = load_model_new("reduce_dim", DIM=dim, **OPS[name][0], **blocks)(dim)
    _check(name, x, dim, "False", model(x))


@pytest.mark.parametrize("name,case", [
    (name, 3) for name in ["sum", "mean", "prod", "norm2", "norm1", "norm0", "var", "std"]] + [
    (name, 1) for name in ["prod", "norm0", "var"]])
def test_reduce_dim_nan_arithmetic(name, case):
    # NaN and inf reach these through arithmetic (inf - inf in var, NaN != 0 in norm0).
    shape, dim, blocks, dtype = NAN_CASES[case]
    x = _nan_input(shape, dim, dtype, seed=4)
    model = load_model_new("reduce_dim", DIM=dim, **OPS[name][0], **blocks)(dim)
    _check(name, x, dim, "False", model(x))


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("shape,dim,keep", [((3, 0), 1, "False"), ((3, 0, 4), 1, "True"),
                                            ((0, 0), -1, "False")])
def test_reduce_dim_empty(name, shape, dim, keep):
    # An empty reduced dim, like torch: ops without an identity raise, the rest fill.
    x = torch.empty(shape)
    model = load_model_new("reduce_dim", DIM=dim, KEEPDIM=keep, **OPS[name][0])(dim)
    try:
        ref = OPS[name][1](x, dim, keep == "True")
    except (IndexError, RuntimeError) as e:
        with pytest.raises(type(e), match="non-zero size|empty"):
            model(x)
        return
    out = model(x)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out, ref, equal_nan=True)
