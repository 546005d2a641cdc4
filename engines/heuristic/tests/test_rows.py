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


# The 1-D path (ROW, INNER == 1: the normalized / softmax elements are contiguous) and the
# 2-D [BLOCK_R, BLOCK_I] tile path (INNER > 1) of row_norm and softmax_online.

def _kernel(template_id, name, **params):
    return load_model_new(template_id, **params).forward.__globals__[name]


ROW_SHAPES = [
    ((3, 1), (1,), 8),            # R == 1 (BLOCK_R clamps to 1): one pass
    ((4, 37), (37,), 64),         # one pass, masked
    ((5, 37), (37,), 8),          # 5 chunks, the last one partial
    ((2, 3, 40), (3, 40), 32),    # R = 120: 4 chunks over two normalized dims
    ((2, 64), (64,), 16),         # 4 full chunks
]


@pytest.mark.parametrize("shape,nshape,block_r", ROW_SHAPES)
@pytest.mark.parametrize("affine", ["weight_bias", "weight", "none"])
def test_layernorm_rows(shape, nshape, block_r, affine):
    torch.manual_seed(3)
    kw = dict(elementwise_affine=affine != "none", bias=affine == "weight_bias")
    ref_mod = torch.nn.LayerNorm(nshape, **kw)
    model = load_model_new("row_norm", NORM="layer", AFFINE="layernorm_module", BLOCK_R=block_r)(nshape, **kw)
    with torch.no_grad():
        for p in ref_mod.parameters():
            p.normal_()
    model.norm.load_state_dict(ref_mod.state_dict())
    x = torch.randn(*shape) * 3 + 10
    torch.testing.assert_close(model(x), ref_mod(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("shape,nshape,block_r", ROW_SHAPES)
@pytest.mark.parametrize("weight", [True, False])
def test_rmsnorm_rows(shape, nshape, block_r, weight):
    torch.manual_seed(4)
    ref_mod = torch.nn.RMSNorm(nshape, eps=1e-6, elementwise_affine=weight)
    model = load_model_new("row_norm", NORM="rms", AFFINE="rmsnorm_module", BLOCK_R=block_r)(
        nshape, eps=1e-6, elementwise_affine=weight)
    with torch.no_grad():
        for p in ref_mod.parameters():
            p.normal_()
    model.norm.load_state_dict(ref_mod.state_dict())
    x = torch.randn(*shape) * 2
    torch.testing.assert_close(model(x), ref_mod(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape,blocks", [
    ((2, 5, 3, 4), dict(BLOCK_R=2, BLOCK_I=8)),   # R = 5, INNER = 12: 3 chunks, 2 inner blocks
    ((2, 5, 3, 4), dict(BLOCK_R=8, BLOCK_I=4)),   # one pass
    ((3, 9, 2), dict(BLOCK_R=4, BLOCK_I=1)),      # [BLOCK_R, 1] tiles, strided
])
@pytest.mark.parametrize("norm", ["layer", "rms"])
def test_row_norm_inner_columns(shape, blocks, norm):
    # AFFINE=none over dim 1 with trailing dims: the 2-D tile path (INNER > 1).
    torch.manual_seed(5)
    x = torch.randn(*shape) * 2 + (5 if norm == "layer" else 0)
    model = load_model_new("row_norm", NORM=norm, AFFINE="none", DIM=1, NUM_DIMS=1, **blocks)(shape[1], 1e-5)
    if norm == "layer":
        ref = (x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)
    else:
        ref = x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)
    torch.testing.assert_close(model(x), ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("R,block_r", [(1, 1), (37, 64), (37, 8), (64, 16)])
@pytest.mark.parametrize("norm", ["layer", "rms"])
@pytest.mark.parametrize("has_w,has_b", [(True, True), (True, False), (False, False), (False, True)])
def test_row_norm_row_path_matches_tile_path(R, block_r, norm, has_w, has_b):
    # The kernel on contiguous rows (INNER == 1) with ROW=True (1-D chunks) and ROW=False
    # ([BLOCK_R, 1] tiles): the same math, every mode (one pass, chunked, affine or not).
    torch.manual_seed(6)
    kernel = _kernel("row_norm", "row_norm_kernel", NORM=norm)
    x = torch.randn(4, R) * 3 + 7
    w, b = torch.randn(R), torch.randn(R)
    outs = []
    for row in (True, False):
        y = torch.empty_like(x)
        kernel[(4,)](x, w, b, y, R, 1, 1, 1e-5, BLOCK_R=block_r, BLOCK_I=1, NORM=norm,
                     HAS_W=has_w, HAS_B=has_b, ONE_PASS=R <= block_r, ROW=row, MEAN=False,
                     EPS_MODE="none")
        outs.append(y)
    torch.testing.assert_close(outs[0], outs[1], atol=1e-6, rtol=1e-6)
    ref = x - x.mean(1, keepdim=True) if norm == "layer" else x
    ref = ref / torch.sqrt(torch.mean(ref ** 2, 1, keepdim=True) + 1e-5)
    ref = ref * (w if has_w else 1) + (b if has_b else 0)
    torch.testing.assert_close(outs[0], ref, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("shape,dim,blocks", [
    ((5, 1), 1, dict(BLOCK_R=8)),             # R == 1
    ((3, 100), 1, dict(BLOCK_R=16)),          # 7 chunks, the last one partial
    ((2, 3, 50), -1, dict(BLOCK_R=64)),       # one pass, masked, 3-D input
    ((2, 64), 1, dict(BLOCK_R=16)),           # 4 full chunks
    ((3, 10, 6), 1, dict(BLOCK_R=4, BLOCK_I=1)),  # 2-D path, [BLOCK_R, 1] strided tiles
    ((4, 6, 20), 1, dict(BLOCK_R=16, BLOCK_I=8)),  # 2-D path, one pass, 3 inner blocks
])
@pytest.mark.parametrize("log", ["False", "True"])
def test_softmax_rows_and_tiles(shape, dim, blocks, log):
    torch.manual_seed(7)
    x = torch.randn(*shape) * 5
    out = load_model_new("softmax_online", DIM=dim, LOG=log, **blocks)()(x)
    ref = F.log_softmax(x, dim) if log == "True" else F.softmax(x, dim)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("R,block_r", [(1, 1), (37, 64), (37, 8), (64, 16)])
@pytest.mark.parametrize("log", ["False", "True"])
def test_softmax_row_path_matches_tile_path(R, block_r, log):
    # ROW=True (1-D chunks) and ROW=False ([BLOCK_R, 1] tiles) on contiguous rows, with
    # -inf entries (masked scores): a whole first chunk of -inf exercises the running max.
    torch.manual_seed(8)
    kernel = _kernel("softmax_online", "softmax_kernel", LOG=log)
    x = torch.randn(4, R) * 5
    x[1, : min(R, 12)] = float("-inf")
    if R > 1:
        x[2, ::3] = float("-inf")
    outs = []
    for row in (True, False):
        y = torch.empty_like(x)
        kernel[(4,)](x, y, R, 1, 1, BLOCK_R=block_r, BLOCK_I=1, LOG=log == "True",
                     ONE_PASS=R <= block_r, ROW=row)
        outs.append(y)
    torch.testing.assert_close(outs[0], outs[1], atol=1e-6, rtol=1e-6, equal_nan=True)
    ref = F.log_softmax(x, 1) if log == "True" else F.softmax(x, 1)
    torch.testing.assert_close(outs[0], ref, atol=1e-5, rtol=1e-5, equal_nan=True)


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


# NORM l1 / l2 (AFFINE none): x / x.abs().sum(dims, keepdim=True) and
# x / torch.norm(x, p=2, dim=dims, keepdim=True), KernelBench's L1Norm / L2Norm, exactly
# torch's semantics: no eps, so a zero slice is nan and an inf entry gives nan / 0.
LP_REF = {
    "l1": lambda x, d: x / torch.sum(torch.abs(x), dim=d, keepdim=True),
    "l2": lambda x, d: x / torch.norm(x, p=2, dim=d, keepdim=True),
}


@pytest.mark.parametrize("shape,dim,num_dims,blocks", [
    ((5, 37), 1, 1, dict(BLOCK_R=8)),              # 5 chunks, the last one partial
    ((5, 37), 1, 1, dict(BLOCK_R=64)),             # one pass, masked
    ((3, 1), 1, 1, dict(BLOCK_R=8)),               # R == 1
    ((1, 1), 1, 1, dict(BLOCK_R=1)),
    ((7, 64), -1, 1, dict(BLOCK_R=16)),            # 4 full chunks
    ((2, 3, 40), 1, 2, dict(BLOCK_R=32)),          # R = 120 over two dims
    ((4, 9, 5), 1, 1, dict(BLOCK_R=4, BLOCK_I=2)),  # INNER 5: 2-D tiles, 3 chunks, 3 inner blocks
    ((4, 9, 5), 1, 1, dict(BLOCK_R=16, BLOCK_I=8)),  # 2-D tiles, one pass
    ((6, 5), 0, 1, dict(BLOCK_R=4, BLOCK_I=4)),    # dim 0 of a matrix: INNER 5
    ((2, 5, 3, 4), 1, 1, dict(BLOCK_R=2, BLOCK_I=8)),
])
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_lp_norm(shape, dim, num_dims, blocks, norm):
    torch.manual_seed(9)
    x = torch.randn(*shape) * 3
    model = load_model_new("row_norm", NORM=norm, AFFINE="none", DIM=dim, NUM_DIMS=num_dims,
                           **blocks)()
    d = dim % x.dim()
    dims = tuple(range(d, d + num_dims))
    ref = LP_REF[norm](x, dims)
    out = model(x)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("block_r", [16, 128])  # two passes, one pass
@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_lp_norm_half(block_r, norm, dtype):
    torch.manual_seed(10)
    x = torch.randn(6, 100, dtype=dtype)
    out = load_model_new("row_norm", NORM=norm, AFFINE="none", DIM=1, BLOCK_R=block_r)()(x)
    ref = LP_REF[norm](x, 1)  # the norm in the input's dtype, as the kernel rounds it
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), ref.float(), atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(out.float(), LP_REF[norm](x.float(), 1), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_lp_norm_noncontiguous(norm):
    x = torch.randn(40, 12).t()  # (12, 40), non-contiguous
    out = load_model_new("row_norm", NORM=norm, AFFINE="none", DIM=1, BLOCK_R=16)()(x)
    torch.testing.assert_close(out, LP_REF[norm](x, 1), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("block_r", [4, 16])  # two passes, one pass
@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("block_i", [None, 2])  # 1-D rows; 2-D tiles over dim 1 of (3, 10, 2)
def test_lp_norm_nonfinite_like_torch(block_r, norm, block_i):
    # A zero slice: 0 / 0 = nan everywhere; an inf entry: the norm is inf, the slice 0 and
    # the inf entry nan; a nan entry: the slice nan. The harness compares non-finite
    # values exactly.
    x = torch.randn(4, 10) if block_i is None else torch.randn(4, 10, 2)
    x[0] = 0.0
    x[1, 3] = float("inf")
    x[2, 5] = float("nan")
    params = dict(BLOCK_R=block_r) if block_i is None else dict(BLOCK_R=block_r, BLOCK_I=block_i)
    out = load_model_new("row_norm", NORM=norm, AFFINE="none", DIM=1, **params)()(x)
    ref = LP_REF[norm](x, 1)
    assert ref[0].isnan().all() and ref[1].isnan().any() and (ref[1] == 0).any()
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=1e-5, equal_nan=True)
    assert torch.equal(out.isinf(), ref.isinf())


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_lp_norm_fp16_overflow_like_torch(norm):
    # fp16 rows whose norm overflows fp16 (sum |x| > 65504): torch's norm is inf, x / inf 0.
    x = torch.full((2, 4096), 30.0, dtype=torch.float16)
    if norm == "l2":
        x = torch.full((2, 4096), 2000.0, dtype=torch.float16)  # sqrt(4096) * 2000 > 65504
    out = load_model_new("row_norm", NORM=norm, AFFINE="none", DIM=1, BLOCK_R=1024)()(x)
    ref = LP_REF[norm](x, 1)
    assert torch.equal(out, ref)


_SM90_LP = r"""
import compile_sm90 as c
m = c._load("row_norm", NORM="l2", AFFINE="none")
sig = dict(x_ptr="*bf16", w_ptr="*bf16", b_ptr="*bf16", y_ptr="*bf16", R="i32", INNER="i32",
           num_inner_blocks="i32", eps="fp32")
for norm, mean, eps_mode in (("l1", False, "none"), ("l2", False, "none"), ("layer", False, "none"),
                              ("l1", True, "add"), ("l2", False, "add_inside"), ("max", False, "clamp")):
    for name, block_r, block_i, one_pass, row in [("one pass 4096", 4096, 1, True, True),
                                                  ("two passes 4096", 4096, 1, False, True),
                                                  ("tiles 8x64", 8, 64, False, False)]:
        c._compile(f"row_norm {norm} {eps_mode} {name}", m.row_norm_kernel, sig,
                   dict(BLOCK_R=block_r, BLOCK_I=block_i, NORM=norm, HAS_W=False, HAS_B=False,
                        ONE_PASS=one_pass, ROW=row, MEAN=mean, EPS_MODE=eps_mode), 4, 1,
                   aligned=("x_ptr", "y_ptr", "R"))
"""


def test_lp_norm_compiles_for_sm90_without_spills():
    """NORM l1 / l2 / max (tl.div_rn, tl.sqrt_rn, the norm rounded to bf16; MEAN, EPS_MODE) compile for Hopper on
    both paths, as LayerNorm does (compile_sm90.py's helpers in a subprocess without the
    interpreter; needs triton's NVIDIA backend tools, no GPU)."""
    import json
    import os
    import subprocess
    import sys

    from test_compile_sm90 import _backend
    if not _backend():
        pytest.skip("triton's NVIDIA backend tools are not installed")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    r = subprocess.run([sys.executable, "-c", _SM90_LP], cwd=os.path.dirname(os.path.abspath(__file__)),
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == 18, r.stdout + r.stderr[-3000:]
    assert not [row for row in rows if "error" in row or row["stack"] != 0], rows


# The written-out family (op recognition's l1 / l2 / max with MEAN and EPS_MODE): any dim,
# eps added, under the root or as a lower bound, the mean instead of the sum.
LP_FAMILY = {
    ("l1", "True", "none"): lambda x, d, e: x / torch.mean(torch.abs(x), dim=d, keepdim=True),
    ("l1", "False", "add"): lambda x, d, e: x / (torch.sum(x.abs(), dim=d, keepdim=True) + e),
    ("l1", "True", "clamp"): lambda x, d, e: x / x.abs().mean(d, keepdim=True).clamp_min(e),
    ("l2", "False", "add_inside"): lambda x, d, e: x / torch.sqrt(torch.sum(x ** 2, dim=d, keepdim=True) + e),
    ("l2", "False", "add"): lambda x, d, e: x / (torch.sqrt(torch.sum(x * x, dim=d, keepdim=True)) + e),
    # F.normalize's x / norm(x).clamp_min(eps), over several dims too.
    ("l2", "False", "clamp"): lambda x, d, e: x / torch.norm(x, p=2, dim=d, keepdim=True).clamp_min(e),
    ("max", "False", "none"): lambda x, d, e: x / torch.amax(torch.abs(x), dim=d, keepdim=True),
    ("max", "False", "add"): lambda x, d, e: x / (torch.amax(torch.abs(x), dim=d, keepdim=True) + e),
}


@pytest.mark.parametrize("shape,dim,num_dims,blocks", [
    ((5, 37), 1, 1, dict(BLOCK_R=8)),               # rows, 5 chunks, the last partial
    ((3, 33, 7), 1, 1, dict(BLOCK_R=8, BLOCK_I=4)),  # a middle dim: 2-D tiles, two passes
    ((9, 6), 0, 1, dict(BLOCK_R=16, BLOCK_I=2)),    # dim 0, one pass
    ((2, 1, 3, 5), 1, 2, dict(BLOCK_R=2)),          # a size-1 dim inside the range, R = 3
])
@pytest.mark.parametrize("key", list(LP_FAMILY))
def test_lp_family(shape, dim, num_dims, blocks, key):
    norm, mean, eps_mode = key
    torch.manual_seed(11)
    x = torch.randn(*shape) * 2
    x[0] = 0.0  # a zero slice: eps decides between nan and 0
    eps = 1e-3
    model = load_model_new("row_norm", NORM=norm, AFFINE="none", DIM=dim, NUM_DIMS=num_dims,
                           MEAN=mean, EPS_MODE=eps_mode, EPS=eps, **blocks)()
    d = tuple(range(dim % x.dim(), dim % x.dim() + num_dims))
    ref = LP_FAMILY[key](x, d, eps)
    if num_dims == 1 and key == ("l2", "False", "clamp"):
        torch.testing.assert_close(ref, F.normalize(x, p=2.0, dim=d[0], eps=eps))
    torch.testing.assert_close(model(x), ref, atol=1e-4, rtol=1e-4, equal_nan=True)


@pytest.mark.parametrize("key", [("l1", "True", "none"), ("max", "False", "clamp"),
                                 ("l2", "False", "add_inside")])
@pytest.mark.parametrize("blocks", [dict(BLOCK_R=16), dict(BLOCK_R=8, BLOCK_I=4)])
def test_lp_family_bf16(key, blocks):
    norm, mean, eps_mode = key
    torch.manual_seed(12)
    x = torch.randn(4, 40, 3, dtype=torch.bfloat16)
    ref_fn = LP_FAMILY.get(key) or (lambda x, d, e: x / x.abs().amax(d, keepdim=True).clamp_min(e))
    model = load_model_new("row_norm", NORM=norm, AFFINE="none", DIM=1, MEAN=mean,
                           EPS_MODE=eps_mode, EPS=1e-6, **blocks)()
    out = model(x)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ref_fn(x, (1,), 1e-6).float(), atol=1e-2, rtol=1e-2)


def test_max_norm_nan_propagates():
    x = torch.randn(3, 20)
    x[1, 7] = float("nan")
    for blocks in (dict(BLOCK_R=4), dict(BLOCK_R=32)):
        out = load_model_new("row_norm", NORM="max", AFFINE="none", DIM=1, **blocks)()(x)
        ref = x / x.abs().amax(1, keepdim=True)
        assert out[1].isnan().all()
        torch.testing.assert_close(out, ref, equal_nan=True)
