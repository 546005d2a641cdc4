"""The CUDA C++ template gemm_cutlass_tf32x3 as rendered: the module's CUDA source, flags,
build name, knobs and checks against its JSON, read without importing the module (its
import builds the extension with nvcc: compile_cuda_templates.py, CTest's
cuda_templates_compile_sm90a_*of4, compiles it; running it needs a GPU)."""
import ast
import hashlib
import os
import sys

import pytest

from template_render import REPO, load_meta, render

sys.path.insert(0, os.path.join(REPO, "python"))
from kagent_harness.kernels import is_own, own_kernel_names  # noqa: E402

TID = "gemm_cutlass_tf32x3"
META = load_meta(TID)
TILES = META["params"]["TILE"]["allowed"]
SMEM_LIMIT = 227 * 1024  # bytes of shared memory an sm_90 block may have


def literals(source):
    """The module-level string / list literals of a rendered module, by name."""
    out = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def build_name(source):
    """The `name` load_inline gets: the module's own extension_name (the cutlass_include
    partial) of the prefix it passes to load_cutlass_extension, evaluated without
    importing the module (its import builds the extension)."""
    tree = ast.parse(source)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "id", None) == "load_cutlass_extension"]
    assert len(calls) == 1
    prefix = ast.literal_eval(calls[0].args[0])
    namer = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                 and n.name == "extension_name")
    scope = {"hashlib": hashlib}
    exec(compile(ast.Module([namer], []), "<extension_name>", "exec"), scope)  # noqa: S102
    lit = literals(source)
    return scope["extension_name"](prefix, lit["cuda_source"], lit["cpp_source"],
                                   lit["cuda_cflags"])


def tile_numbers(tile):
    block, warp = tile.split("_")
    return [int(v) for v in block.split("x")], [int(v) for v in warp.split("x")]


def test_the_json_declares_a_cuda_fp32_gemm_with_four_knobs():
    assert META["language"] == "cuda"
    assert META["op_class"] == "gemm"
    assert META["dtypes"] == ["float32"]
    assert {n: p["kind"] for n, p in META["params"].items()} == {
        "TILE": "knob", "num_stages": "knob", "SWIZZLE": "knob", "SPLIT_K": "knob",
        "A_EXPR": "shape", "B_EXPR": "shape", "TRIANGLE": "shape", "DIAGONAL": "shape"}
    assert META["params"]["SPLIT_K"]["default"] == 1
    assert any("3xTF32" in c and "fp32" in c for c in META["conditions"])


