"""The CUDA C++ template conv_cutlass_fprop as rendered: its CUDA source, knobs and checks
against its JSON (read without building: compile_cuda_templates.py, CTest's
cuda_templates_compile_sm90a_*of4, compiles it), and the module's Python run on the CPU with a
stand-in for the extension (conv_cutlass_double.py): 1-D, 2-D and 3-D layers built as the
reference's with the same seed, the channels-last permutes, the geometry, the view it
returns, against torch's own convolution at the harness's tolerance. The kernel itself
runs on a GPU (tests/gpu/conv_cutlass_check.py, conv_sweep.py)."""
import ast
import os
import sys

import pytest
import torch
import torch.nn as nn

from conv_cutlass_double import exec_module
from template_render import REPO, load_meta, render

sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "tests", "gpu"))
from conv_sweep import shape_params  # noqa: E402
from kagent_harness.compare import compare, tolerances  # noqa: E402
from kagent_harness.kernels import own_kernel_names  # noqa: E402

TID = "conv_cutlass_fprop"
META = load_meta(TID)
TILES = META["params"]["TILE"]["allowed"]
SMEM_LIMIT = 227 * 1024  # bytes of shared memory an sm_90 block may have
MODULES = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}


def cuda_source(source):
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "cuda_source":
            return ast.literal_eval(node.value)
    raise AssertionError("no cuda_source")


def params_for(layer, dtype="float32"):
    """The shape params the brain renders for `layer` (ConvCutlassFpropParams), as the GPU
    sweep computes them."""
    params = shape_params(layer, dtype)
    assert params is not None, f"no CUTLASS render for {layer}"
    return params


def test_the_json_declares_a_cuda_conv_with_three_knobs():
    assert META["language"] == "cuda" and META["op_class"] == "conv"
    assert META["dtypes"] == ["float32", "bfloat16", "float16"]
    knobs = sorted(n for n, p in META["params"].items() if p["kind"] == "knob")
    assert knobs == ["SWIZZLE", "TILE", "num_stages"]
    conditions = " ".join(META["conditions"])
    for said in ("groups = 1", "at most 32", "2 GiB", "channels-last", "sm_90a", "3xTF32"):
        assert said in conditions


