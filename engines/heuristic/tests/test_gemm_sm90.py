"""The CUDA C++ template gemm_sm90_tf32x3 as rendered (its source, flags, knobs and checks
against its JSON, read without importing the module: the import builds the extension with
nvcc; compile_cuda_templates.py, CTest's cuda_templates_compile_sm90a_*of4, compiles it), and
the arithmetic of its split, emulated on the CPU over awkward shapes: the three TF32
products it sums come within the fp32 gate's tolerance of the exact product where one
TF32 product does not."""
import ast
import os
import sys

import pytest
import torch

from template_render import REPO, load_meta, render
from test_gemm_cutlass import build_name, literals

sys.path.insert(0, os.path.join(REPO, "python"))
from kagent_harness.kernels import own_kernel_names  # noqa: E402
from kagent_harness.protocol import default_tolerance  # noqa: E402

TID = "gemm_sm90_tf32x3"
META = load_meta(TID)
PARAMS = META["params"]


def test_the_json_declares_a_cuda_fp32_gemm_with_its_knobs_and_shape_params():
    assert META["language"] == "cuda" and META["op_class"] == "gemm"
    assert META["dtypes"] == ["float32"]
    assert {n: p["kind"] for n, p in PARAMS.items()} == {
        "TILE": "knob", "CLUSTER": "knob", "SCHEDULE": "knob", "EPILOGUE": "knob",
        "SWIZZLE": "knob", "A_EXPR": "shape", "B_EXPR": "shape"}
    conditions = " ".join(META["conditions"])
    for said in ("sm_90a", "N a multiple of 4", "3xTF32", "any strides"):
        assert said in conditions


@pytest.mark.parametrize("tile", PARAMS["TILE"]["allowed"])
def test_every_tile_is_a_wgmma_tile_and_reaches_the_cuda_source(tile):
    m, n, k = (int(x) for x in tile.split("x"))
    assert m in (64, 128, 256) and n % 16 == 0 and 16 <= n <= 256 and k % 8 == 0
    src = literals(render(TID, TILE=tile, SCHEDULE="cooperative" if m >= 128 else "pingpong"))
    assert f'constexpr char kTile[] = "{tile}";' in src["cuda_source"]
    assert "{{" not in src["cuda_source"] and "{{" not in src["cpp_source"]


def test_the_knobs_reach_the_cuda_source():
    src = literals(render(TID, CLUSTER="2x1", SCHEDULE="pingpong", EPILOGUE="direct",
                          SWIZZLE=4, TILE="64x128x32"))["cuda_source"]
    for text in ('kCluster[] = "2x1"', 'kSchedule[] = "pingpong"', 'kEpilogue[] = "direct"',
                 "max_swizzle_size = 4;"):
        assert text in src
    default = literals(render(TID))["cuda_source"]
    # The defaults: the rules' choice, the fastest on the H200 sweep (docs/benchmarks.md).
    for text in ('kTile[] = "128x256x32"', 'kCluster[] = "2x1"', 'kSchedule[] = "cooperative"',
                 'kEpilogue[] = "tma"'):
        assert text in default
    # A cooperative tile of M 64 is refused at compile time, with a reason.
    assert "SCHEDULE cooperative splits a tile between two warpgroups" in default


def test_the_views_reach_the_forward_and_the_module_checks_what_the_conditions_say():
    source = render(TID, A_EXPR="A.mT", B_EXPR="B.t()")
    assert "        A, B = A.mT, B.t()\n" in source
    # A 4-D (or more) A times a matrix: one batch over A's leading dims.
    assert "_ext.gemm(A.reshape(-1, A.shape[-2], A.shape[-1]), B)" in source
    cpp = literals(render(TID))["cpp_source"]
    for check in ("A.scalar_type() == torch::kFloat", "A.size(-1) == B.size(-2)",
                  "!tma_epilogue || N % 4 == 0", "std::string(\"tma\") == \"tma\""):
        assert check in cpp
    assert "std::string(\"direct\") == \"tma\"" in literals(render(TID, EPILOGUE="direct"))[
        "cpp_source"]


def test_flags_build_for_sm90a_and_the_build_is_keyed_by_the_render():
    source = render(TID)
    flags = literals(source)["cuda_cflags"]
    assert "-gencode=arch=compute_90a,code=sm_90a" in flags and "-O3" in flags
    name = build_name(source)
    assert name.startswith("kagent_gemm_sm90_tf32x3_")
    assert build_name(render(TID)) == name
    assert build_name(render(TID, TILE="128x128x32")) != name
    assert build_name(render(TID, CLUSTER="1x1")) != name


