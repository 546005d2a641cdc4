"""Compiles the channel-norm, scan, pooling, loss, conv (depthwise-separable included),
persistent-GEMM, triangular gemm_tiled, gemm_diag and attention templates' kernels for sm_90
(Hopper) on a machine without a GPU, at the sizes the brain picks for problems 29-44, 63 and
64 (the persistent GEMM at its
defaults), and prints one JSON line per kernel: name, registers, stack bytes (spills),
shared memory, or the error.

Run without TRITON_INTERPRET (test_compile_sm90.py does it in a subprocess); needs the
triton wheel's NVIDIA backend (its ptxas and cuobjdump), not a GPU."""
import json
import os
import re
import subprocess
import sys
import tempfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

from template_render import render  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
CUOBJDUMP = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")


def _load(tid, **params):
    src = render(tid, **params)
    path = os.path.join(tempfile.gettempdir(), f"kagent_sm90_{os.getpid()}_{tid}.py")
    with open(path, "w") as f:
        f.write(src)
    mod = types.ModuleType(tid)
    mod.__file__ = path
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def _usage(kernel):
    with tempfile.NamedTemporaryFile("wb", suffix=".cubin", delete=False) as f:
        f.write(kernel.asm["cubin"])
    out = subprocess.run([CUOBJDUMP, "--dump-resource-usage", f.name],
                         capture_output=True, text=True).stdout
    os.unlink(f.name)
    m = re.search(r"REG:(\d+).*?STACK:(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def _compile(name, kernel, sig, consts, warps, stages, aligned=(), clamps=False):
    """aligned: args specialized as multiples of 16 (pointers: 16-byte aligned), as the
    launcher does for such values at run time; it enables vectorized loads. clamps: also
    count the fp32 min/max instructions in the PTX, NaN-propagating (min/max.NaN.f32) and
    not (min/max.f32, which return the other operand for a NaN)."""
    full = dict(sig)
    full.update({k: "constexpr" for k in consts})
    attrs = {(kernel.arg_names.index(a),): [["tt.divisibility", 16]] for a in aligned}
    try:
        k = triton.compile(ASTSource(kernel, full, constexprs=consts, attrs=attrs), target=TARGET,
                           options=dict(num_warps=warps, num_stages=stages))
        regs, stack = _usage(k)
        row = dict(name=name, regs=regs, stack=stack, shared=k.metadata.shared)
        if clamps:
            ptx = k.asm["ptx"]
            row["nan_clamps"] = len(re.findall(r"\b(?:max|min)\.NaN\.f32", ptx))
            row["plain_clamps"] = len(re.findall(r"\b(?:max|min)\.f32", ptx))
    except Exception as e:  # reported, the test fails on it
        row = dict(name=name, error=f"{type(e).__name__}: {str(e)[:2000]}")
    print(json.dumps(row), flush=True)


def _ints(names, ty="i32"):
    return {n: ty for n in names}


def main():
    fp32, bf16 = "*fp32", "*bf16"
    scan = _load("scan_rows")
    ssig = dict(x_ptr=fp32, m_ptr=fp32, tot_ptr=fp32, y_ptr=fp32,
                **_ints(["R", "INNER", "num_inner_blocks", "R_PER_SPLIT", "N_COLS"]))
    for op in ("cumsum", "cumprod"):  # problems/43, 44: BLOCK_R 2048, 4 warps
        _compile(f"scan_rows {op} 2048x1", scan.scan_kernel, ssig,
                 dict(BLOCK_R=2048, BLOCK_I=1, OP=op, REVERSE=False, EXCLUSIVE=False, MASKED=False), 4, 1)
    tsig = {k: v for k, v in ssig.items() if k != "y_ptr"}
    _compile("scan_rows totals 2048x1", scan.scan_totals_kernel, tsig,
             dict(BLOCK_R=2048, BLOCK_I=1, OP="cumsum", REVERSE=False, MASKED=False), 4, 1)
    _compile("scan_rows cumsum 32x64 reverse exclusive masked", scan.scan_kernel,
             dict(ssig, m_ptr="*i1"),
             dict(BLOCK_R=32, BLOCK_I=64, OP="cumsum", REVERSE=True, EXCLUSIVE=True, MASKED=True), 4, 1)

    pool = _load("pool_nd")
    psig = dict(x_ptr=fp32, y_ptr=fp32, **_ints(["C", "D", "H", "W", "OD", "OH", "OW", "stride_n",
                                                 "stride_c", "stride_d", "stride_h", "stride_w",
                                                 "tiles_h", "tiles_w"]),
                divisor="fp32")
    unit_d = dict(KD=1, SD=1, PD=0, DD=1)
    taps = dict(PACKED=False, SWP=1)
    for name, c, warps in [  # problems/31, 33, 34, the per-tap loads (LOAD taps)
            ("pool_nd max 1-D 1x1024", dict(KH=1, KW=3, SH=1, SW=2, PH=0, PW=1, BLOCK_H=1, BLOCK_W=1024, OP="max"), 4),
            ("pool_nd max 2-D 8x128", dict(KH=3, KW=3, SH=2, SW=2, PH=1, PW=1, BLOCK_H=8, BLOCK_W=128, OP="max"), 4),
            ("pool_nd avg 2-D 8x128 bf16", dict(KH=3, KW=3, SH=1, SW=1, PH=1, PW=1, BLOCK_H=8, BLOCK_W=128, OP="avg"), 4)]:
        sig = dict(psig, x_ptr=bf16, y_ptr=bf16) if "bf16" in name else psig
        _compile(name, pool.pool_kernel, sig,
                 dict(c, **unit_d, **taps, DH=1, DW=1, COUNT_PAD=True, USE_DIVISOR=False), warps, 3)
    _compile("pool_nd max 3-D 4x16", pool.pool_kernel, psig,
             dict(KD=3, KH=3, KW=3, SD=2, SH=2, SW=2, PD=1, PH=1, PW=1, DD=1, DH=1, DW=1,
                  BLOCK_H=4, BLOCK_W=16, OP="max", COUNT_PAD=True, USE_DIVISOR=False, **taps), 2, 3)
    # The packed loads (LOAD auto) at problems/31-34's shapes as the launcher specializes
    # them: W contiguous (stride_w == 1 is a constexpr), sizes and pointers multiples of 16
    # (1-D: D = H = OD = OH = tiles_h = 1).
    aligned = ("x_ptr", "y_ptr", "C", "D", "H", "W", "OD", "OH", "OW", "stride_n", "stride_c",
               "stride_d", "stride_h", "tiles_h", "tiles_w")
    one_d = dict(D=1, H=1, OD=1, OH=1, tiles_h=1, KH=1, SH=1, PH=0, BLOCK_H=1, BLOCK_W=1024)
    two_d = dict(D=1, OD=1, KH=3, KW=3, PH=1, PW=1, BLOCK_H=8, BLOCK_W=128)
    for name, c in [
            ("pool_nd packed max 1-D 1x1024", dict(one_d, KW=3, SW=2, PW=1, OP="max")),
            ("pool_nd packed avg 1-D 1x1024 bf16", dict(one_d, KW=4, SW=2, PW=1, OP="avg")),
            ("pool_nd packed max 2-D 8x128", dict(two_d, SH=2, SW=2, OP="max")),
            ("pool_nd packed avg 2-D 8x128 bf16", dict(two_d, SH=1, SW=1, OP="avg")),
            ("pool_nd packed max 2-D 8x128 stride 3", dict(two_d, SH=3, SW=3, PH=0, PW=0, OP="max"))]:
        sig = dict(psig, x_ptr=bf16, y_ptr=bf16) if "bf16" in name else psig
        _compile(name, pool.pool_kernel, sig,
                 dict(c, **unit_d, DH=1, DW=1, COUNT_PAD=True, USE_DIVISOR=False, stride_w=1,
                      PACKED=True, SWP=triton.next_power_of_2(c["SW"])), 4, 3,
                 aligned=[a for a in aligned if a not in c])
    _compile("pool_nd packed avg 3-D 4x16 exclude pad", pool.pool_kernel, psig,
             dict(KD=3, KH=3, KW=3, SD=2, SH=2, SW=2, PD=1, PH=1, PW=1, DD=1, DH=1, DW=1,
                  BLOCK_H=4, BLOCK_W=16, OP="avg", COUNT_PAD=False, USE_DIVISOR=False,
                  stride_w=1, PACKED=True, SWP=2), 2, 3)

    loss = _load("loss_reduce")
    lsig = dict(p_ptr=fp32, t_ptr=fp32, part_ptr=fp32, n="i64", per_program="i64", beta="fp32",
                p_period="i64", t_period="i64")
    for op in ("mse", "smooth_l1", "huber", "hinge", "kl_div"):  # problems/37, 39-41
        _compile(f"loss_reduce {op} 4096", loss.loss_partial_kernel, lsig,
                 dict(BLOCK=4096, LOSS=op, LOG_INPUT=True, P_MODE=0, T_MODE=0), 8, 2)
    # KernelBench's hinge loss: (N,) targets against (M, N) predictions, read in place
    # (N >= BLOCK: one wrap per block; a shorter period: 32-bit modulo).
    _compile("loss_reduce hinge 4096 periodic targets", loss.loss_partial_kernel, lsig,
             dict(BLOCK=4096, LOSS="hinge", LOG_INPUT=False, P_MODE=0, T_MODE=1), 8, 2)
    _compile("loss_reduce hinge 4096 short period", loss.loss_partial_kernel,
             dict(lsig, t_period="i32"),
             dict(BLOCK=4096, LOSS="hinge", LOG_INPUT=False, P_MODE=0, T_MODE=2), 8, 2)
    _compile("loss_reduce final", loss.loss_final_kernel,
             dict(part_ptr=fp32, out_ptr=bf16, num_parts="i32", scale="fp32"), dict(BLOCK_P=1024), 4, 3)

    rows = _load("loss_rows")
    rsig = dict(a_ptr=fp32, b_ptr=fp32, c_ptr=fp32, t_ptr="*i64", loss_ptr=fp32, w_ptr=fp32,
                C="i32", stride_a="i32", stride_b="i32", stride_c="i32", eps="fp32",
                margin="fp32", ignore_index="i32")
    for op in ("cross_entropy", "cosine_similarity", "triplet_margin"):  # problems/38, 42
        _compile(f"loss_rows {op} 4096", rows.row_loss_kernel, rsig, dict(BLOCK=4096, LOSS=op), 8, 2)
    _compile("loss_rows final", rows.row_loss_final_kernel,
             dict(loss_ptr=fp32, w_ptr=fp32, out_ptr=fp32, B="i32"), dict(BLOCK_F=1024), 4, 3)

    conv = _load("conv2d_implicit_gemm")
    csig = dict(x_ptr=fp32, w_ptr=fp32, b_ptr=fp32, y_ptr=fp32,
                **_ints(["CG", "H", "W", "CO", "COG", "OH", "OW", "M", "sxn", "sxc", "sxh", "sxw",
                         "swo", "swc", "swh", "sww", "SH", "SW", "PH", "PW", "DH", "DW", "KH", "KW"]))
    base = dict(HAS_BIAS=False, GROUP_M=8, INPUT_PRECISION="ieee", UPCAST=False, INT64=False)
    _compile("conv2d_implicit_gemm fp32 64x64x32", conv.conv2d_kernel, csig,  # problems/35
             dict(base, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32), 8, 3)
    _compile("conv2d_implicit_gemm bf16 128x128x64", conv.conv2d_kernel,
             dict(csig, x_ptr=bf16, w_ptr=bf16, b_ptr=bf16, y_ptr=bf16),
             dict(base, HAS_BIAS=True, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64), 8, 4)
    _compile("conv2d_implicit_gemm fp32 64x64x32 int64", conv.conv2d_kernel, csig,
             dict(base, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, INT64=True), 8, 3)

    dw = _load("conv2d_depthwise")
    dsig = dict(x_ptr=fp32, w_ptr=fp32, b_ptr=fp32, y_ptr=fp32,
                **_ints(["C", "H", "W", "CO", "OH", "OW", "sxn", "sxc", "sxh", "sxw", "tiles_h", "tiles_w"]))
    _compile("conv2d_depthwise 8x128", dw.dwconv_kernel, dsig,  # problems/36
             dict(SH=1, SW=1, PH=1, PW=1, DH=1, DW=1, KH=3, KW=3, MULT=1, HAS_BIAS=True,
                  BLOCK_H=8, BLOCK_W=128), 4, 3)

    sep = _load("conv2d_depthwise_separable")
    ssig = dict(x_ptr=fp32, wd_ptr=fp32, bd_ptr=fp32, wp_ptr=fp32, bp_ptr=fp32, y_ptr=fp32,
                **_ints(["CM", "H", "W", "CO", "OH", "OW", "sxn", "sxc", "sxh", "sxw", "swo",
                         "swc", "tiles_p", "tiles_co"]))
    sconst = dict(SH=1, SW=1, PH=1, PW=1, DH=1, DW=1, KH=3, KW=3, MULT=1, DW_BIAS=False,
                  PW_BIAS=False, INPUT_PRECISION="ieee", UPCAST=False)
    _compile("conv2d_depthwise_separable fp32 64x32x128", sep.dwsep_kernel, ssig,  # problems/70
             dict(sconst, BLOCK_P=64, BLOCK_C=32, BLOCK_CO=128), 8, 2)
    _compile("conv2d_depthwise_separable bf16 64x32x128 7x7", sep.dwsep_kernel,
             {k: (bf16 if v == fp32 else v) for k, v in ssig.items()},
             dict(sconst, KH=7, KW=7, PH=3, PW=3, DW_BIAS=True, PW_BIAS=True, BLOCK_P=64,
                  BLOCK_C=32, BLOCK_CO=128), 8, 2)
    _compile("conv2d_depthwise_separable fp32 64x32x32", sep.dwsep_kernel, ssig,
             dict(sconst, BLOCK_P=64, BLOCK_C=32, BLOCK_CO=32), 4, 2)

    cn = _load("channel_norm")
    nsig = dict(x_ptr=fp32, y_ptr=fp32, w_ptr=fp32, b_ptr=fp32, rm_ptr=fp32, rv_ptr=fp32,
                scale_ptr=fp32, shift_ptr=fp32, **_ints(["P", "C", "HW", "num_hw_blocks"]),
                eps="fp32")
    for name, sig, c, warps in [  # problems/29 and 30: 1 x 4096, 8 warps
            ("channel_norm batch 1x4096", nsig, dict(NORM="batch", BLOCK_P=1, BLOCK=4096), 8),
            ("channel_norm batch 1x4096 bf16", dict(nsig, x_ptr=bf16, y_ptr=bf16),
             dict(NORM="batch", BLOCK_P=1, BLOCK=4096), 8),
            ("channel_norm batch 2048x1 (N, C)", nsig, dict(NORM="batch", BLOCK_P=2048, BLOCK=1), 8),
            ("channel_norm batch 32x64", nsig, dict(NORM="batch", BLOCK_P=32, BLOCK=64), 8),
            ("channel_norm group 1x4096", nsig, dict(NORM="group", BLOCK_P=1, BLOCK=4096), 8),
            ("channel_norm channel 1x4096", nsig, dict(NORM="channel", BLOCK_P=1, BLOCK=4096), 8)]:
        _compile(name, cn.channel_norm_kernel, sig, dict(c, HAS_W=True, HAS_B=True), warps, 1)
    ssig = dict(x_ptr=fp32, part_ptr=fp32, **_ints(["L", "CHUNK", "NUM_PARTS", "SPLIT_R"]))
    _compile("channel_norm stats 2048", cn.channel_norm_stats_kernel, ssig, dict(BLOCK_R=2048), 8, 1)
    _compile("channel_norm stats 2048 bf16", cn.channel_norm_stats_kernel, dict(ssig, x_ptr=bf16),
             dict(BLOCK_R=2048), 8, 1)
    _compile("channel_norm merge 512x4", cn.channel_norm_merge_kernel,
             dict(part_ptr=fp32, w_ptr=fp32, b_ptr=fp32, scale_ptr=fp32, shift_ptr=fp32,
                  **_ints(["P", "C", "CPG", "G", "NUM_PARTS", "SPLIT_R"]), eps="fp32"),
             dict(HAS_W=True, HAS_B=True, BLOCK_M=512, BLOCK_S=4), 4, 3)
    bsig = dict(x_ptr=fp32, part_ptr=fp32, **_ints(["C", "HW", "M", "CHUNK", "NUM_PARTS", "SPLIT_R"]))
    for name, c in [("1x2048", dict(BLOCK_C=1, BLOCK_R=2048)),  # BatchNorm2d training
                    ("32x64 (N, C)", dict(BLOCK_C=32, BLOCK_R=64))]:  # BatchNorm1d on (N, C)
        _compile(f"channel_norm batch stats {name}", cn.batch_stats_kernel, bsig, c, 8, 1)
    _compile("channel_norm batch merge 512x4", cn.batch_merge_kernel,
             dict(part_ptr=fp32, w_ptr=fp32, b_ptr=fp32, rm_ptr=fp32, rv_ptr=fp32,
                  scale_ptr=fp32, shift_ptr=fp32, **_ints(["C", "NUM_PARTS", "SPLIT_R"]),
                  eps="fp32", factor="fp32"),
             dict(HAS_W=True, HAS_B=True, UPDATE=True, BLOCK_M=512, BLOCK_S=4), 4, 1)

    gp = _load("gemm_persistent_tma")  # the template's defaults; 8192^3 as the launcher sees it
    gsig = dict(a_ptr=bf16, b_ptr=bf16, c_ptr=bf16,
                **_ints(["M", "N", "K", "NUM_PROGS", "stride_am", "stride_ak", "stride_bk",
                         "stride_bn", "stride_cm", "stride_cn"]))
    galigned = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    gbase = dict(GROUP_M=8, UPCAST=False, A_COL=False, B_COL=False, INPUT_PRECISION="ieee")
    unit = dict(stride_ak=1, stride_bn=1, stride_cn=1)
    _compile("gemm_persistent_tma bf16 128x256x64 tma", gp.gemm_persistent_kernel, gsig,
             dict(gbase, **unit, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, USE_TMA=True), 8, 3,
             aligned=galigned)
    _compile("gemm_persistent_tma bf16 128x256x64 B.mT tma", gp.gemm_persistent_kernel, gsig,
             dict(gbase, stride_ak=1, stride_bk=1, stride_cn=1, B_COL=True, BLOCK_M=128,
                  BLOCK_N=256, BLOCK_K=64, USE_TMA=True), 8, 3,
             aligned=[a for a in galigned if a != "stride_bk"] + ["stride_bn"])
    _compile("gemm_persistent_tma bf16 128x256x64 pointers", gp.gemm_persistent_kernel, gsig,
             dict(gbase, **unit, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, USE_TMA=False), 8, 3,
             aligned=galigned)
    # fp32 at the brain's 64 x 64 x 32 / 8 warps (ieee: an FMA dot; 128 x 128 x 32 spills).
    _compile("gemm_persistent_tma fp32 64x64x32 tma", gp.gemm_persistent_kernel,
             dict(gsig, a_ptr=fp32, b_ptr=fp32, c_ptr=fp32),
             dict(gbase, **unit, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, USE_TMA=True), 8, 3,
             aligned=galigned)

    ct = _load("conv_transpose2d")  # not measured on a GPU: the conv2d_implicit_gemm tiles
    tsig = dict(x_ptr=fp32, w_ptr=fp32, b_ptr=fp32, y_ptr=fp32,
                **_ints(["C", "H", "W", "CO", "OH", "OW", "OHP", "OWP", "MP", "sxn", "sxc", "sxh",
                         "sxw", "swi", "swo", "swh", "sww", "SH", "SW", "PH", "PW", "DH", "DW",
                         "KH", "KW", "GH", "GW", "INV_H", "INV_W"]))
    tbase = dict(HAS_BIAS=False, GROUP_M=8, INPUT_PRECISION="ieee", UPCAST=False, INT64=False)
    for warps in (4, 8):
        _compile(f"conv_transpose2d fp32 64x64x32 {warps} warps", ct.conv_transpose2d_kernel, tsig,
                 dict(tbase, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32), warps, 3)
    _compile("conv_transpose2d bf16 128x128x64", ct.conv_transpose2d_kernel,
             dict(tsig, x_ptr=bf16, w_ptr=bf16, b_ptr=bf16, y_ptr=bf16),
             dict(tbase, HAS_BIAS=True, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64), 8, 4)
    _compile("conv_transpose2d fp32 64x64x32 int64", ct.conv_transpose2d_kernel, tsig,
             dict(tbase, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, INT64=True), 8, 3)

    # conv_transpose_nd (not measured on a GPU: ConvTiles' tiles), 3-D and 2-D (unit depth,
    # as the launcher specializes it). bf16 128 x 128 x 64 spills 72 bytes (2-D) and more
    # in 3-D, so the check stays at the fp32 tiles (its .json records the spills).
    cn = _load("conv_transpose_nd")
    nnames = ["CG", "D", "H", "W", "CO", "COG", "OD", "OH", "OW", "ODP", "OHP", "OWP", "MP",
              "sxn", "sxc", "sxd", "sxh", "sxw", "swc", "swd", "swh", "sww", "SD", "SH", "SW",
              "PD", "PH", "PW", "DD", "DH", "DW", "KD", "KH", "KW", "GD", "GH", "GW", "INV_D",
              "INV_H", "INV_W"]
    unit_d = dict(D=1, SD=1, DD=1, KD=1, GD=1, ODP=1)
    for dims, units in ((3, {}), (2, unit_d)):
        nsig = dict(x_ptr=fp32, w_ptr=fp32, b_ptr=fp32, y_ptr=fp32,
                    **_ints([n for n in nnames if n not in units]))
        nbase = dict(tbase, **units, DIMS=dims)
        for warps in (4, 8):
            _compile(f"conv_transpose_nd {dims}-D fp32 64x64x32 {warps} warps",
                     cn.conv_transpose_nd_kernel, nsig,
                     dict(nbase, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32), warps, 3)
        _compile(f"conv_transpose_nd {dims}-D fp32 64x64x32 int64", cn.conv_transpose_nd_kernel,
                 nsig, dict(nbase, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, INT64=True), 8, 3)

    # Triangular products (not measured on a GPU): the skip and the epilogue mask must not
    # cost spills at the brain's tiles.
    gt = _load("gemm_tiled")
    gtsig = dict(a_ptr=fp32, b_ptr=fp32, c_ptr=fp32,
                 **_ints(["M", "N", "K", "stride_ab", "stride_am", "stride_ak", "stride_bb",
                          "stride_bk", "stride_bn", "stride_cb", "stride_cm", "stride_cn"]))
    gtbase = dict(GROUP_M=8, INPUT_PRECISION="ieee", UPCAST=False, DIAGONAL=0)
    _compile("gemm_tiled fp32 64x64x32 triu", gt.gemm_kernel, gtsig,
             dict(gtbase, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, TRIANGLE="upper"), 4, 3)
    # (At 128 x 128 x 64 / 8 warps this unaligned compile spills with or without the
    # triangle, 8 bytes more with it: the 16-bit tiles were measured on the GPU instead.)
    _compile("gemm_tiled bf16 64x64x32 tril", gt.gemm_kernel,
             dict(gtsig, a_ptr=bf16, b_ptr=bf16, c_ptr=bf16),
             dict(gtbase, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, TRIANGLE="lower"), 4, 3)
    gd = _load("gemm_diag")  # diag(d) @ B, not measured on a GPU
    _compile("gemm_diag fp32 32x256", gd.diag_scale_kernel,
             dict(d_ptr=fp32, b_ptr=fp32, c_ptr=fp32,
                  **_ints(["R", "C", "stride_d", "stride_br", "stride_bc"])),
             dict(BLOCK_R=32, BLOCK_C=256, LEFT=True), 8, 1)
    att = _load("attention_online")  # problems/63 and 64 at the brain's tiles
    asig = dict(q_ptr=fp32, k_ptr=fp32, v_ptr=fp32, o_ptr=fp32, qk_scale="fp32",
                **_ints(["LQ", "LK", "D", "DV", "num_m", "sqb", "sqm", "sqd", "skb", "skn", "skd",
                         "svb", "svn", "svd", "sob", "som", "sod"]))
    abase = dict(INPUT_PRECISION="ieee", UPCAST=False, ONE_D=True)
    _compile("attention_online fp32 d64 64x32", att.attention_kernel, asig,
             dict(abase, BLOCK_M=64, BLOCK_N=32, BLOCK_D=64, BLOCK_DV=64, CAUSAL=False), 8, 3)
    _compile("attention_online bf16 d128 64x64 causal", att.attention_kernel,
             dict(asig, q_ptr=bf16, k_ptr=bf16, v_ptr=bf16, o_ptr=bf16),
             dict(abase, BLOCK_M=64, BLOCK_N=64, BLOCK_D=128, BLOCK_DV=128, CAUSAL=True), 8, 3)
    # KernelBench's SDPA, head dim 1024: fp32 at the brain's tiles for it (32 x 32, value
    # columns 256, 8 warps, 2 stages; 3 stages spill 16 bytes), Q @ K^T in 64-wide
    # chunks, each chunk's dot from zero then added; bf16 with 64 x 64 tiles, the chunks
    # accumulated in the dot.
    _compile("attention_online fp32 d1024 chunks of 64", att.attention_kernel, asig,
             dict(abase, ONE_D=False, BLOCK_M=32, BLOCK_N=32, BLOCK_D=64, BLOCK_DV=256,
                  CAUSAL=False), 8, 2)
    _compile("attention_online bf16 d1024 chunks of 64", att.attention_kernel,
             dict(asig, q_ptr=bf16, k_ptr=bf16, v_ptr=bf16, o_ptr=bf16),
             dict(abase, ONE_D=False, BLOCK_M=64, BLOCK_N=64, BLOCK_D=64, BLOCK_DV=256,
                  CAUSAL=False), 8, 2)

    # The elementwise clamps propagate NaN like torch (relu(nan) = nan).
    ew = _load("elementwise", OP="relu")
    esig = dict(x_ptr=fp32, y_ptr=fp32, n="i32", alpha="fp32", beta="fp32", scale="fp32",
                input_scale="fp32")
    for op in ("relu", "relu6", "hardtanh", "hardsigmoid", "hardswish"):
        _compile(f"elementwise {op} 4096", ew.elementwise_kernel, esig, dict(BLOCK=4096, OP=op), 8, 1,
                 clamps=True)


if __name__ == "__main__":
    main()