@pytest.mark.parametrize("tile", TILES)
def test_every_tile_is_a_valid_cutlass_tile(tile):
    block, warp = tile.split("_")
    (tm, tn, tk), (wm, wn, wk) = ([int(v) for v in s.split("x")] for s in (block, warp))
    assert tm % wm == 0 and tn % wn == 0 and wk == tk
    assert (tm // wm) * (tn // wn) in (4, 8)
    assert wm % 16 == 0 and wn % 8 == 0 and tk % 16 == 0
    # The default stages fit for fp32 (4 bytes; a 16-bit tile takes half).
    stages = int(META["params"]["num_stages"]["default"])
    assert (tm + tn) * tk * 4 * stages <= SMEM_LIMIT or tk == 64
    assert f'constexpr char kTile[] = "{tile}";' in cuda_source(render(TID, TILE=tile))


def test_knobs_and_shape_params_reach_the_cuda_source():
    src = cuda_source(render(TID, num_stages=5, SWIZZLE=4, DTYPE="bfloat16", ALIGN=8, DIMS=3))
    assert "/*Stages=*/5," in src and "GemmIdentityThreadblockSwizzle<4>" in src
    assert "#define KAGENT_DTYPE_bfloat16 1" in src and "constexpr int kAlign = 8;" in src
    assert "#if 3 == 3" in src
    default = cuda_source(render(TID))
    assert "#define KAGENT_DTYPE_float32 1" in default and "#if 2 == 3" in default
    assert "cutlass::arch::OpMultiplyAddFastF32" in default  # fp32 runs as 3xTF32
    assert "cutlass::conv::IteratorAlgorithm::kOptimized" in default
    # The source depends on the knobs, DTYPE, DIMS and ALIGN only: shapes are Python's, so
    # problems of one dtype and rank share a build.
    assert cuda_source(render(TID, IN_CHANNELS=64, KERNEL_W=7, PADDING_W=3)) == default


def test_the_harness_counts_the_kernel_as_the_candidates_own():
    assert own_kernel_names(render(TID)) == ["kagent_conv_fprop_kernel"]


@pytest.mark.parametrize("value", [("ALIGN", 3), ("DIMS", 4), ("KERNEL_W", 33),
                                   ("TILE", "96x64x16_48x32x16"), ("DTYPE", "float64")])
def test_out_of_range_params_are_refused(value):
    with pytest.raises(Exception):
        render(TID, **{value[0]: value[1]})


CASES = [
    # (dims, input shape, ctor args, ctor kwargs, dtype)
    (2, (2, 8, 13, 17), (8, 12, 3), dict(padding=1), "float32"),
    (2, (1, 4, 20, 11), (4, 8, (5, 3)), dict(stride=(2, 1), padding=(2, 0), dilation=(1, 2),
                                             bias=False), "float32"),
    (2, (3, 3, 16, 16), (3, 5, 7), dict(stride=2, padding=3), "float32"),  # ALIGN 1
    (1, (2, 16, 50), (16, 24, 5), dict(stride=3, padding=2, dilation=2), "float32"),
    (1, (16, 41), (16, 8, 3), dict(padding=1), "float32"),  # an unbatched input
    (3, (2, 8, 5, 9, 7), (8, 16, (3, 2, 3)), dict(stride=(1, 2, 1), padding=(1, 0, 2),
                                                  dilation=(2, 1, 1)), "float32"),
    (2, (2, 16, 9, 10), (16, 32, 3), dict(padding=1), "bfloat16"),
    (3, (1, 8, 4, 6, 6), (8, 8, 3), dict(padding=1, bias=False), "float16"),
    # Stems: the input channels padded to a 16-byte access (PAD_CHANNELS).
    (2, (2, 3, 19, 23), (3, 8, (7, 5)), dict(stride=(2, 1), padding=(3, 2), dilation=(1, 2)),
     "float32"),
    (1, (2, 2, 40), (2, 12, 5), dict(stride=2, padding=1, bias=False), "float32"),
    (2, (1, 3, 15, 12), (3, 16, 3), dict(stride=2, padding=1), "bfloat16"),
    # 3-D stems: the depth taps folded into the channels (FOLD_DEPTH), KernelBench's kernels
    # (3, 3, 3), (3, 3, 1) and (3, 5, 7), stride, padding and dilation along the depth.
    (3, (2, 3, 7, 9, 8), (3, 8, 3), dict(bias=False), "float32"),
    (3, (1, 3, 6, 10, 4), (3, 12, (3, 3, 1)), dict(padding=(1, 1, 0)), "float32"),
    (3, (2, 3, 11, 9, 12), (3, 8, (3, 5, 7)), dict(stride=(2, 1, 2), padding=(2, 2, 3),
                                                   dilation=(2, 1, 1)), "float32"),
    (3, (1, 2, 5, 6, 7), (2, 16, (5, 3, 3)), dict(padding=(2, 1, 1)), "bfloat16"),
]


def check_module(template, case, monkeypatch, params=None):
    """The template's module for `case` (rendered with `params`, by default the brain's
    shape params for the case's layer, built with the reference's seed) against the
    reference layer in float64, at the harness's tolerance; returns the candidate, its
    input and output."""
    dims, shape, args, kwargs, dtype_name = case
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(5)
    ref = MODULES[dims](*args, **kwargs).to(dtype)
    if params is None:
        params = params_for(ref, dtype_name)
        if "ALIGN" not in load_meta(template)["params"]:
            del params["ALIGN"], params["PAD_CHANNELS"], params["FOLD_DEPTH"]
    mod = exec_module(render(template, **params), monkeypatch)
    torch.manual_seed(5)
    cand = mod.ModelNew()  # built from the params alone: the seed gives the same weights
    assert torch.equal(cand.conv.weight.to(dtype), ref.weight)
    x = torch.randn(*shape).to(dtype)
    with torch.no_grad():
        want = ref.double()(x.double()).to(dtype)
        got = cand(x)
    assert got.shape == want.shape and got.dtype == dtype
    atol, rtol = tolerances([want])
    assert compare([want], [got], atol, rtol)["ok"]
    return cand, x, got


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}d-{c[4]}-{'x'.join(map(str, c[1]))}")
def test_the_module_computes_the_reference_convolution(case, monkeypatch):
    dims = case[0]
    _, x, got = check_module(TID, case, monkeypatch)
    if x.dim() == dims + 2 and got.shape[1] > 1:  # a channels-last view, no copy back
        assert got.stride(1) == 1


def test_a_stem_reaches_the_kernel_with_its_channels_padded_to_align(monkeypatch):
    import conv_cutlass_double
    seen, real = [], conv_cutlass_double.conv

    def conv(x, w, bias, geometry):
        seen.append((x.shape[-1], w.shape[-1], x[..., 3:].abs().max().item(),
                     w[..., 3:].abs().max().item()))
        return real(x, w, bias, geometry)
    monkeypatch.setattr(conv_cutlass_double, "conv", conv)
    case = (2, (2, 3, 19, 23), (3, 8, (7, 5)), dict(stride=(2, 1), padding=(3, 2)), "float32")
    params = params_for(MODULES[2](*case[2], **case[3]))
    assert params["ALIGN"] == "4" and params["PAD_CHANNELS"] == "True"
    src = render(TID, **params)
    assert "#define KAGENT_PAD_CHANNELS_True 1" in cuda_source(src)
    assert "cutlass::conv::IteratorAlgorithm::kFixedChannels;" in cuda_source(src)
    check_module(TID, case, monkeypatch)
    assert seen == [(4, 4, 0.0, 0.0)]  # the fourth channel zeros in the input and weight