def test_the_split_puts_rows_on_the_grid_dimension_that_takes_millions():
    # gridDim.y and z stop at 65535: rows (a tall operand's millions) go on x, where 2^31 - 1
    # tiles fit; K on y, bounded by the module with a message.
    src = literals(render(TID))["cuda_source"]
    assert "const dim3 grid((R + 31) / 32, (Kp + 31) / 32, L)" in src
    assert "const int r0 = blockIdx.x * 32, k0 = blockIdx.y * 32;" in src
    assert "if ((Kp + 31) / 32 > 65535)" in src


def test_the_harness_counts_both_kernels_as_the_candidates_own():
    assert own_kernel_names(render(TID)) == ["kagent_tf32x3_split_kernel",
                                             "kagent_tf32x3_wgmma_kernel"]


def test_the_forward_takes_the_models_inputs_without_copies():
    tree = ast.parse(render(TID))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    fwd = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward")
    assert [a.arg for a in fwd.args.args] == ["self", "A", "B"]
    assert "contiguous" not in ast.unparse(fwd)


# --- The split's arithmetic, emulated (the CUDA code runs only on a GPU). ---------------

def tf32_rna(x):
    """x (float32) rounded to TF32 as cvt.rna.tf32.f32 does: to nearest on the 13 low
    mantissa bits, ties away from zero."""
    bits = x.view(torch.int32).to(torch.int64)
    rounded = ((bits & 0xFFFFFFFF) + 0x1000) & 0xFFFFE000
    rounded = torch.where(rounded >= 1 << 31, rounded - (1 << 32), rounded)
    return rounded.to(torch.int32).view(torch.float32)


def split(x):
    hi = tf32_rna(x)
    return hi, tf32_rna(x - hi)


def product_3x(a, b):
    """The kernel's sum over 3K, in float64 (the GPU sums in fp32: the bound below leaves
    room for that): A_hi B_hi + A_hi B_lo + A_lo B_hi."""
    ah, al = (t.double() for t in split(a))
    bh, bl = (t.double() for t in split(b))
    return ah @ bh + ah @ bl + al @ bh


def excess(c, exact):
    atol, rtol = default_tolerance("float32")
    return ((c - exact).abs() / (atol + rtol * exact.abs())).max().item()


def test_the_tf32_rounding_keeps_ten_mantissa_bits_and_rounds_to_nearest():
    x = torch.tensor([1.0, 1.0 + 2 ** -11, 1.0 + 3 * 2 ** -12, -(1.0 + 2 ** -11), 3.0e38],
                     dtype=torch.float32)
    hi = tf32_rna(x)
    assert hi[0] == 1.0
    assert hi[1] == 1.0 + 2 ** -10  # a tie goes away from zero
    assert hi[2] == 1.0 + 2 ** -10
    assert hi[3] == -(1.0 + 2 ** -10)
    assert torch.isfinite(hi[4])
    assert ((hi.view(torch.int32) & 0x1FFF) == 0).all()
    a = torch.randn(1000)
    ah, al = split(a)
    assert ((a.double() - ah.double() - al.double()).abs() <= a.double().abs() * 2 ** -21).all()


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 4099, 3), (64, 4096, 64), (3, 65536, 5),
                                   (33, 129, 31)])
def test_three_tf32_products_pass_the_fp32_tolerance_where_one_does_not(m, k, n):
    g = torch.Generator().manual_seed(m * 1000 + k + n)
    a = torch.randn(m, k, generator=g)
    b = torch.randn(k, n, generator=g)
    exact = a.double() @ b.double()
    three = product_3x(a, b)
    fp32 = (a @ b).double()
    # The left-out A_lo B_lo and the TF32 parts' rounding cost about what fp32's own
    # accumulation costs (which the GPU adds to both alike): inside the tolerance by far.
    # Within half again of fp32's: both sums are fp32, in orders that differ between the
    # emulation and the CPU's BLAS (and between torch releases: 0.049 against 0.045 at
    # 17 x 4099 x 3 with torch 2.15).
    assert excess(three, exact) < 0.25
    assert excess(three, exact) <= max(1.5 * excess(fp32, exact), 0.01)
    one = tf32_rna(a).double() @ tf32_rna(b).double()
    assert excess(one, exact) > 1.0  # one TF32 product fails the gate
