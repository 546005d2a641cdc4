"""The CUDA C++ template gemm_sm90_bf16 as rendered: its source, flags, knobs, shape params and
module checks against its JSON, read without importing the module (the import builds the
extension with nvcc; compile_cuda_templates.py, CTest's cuda_templates_compile_sm90a_*of4,
compiles it for sm_90a; tests/gpu/gemm_sweep.py --dtype bfloat16 runs it)."""
import ast
import os
import sys

import pytest

from template_render import REPO, load_meta, render
from test_gemm_cutlass import build_name, literals

sys.path.insert(0, os.path.join(REPO, "python"))
from kagent_harness.kernels import own_kernel_names  # noqa: E402

TID = "gemm_sm90_bf16"
META = load_meta(TID)
PARAMS = META["params"]


def test_the_json_declares_a_cuda_16bit_gemm_with_its_knobs_and_shape_params():
    assert META["language"] == "cuda" and META["op_class"] == "gemm"
    assert META["dtypes"] == ["bfloat16", "float16"]
    assert {n: p["kind"] for n, p in PARAMS.items()} == {
        "TILE": "knob", "CLUSTER": "knob", "SCHEDULE": "knob", "EPILOGUE": "knob",
        "SWIZZLE": "knob", "DTYPE": "shape", "A_EXPR": "shape", "B_EXPR": "shape"}
    assert PARAMS["DTYPE"]["allowed"] == ["bfloat16", "float16"]
    conditions = " ".join(META["conditions"])
    for said in ("sm_90a", "16 bytes", "fp32 accumulation", "padded rows"):
        assert said in conditions


@pytest.mark.parametrize("tile", PARAMS["TILE"]["allowed"])
def test_every_tile_is_a_16bit_wgmma_tile_and_reaches_the_cuda_source(tile):
    m, n, k = (int(x) for x in tile.split("x"))
    assert m in (64, 128, 256) and n % 16 == 0 and 16 <= n <= 256 and k % 16 == 0
    src = literals(render(TID, TILE=tile, SCHEDULE="cooperative" if m >= 128 else "pingpong"))
    assert f'constexpr char kTile[] = "{tile}";' in src["cuda_source"]
    assert "{{" not in src["cuda_source"] and "{{" not in src["cpp_source"]


def test_the_knobs_and_the_dtype_reach_the_cuda_source():
    src = literals(render(TID, CLUSTER="1x2", SCHEDULE="pingpong", EPILOGUE="direct",
                          SWIZZLE=4, TILE="64x256x64", DTYPE="float16"))
    for text in ('kCluster[] = "1x2"', 'kSchedule[] = "pingpong"', 'kEpilogue[] = "direct"',
                 'kDtype[] = "float16"', "max_swizzle_size = 4;"):
        assert text in src["cuda_source"]
    assert 'std::string("float16") == "bfloat16"' in src["cpp_source"]
    default = literals(render(TID))["cuda_source"]
    for text in ('kTile[] = "128x256x64"', 'kCluster[] = "2x1"', 'kSchedule[] = "cooperative"',
                 'kEpilogue[] = "tma"', 'kDtype[] = "bfloat16"'):
        assert text in default
    # The knob parser is the shared partial, inside the template's namespace.
    assert "constexpr int KnobNumber(const char* s, int i)" in default
    assert "SCHEDULE cooperative splits a tile between two warpgroups" in default


@pytest.mark.parametrize("a_expr,b_expr,a_k_major,b_n_major", [
    ("A", "B", True, True), ("A.mT", "B", False, True), ("A", "B.t()", True, False),
    ("A.t()", "B.mT", False, False)])
def test_the_layouts_are_compiled_in_from_the_views(a_expr, b_expr, a_k_major, b_n_major):
    source = render(TID, A_EXPR=a_expr, B_EXPR=b_expr)
    assert f"        A, B = {a_expr}, {b_expr}\n" in source
    src = literals(source)
    cuda, cpp = src["cuda_source"], src["cpp_source"]
    # The CUDA side decides the majors from the expression's text: "A" alone is K-major.
    assert f'constexpr char kAExpr[] = "{a_expr}";' in cuda
    assert f'constexpr bool kAKMajor = kAExpr[1] == \'\\0\';' in cuda
    assert (len(a_expr) == 1) == a_k_major and (len(b_expr) == 1) == b_n_major
    # And the host stages each operand into the same layout.
    assert f'const bool a_k_major = std::string("{a_expr}") == "A";' in cpp
    assert f'const bool b_n_major = std::string("{b_expr}") == "B";' in cpp
    assert "const int a_unit = a_k_major ? -1 : -2, b_unit = b_n_major ? -1 : -2;" in cpp
    assert "ZeroPadded(a, Mp, Kp, a_unit) : Staged(a, a_unit);" in cpp
    assert "ZeroPadded(B, Kp, Np, b_unit) : Staged(B, b_unit);" in cpp


def test_the_module_reads_in_place_only_what_tma_can_read_and_pads_the_rest():
    cpp = literals(render(TID))["cpp_source"]
    # Readable: the unit stride, 16-byte row and batch steps, a 16-byte address.
    for check in ("t.stride(unit) != 1 && t.size(unit) > 1", "t.stride(other) % 8 != 0",
                  "t.stride(0) % 8 != 0", "% 16 == 0"):
        assert check in cpp
    # Staged: rows padded to 8 elements.
    assert "const int64_t ld = (inner + 7) / 8 * 8;" in cpp
    # Extents CUTLASS cannot take (not multiples of 8) on zero-padded copies: K wherever
    # an operand is K-contiguous, M for an M-contiguous A, N for an N-contiguous B or the
    # TMA epilogue; D's corner copied out.
    for check in ("const int64_t Kp = (a_k_major || !b_n_major) ? Up8(K) : K;",
                  "const int64_t Mp = a_k_major ? M : Up8(M);",
                  "const int64_t Np = (b_n_major || tma_epilogue) ? Up8(N) : N;",
                  "auto padded = torch::zeros(sizes, t.options());",
                  "C.view({L, M, N}).copy_(D.narrow(-2, 0, M).narrow(-1, 0, N))"):
        assert check in cpp
    # A 3-D A times a 2-D B: one GEMM of L x M rows.
    assert "a = A.reshape({L * M, K});" in cpp


def test_flags_build_for_sm90a_and_the_build_is_keyed_by_the_render():
    source = render(TID)
    flags = literals(source)["cuda_cflags"]
    assert "-gencode=arch=compute_90a,code=sm_90a" in flags and "-O3" in flags
    name = build_name(source)
    assert name.startswith("kagent_gemm_sm90_bf16_")
    assert build_name(render(TID)) == name
    for other in ({"TILE": "128x128x64"}, {"DTYPE": "float16"}, {"A_EXPR": "A.mT"},
                  {"EPILOGUE": "direct"}):
        assert build_name(render(TID, **other)) != name


def test_the_harness_counts_the_wgmma_kernel_as_the_candidates_own():
    assert own_kernel_names(render(TID)) == ["kagent_sm90_16bit_wgmma_kernel"]


def test_the_forward_takes_the_models_inputs_without_copies():
    tree = ast.parse(render(TID, A_EXPR="A.mT"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    fwd = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "forward")
    assert [a.arg for a in fwd.args.args] == ["self", "A", "B"]
    assert "contiguous" not in ast.unparse(fwd)