def test_a_3d_stem_reaches_the_kernel_as_a_2d_one_with_its_depth_taps_as_channels(monkeypatch):
    # 3 input channels, kernel depth 3, stride 2 and padding 1 along it: the kernel sees a
    # 2-D problem of N * OD images, 3 * 3 = 9 channels padded to 12 (zeros in the input and
    # the weight), the depth geometry unit, and the output comes back as the reference's.
    import conv_cutlass_double
    seen, real = [], conv_cutlass_double.conv

    def conv(x, w, bias, geometry):
        seen.append((tuple(x.shape), tuple(w.shape), tuple(geometry),
                     x[..., 9:].abs().max().item(), w[..., 9:].abs().max().item()))
        return real(x, w, bias, geometry)
    monkeypatch.setattr(conv_cutlass_double, "conv", conv)
    case = (3, (2, 3, 9, 10, 11), (3, 8, 3), dict(stride=(2, 1, 1), padding=1), "float32")
    params = params_for(MODULES[3](*case[2], **case[3]))
    assert params["ALIGN"] == "4" and params["FOLD_DEPTH"] == "True"
    assert params["PAD_CHANNELS"] == "False"
    src = cuda_source(render(TID, **params))
    assert "#define KAGENT_FOLD_DEPTH_True 1" in src
    assert "cutlass::conv::IteratorAlgorithm::kFewChannels;" in src
    check_module(TID, case, monkeypatch)
    # OD = (9 + 2 - 3) // 2 + 1 = 5 output depths of 2 images: 10 2-D images.
    assert seen == [((10, 1, 10, 11, 12), (8, 1, 3, 3, 12), (0, 1, 1, 1, 1, 1, 1, 1, 1),
                     0.0, 0.0)]


def test_the_module_refuses_another_dtype_and_rank(monkeypatch):
    mod = exec_module(render(TID, IN_CHANNELS=4, OUT_CHANNELS=4, KERNEL_H=3, KERNEL_W=3),
                      monkeypatch)
    model = mod.ModelNew()
    with pytest.raises(TypeError, match="rendered for torch.float32"):
        model(torch.randn(1, 4, 8, 8, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="rank-5 input to a 2-D conv"):
        model(torch.randn(1, 4, 8, 8, 8))
    with pytest.raises(NotImplementedError, match="padding_mode"):
        mod.ModelNew(padding_mode="reflect")


# -- conv_sm90_fprop: the same module (partials/conv_channels_last_*), CUTLASS 3.x's kernel --

SM90 = "conv_sm90_fprop"
SM90_META = load_meta(SM90)


def test_the_sm90_json_declares_a_16bit_cuda_conv():
    assert SM90_META["language"] == "cuda" and SM90_META["op_class"] == "conv"
    assert SM90_META["dtypes"] == ["bfloat16", "float16"]
    knobs = sorted(n for n, p in SM90_META["params"].items() if p["kind"] == "knob")
    assert knobs == ["CLUSTER", "TILE"]
    # One consumer warpgroup holds the tile: at most 128 x 128 accumulators.
    for tile in SM90_META["params"]["TILE"]["allowed"]:
        m, n, k = (int(v) for v in tile.split("x"))
        assert m * n <= 16384 and k % 16 == 0 and m in (64, 128)
    shape = {n for n, p in SM90_META["params"].items() if p["kind"] == "shape"}
    assert shape == {n for n, p in META["params"].items()
                     if p["kind"] == "shape"} - {"ALIGN", "PAD_CHANNELS", "FOLD_DEPTH"}


def test_the_sm90_source_takes_its_knobs_dims_and_bias():
    src = cuda_source(render(SM90, TILE="64x128x64", CLUSTER="2x1", DTYPE="float16",
                             DIMS=3, BIAS="True"))
    assert 'constexpr char kTile[] = "64x128x64";' in src
    assert 'constexpr char kCluster[] = "2x1";' in src
    assert 'constexpr char kDtype[] = "float16";' in src
    assert "#if 3 == 3" in src and 'constexpr bool kBias = "True"[0] == \'T\';' in src
    assert "cutlass::conv::KernelImplicitTmaWarpSpecializedSm90" in src
    assert "LinCombPerColBias" in src
    one_d = cuda_source(render(SM90, DIMS=1))
    assert "#if 1 == 3" in one_d and "cutlass::layout::TensorNWC" in one_d
    assert own_kernel_names(render(SM90)) == ["kagent_conv_sm90_kernel"]


@pytest.mark.parametrize("case", [c for c in CASES if c[4] != "float32" and c[2][0] % 8 == 0],
                         ids=lambda c: f"{c[0]}d-{c[4]}-{'x'.join(map(str, c[1]))}")
def test_the_sm90_module_computes_the_reference_convolution(case, monkeypatch):
    cand, x, _ = check_module(SM90, case, monkeypatch)
    with pytest.raises(TypeError, match=f"{SM90}: rendered for"):
        cand(x.float())
