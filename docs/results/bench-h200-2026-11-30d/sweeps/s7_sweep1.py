"""Session 7, call 1: tile sweeps for the rows still behind torch.compile (27 layernorm one
pass on the 1-D path, 25 softmax one pass, 24 min over a middle dim, 04 small-K GEMM) and
first GPU figures for the new convolution problems (45-50). Two streams, one per GPU
(argv[1] = 0 or 1). Appends to $OUT/sweep<stream>.jsonl."""
import json, os, subprocess, sys
OUT = os.environ["OUT"]
STREAM = int(sys.argv[1])

def g(bm, bn, bk, w, s, prec="ieee", **kw):
    d = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s,
             INPUT_PRECISION=prec); d.update(kw); return d

def rn(br, w):
    return dict(AFFINE="layernorm_module", BLOCK_I=1, BLOCK_R=br, DIM=1, NORM="layer", NUM_DIMS=1,
                num_stages=1, num_warps=w)

def sm(br, w):
    return dict(BLOCK_I=1, BLOCK_R=br, DIM=1, LOG="False", num_stages=1, num_warps=w)

def rd(bi, br, w, s=1):
    return dict(BLOCK_I=bi, BLOCK_R=br, DIM=1, KEEPDIM="False", OP="min", SPLIT_R=1, num_stages=s, num_warps=w)

T2 = dict(BIAS=False, CTOR="in_out_kernel", DILATION=1, DILATION_W=-1, OUTPUT_PADDING=1, OUTPUT_PADDING_W=-1,
          PADDING=1, PADDING_W=-1, STRIDE=2, STRIDE_W=-1)
C3 = dict(BIAS=False, CTOR="recorded", DILATION_D=1, DILATION_H=1, DILATION_W=1, DIMS=3, GROUPS=1,
          IN_CHANNELS=32, OUT_CHANNELS=64, KERNEL_D=3, KERNEL_H=3, KERNEL_W=3, PADDING_D=1, PADDING_H=1,
          PADDING_W=1, STRIDE_D=1, STRIDE_H=1, STRIDE_W=1)
C1 = dict(C3, DIMS=1, IN_CHANNELS=1024, OUT_CHANNELS=1024, KERNEL_D=1, KERNEL_H=1, KERNEL_W=5,
          PADDING_D=0, PADDING_H=0, PADDING_W=2)
streams = [[
  ("27_layernorm_bf16", "row_norm", [rn(4096, 4), rn(16384, 8), rn(16384, 16), rn(8192, 8), rn(8192, 16),
                                      rn(4096, 8), rn(4096, 16)], 80),
  ("25_softmax_fp32", "softmax_online", [sm(8192, 16), sm(32768, 16), sm(16384, 16), sm(16384, 8),
                                          sm(32768, 8), sm(4096, 8)], 80),
  ("24_min_dim_bf16", "reduce_dim", [rd(64, 128, 8), rd(64, 32, 4), rd(128, 32, 8), rd(128, 64, 8),
                                      rd(256, 16, 8), rd(256, 32, 8), rd(32, 128, 4), rd(128, 32, 8, 2),
                                      rd(256, 16, 8, 2), rd(128, 16, 4)], 80),
  ("04_matmul_small_k_bf16", "gemm_tiled", [g(128, 128, 64, 8, 4, A_EXPR="A", B_EXPR="B"),
      g(128, 256, 64, 8, 3, A_EXPR="A", B_EXPR="B"), g(256, 128, 64, 8, 3, A_EXPR="A", B_EXPR="B"),
      g(64, 256, 64, 4, 3, A_EXPR="A", B_EXPR="B"), g(128, 128, 64, 4, 2, A_EXPR="A", B_EXPR="B"),
      g(256, 256, 64, 8, 2, A_EXPR="A", B_EXPR="B"), g(128, 256, 64, 8, 2, A_EXPR="A", B_EXPR="B"),
      g(64, 128, 64, 4, 2, A_EXPR="A", B_EXPR="B")], 80),
  ("45_conv_transpose2d_fp32", "conv_transpose2d", [g(64, 32, 16, 8, 3, **T2), g(128, 64, 32, 4, 3, **T2),
      g(128, 64, 32, 4, 4, "tf32x3", **T2), g(128, 128, 32, 8, 3, "tf32x3", **T2),
      g(256, 128, 32, 8, 3, "tf32x3", **T2)], 100),
], [
  ("46_conv2d_dilated_bf16", "conv2d_implicit_gemm", [
      g(128, 128, 64, 8, 4, BIAS=False, DILATION=2, GROUPS=1, PADDING=2, STRIDE=1),
      g(128, 256, 64, 8, 3, BIAS=False, DILATION=2, GROUPS=1, PADDING=2, STRIDE=1),
      g(256, 128, 64, 8, 3, BIAS=False, DILATION=2, GROUPS=1, PADDING=2, STRIDE=1),
      g(128, 128, 32, 4, 4, BIAS=False, DILATION=2, GROUPS=1, PADDING=2, STRIDE=1)], 100),
  ("47_conv2d_grouped_fp32", "conv2d_implicit_gemm", [
      g(64, 32, 16, 4, 3, BIAS=False, DILATION=1, GROUPS=4, PADDING=1, STRIDE=1),
      g(128, 32, 32, 4, 3, BIAS=False, DILATION=1, GROUPS=4, PADDING=1, STRIDE=1),
      g(128, 32, 32, 4, 4, "tf32x3", BIAS=False, DILATION=1, GROUPS=4, PADDING=1, STRIDE=1),
      g(256, 32, 32, 8, 3, "tf32x3", BIAS=False, DILATION=1, GROUPS=4, PADDING=1, STRIDE=1)], 90),
  ("48_conv2d_strided_asymmetric_fp32", "conv2d_implicit_gemm", [
      g(128, 128, 32, 8, 3, BIAS=True, DILATION=1, GROUPS=1, PADDING=2, STRIDE=2),
      g(128, 128, 32, 8, 3, "tf32x3", BIAS=True, DILATION=1, GROUPS=1, PADDING=2, STRIDE=2),
      g(256, 128, 32, 8, 3, "tf32x3", BIAS=True, DILATION=1, GROUPS=1, PADDING=2, STRIDE=2),
      g(128, 64, 32, 4, 4, "tf32x3", BIAS=True, DILATION=1, GROUPS=1, PADDING=2, STRIDE=2)], 90),
  ("49_conv3d_fp32", "conv3d_implicit_gemm", [g(64, 32, 16, 4, 3, **C3), g(128, 64, 32, 4, 3, **C3),
      g(128, 64, 32, 4, 4, "tf32x3", **C3), g(256, 64, 32, 8, 3, "tf32x3", **C3)], 100),
  ("50_conv1d_bf16", "conv3d_implicit_gemm", [g(128, 128, 64, 8, 4, **C1), g(128, 256, 64, 8, 3, **C1),
      g(256, 128, 64, 8, 3, **C1), g(128, 128, 64, 4, 4, **C1)], 100),
]][STREAM]
for prob, tpl, cfgs, limit in streams:
    try:
        r = subprocess.run(["timeout", str(limit), sys.executable, "tests/gpu/template_sweep.py", prob, tpl,
                            json.dumps(cfgs), os.path.join(OUT, f"sweep{STREAM}.jsonl")],
                           capture_output=True, text=True)
        print(prob, tpl, "rc", r.returncode, r.stderr[-600:] if r.returncode else "", flush=True)
    except Exception as e:
        print(prob, tpl, "failed", e, flush=True)