@pytest.mark.parametrize("tile", TILES)
def test_every_tile_is_a_valid_cutlass_tile_and_reaches_the_cuda_source(tile):
    (tm, tn, tk), (wm, wn, wk) = tile_numbers(tile)
    # CUTLASS's constraints for a tensor-op multistage GEMM: the warp tile divides the
    # threadblock tile, the same K, 4 or 8 warps, K a multiple of the 16x8x8 instruction's.
    assert tm % wm == 0 and tn % wn == 0 and wk == tk
    assert (tm // wm) * (tn // wn) in (4, 8)
    assert wm % 16 == 0 and wn % 8 == 0 and tk % 8 == 0
    # The default stages fit every tile (a static_assert refuses more).
    assert (tm + tn) * tk * 4 * int(META["params"]["num_stages"]["default"]) <= SMEM_LIMIT
    src = literals(render(TID, TILE=tile))["cuda_source"]
    assert f'constexpr char kTile[] = "{tile}";' in src
    assert "{{" not in src


def test_stages_and_swizzle_reach_the_cuda_source():
    src = literals(render(TID, num_stages=5, SWIZZLE=4))["cuda_source"]
    assert "/*Stages=*/5," in src
    assert "GemmIdentityThreadblockSwizzle<4>" in src
    default = literals(render(TID))["cuda_source"]
    assert "/*Stages=*/3," in default and "GemmIdentityThreadblockSwizzle<1>" in default
    assert "cutlass::arch::OpMultiplyAddFastF32" in default
    assert "cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80" in default


def test_split_k_reaches_the_cuda_source_and_a_batch_has_its_own_mode():
    default = literals(render(TID))["cuda_source"]
    assert "constexpr int kSplitK = 1;" in default
    split = literals(render(TID, SPLIT_K=66))["cuda_source"]
    assert "constexpr int kSplitK = 66;" in split
    # The split is CUTLASS's serial one (kGemm with batch_count slices, semaphores in a
    # workspace the call zeroes); a batch goes through kBatched with its strides instead.
    assert "GemmUniversalMode::kGemm" in split and "GemmUniversalMode::kBatched" in split
    assert "batched ? batch : kSplitK" in split
    assert "init_workspace(workspace, stream)" in split
    cpp = literals(render(TID, SPLIT_K=66))["cpp_source"]
    assert "kagent_gemm_tf32x3_workspace(" in cpp


@pytest.mark.parametrize("value", [0, 513, "x"])
def test_split_k_out_of_range_is_refused(value):
    with pytest.raises(Exception):
        render(TID, SPLIT_K=value)


def test_flags_build_for_sm90a_and_the_build_is_keyed_by_the_render():
    source = render(TID)
    flags = literals(source)["cuda_cflags"]
    assert "-gencode=arch=compute_90a,code=sm_90a" in flags and "-O3" in flags
    name = build_name(source)
    assert name.startswith("kagent_gemm_cutlass_tf32x3_")
    assert build_name(render(TID)) == name  # the same render: the same build directory
    assert build_name(render(TID, TILE=TILES[0])) != name
    assert build_name(render(TID, num_stages=4)) != name


def test_the_harness_counts_the_cutlass_kernel_as_the_candidates_own():
    source = render(TID)
    assert own_kernel_names(source) == ["kagent_gemm_tf32x3_kernel",
                                        "kagent_triangle_mask_kernel"]
    # Its mangled name names CUTLASS in its template arguments (GemmUniversal<MmaMultistage<
    # GemmShape<128, 128, 32>, ... as ncu printed it on an H100); the candidate's own
    # kernel all the same.
    mangled = ("_Z25kagent_gemm_tf32x3_kernelN7cutlass4gemm6kernel13GemmUniversalINS0_11"
               "threadblock13MmaMultistageINS0_9GemmShapeILi128ELi128ELi32EEE")
    assert is_own(mangled, own_kernel_names(source))


def test_the_module_refuses_what_the_conditions_exclude():
    cpp = literals(render(TID))["cpp_source"]
    for check in ("A.scalar_type() == torch::kFloat", "(A.dim() == 2 || A.dim() == 3)",
                  "B.dim() == A.dim()", "A.size(0) == B.size(0)",
                  "(a_column ? A.mT() : A).is_contiguous()",
                  "(b_column ? B.mT() : B).is_contiguous()",
                  "a_lead % 4 == 0 && b_lead % 4 == 0 && N % 4 == 0", "L < 65536"):
        assert check in cpp
    conditions = " ".join(META["conditions"])
    for said in ("contiguous in its layout", "multiples of 4", "sm_90a", "transposed",
                 "triu / torch.tril", "not with a triangle", "L < 65536",
                 "a batch ignores it", "no bias (addmm) or diag"):
        assert said in conditions


@pytest.mark.parametrize("a_expr,b_expr", [("A", "B"), ("A.mT", "B"), ("A", "B.mT"),
                                           ("A.mT", "B.mT")])
def test_a_transposed_operand_is_compiled_column_major_and_read_in_place(a_expr, b_expr):
    source = render(TID, A_EXPR=a_expr, B_EXPR=b_expr)
    src = literals(source)["cuda_source"]
    assert f'constexpr char kAExpr[] = "{a_expr}";' in src
    assert f'constexpr char kBExpr[] = "{b_expr}";' in src
    # The layouts follow from the expressions (one source of truth), the leading dims too.
    assert "constexpr bool kAColumn = kAExpr[1] != '\\0';" in src
    assert "const int64_t lda = kAColumn ? M : K, ldb = kBColumn ? K : N, ldc = N;" in src
    assert "float, LayoutA, float, LayoutB," in src
    # The forward takes the reference's storage and makes the views: no copy.
    assert f"        A, B = {a_expr}, {b_expr}\n" in source
    assert build_name(source) != build_name(render(TID)) or (a_expr, b_expr) == ("A", "B")


def test_a_triangle_skips_the_tiles_outside_it_and_masks_the_rest():
    source = render(TID, TRIANGLE="lower", DIAGONAL=-3)
    src = literals(source)["cuda_source"]
    assert 'constexpr char kTriangle[] = "lower";' in src
    assert "constexpr long long kDiagonal = -3;" in src
    assert "if constexpr (kKeep != 0) {" in src and "kagent_triangle_mask_kernel<<<" in src
    # Without a triangle the folded 3-D product keeps its path; with one it does not fold.
    assert '"{{TRIANGLE}}"' not in source and '"lower" == "none"' in source
    assert 'constexpr char kTriangle[] = "none";' in literals(render(TID))["cuda_source"]


def _outside_triangle_program(triangle, diagonal):
    """A host program of the module's own OutsideTriangle and kKeep / kDiagonal lines (cut
    from the rendered CUDA source), printing for each (row0, rows, col0, cols) on stdin
    whether the module would skip that block."""
    src = literals(render(TID, TRIANGLE=triangle, DIAGONAL=diagonal))["cuda_source"]
    start = src.index("constexpr char kTriangle[]")
    consts = src[start:src.index("\n\n", start)]
    start = src.index("__host__ __device__ constexpr bool OutsideTriangle(")
    fn = src[start:src.index("\n}\n", start) + 3]
    return ("#include <cstdio>\n#define __host__\n#define __device__\n" + consts + "\n" + fn +
            "int main() { long long r, n, c, m;\n"
            "  while (std::scanf(\"%lld %lld %lld %lld\", &r, &n, &c, &m) == 4)\n"
            "    std::printf(\"%d\\n\", OutsideTriangle(r, n, c, m) ? 1 : 0);\n}\n")


@pytest.mark.parametrize("triangle,diagonal", [("lower", 0), ("upper", 0), ("lower", -1),
                                               ("upper", 5), ("lower", 130), ("upper", -200)])
def test_the_skipped_tiles_hold_no_kept_element_and_the_mask_is_the_triangle(tmp_path,
                                                                            triangle, diagonal):
    import shutil
    import subprocess
    import numpy as np
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    (tmp_path / "t.cc").write_text(_outside_triangle_program(triangle, diagonal))
    subprocess.run([cxx, "-std=c++17", "-O1", "-o", str(tmp_path / "t"), str(tmp_path / "t.cc")],
                   check=True)
    m, n, tm, tn = 600, 520, 128, 64
    keep = (np.tril if triangle == "lower" else np.triu)(np.ones((m, n), bool), k=diagonal)
    tiles = [(r, tm, c, tn) for r in range(0, m, tm) for c in range(0, n, tn)]
    cells = [(i, 1, j, 1) for i in range(0, m, 7) for j in range(0, n, 3)]
    query = "\n".join(" ".join(map(str, q)) for q in tiles + cells) + "\n"
    out = subprocess.run([str(tmp_path / "t")], input=query, capture_output=True, text=True,
                         check=True).stdout.split()
    skip = [o == "1" for o in out]
    assert len(skip) == len(tiles) + len(cells)
    for (r, _, c, _), skipped in zip(tiles, skip):
        block = keep[r:r + tm, c:c + tn]
        # A skipped tile holds no kept element; a computed one holds at least one (so the
        # skip is as tight as the tile grid allows).
        assert skipped == (not block.any()), (r, c, skipped)
    # The mask kernel zeroes exactly the elements outside the triangle.
    for (i, _, j, _), masked in zip(cells, skip[len(tiles):]):
        assert masked == (not keep[i, j]), (i, j)
    assert any(skip[:len(tiles)]) and not all(skip[:len(tiles)])


def test_the_cutlass_headers_are_found_from_the_installed_wheel():
    # The module's own cutlass_include_dir(), run alone (the rest of the module builds).
    tree = ast.parse(render(TID))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
              and n.name == "cutlass_include_dir")
    scope = {}
    exec("import importlib.util\nimport os\n" + ast.unparse(fn), scope)  # noqa: S102
    import importlib.util
    if importlib.util.find_spec("cutlass_library") is None:
        with pytest.raises(ImportError, match="pip install nvidia-cutlass"):
            scope["cutlass_include_dir"]()
    else:
        include = scope["cutlass_include_dir"]()
        assert os.path.isfile(os.path.join(include, "cutlass", "gemm", "device", "gemm.h"))
        assert os.path.isfile(os.path.join(include, "cute", "tensor.hpp"))
