"""Session 6, call 1: tf32x3 (3xTF32, about fp32 accuracy) vs ieee for the fp32 GEMMs and
the conv, and gemm_persistent_tma for the bf16 GEMMs. Writes $OUT/sweep.jsonl."""
import json, os, subprocess, sys
OUT = os.environ["OUT"]
def cfg(**kw): return kw
def g(bm, bn, bk, w, s, prec, **kw):
    d = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s,
             INPUT_PRECISION=prec); d.update(kw); return d
jobs = [
  ("01_matmul_square_fp32", "gemm_tiled", [g(128,128,32,8,3,"ieee"), g(128,128,32,8,3,"tf32x3"),
     g(128,256,32,8,3,"tf32x3"), g(256,128,32,8,3,"tf32x3"), g(128,128,64,8,3,"tf32x3"),
     g(128,128,32,4,4,"tf32x3"), g(64,128,32,4,4,"tf32x3"), g(128,128,32,8,3,"tf32")], 110),
  ("01_matmul_square_fp32", "gemm_persistent_tma", [g(128,128,32,8,3,"tf32x3"), g(128,256,32,8,3,"tf32x3")], 45),
  ("05_matmul_large_k_fp32", "gemm_split_k", [g(64,64,64,4,3,"ieee",SPLIT_K=32),
     g(128,128,32,8,3,"tf32x3",SPLIT_K=32), g(128,128,32,8,3,"tf32x3",SPLIT_K=64),
     g(64,64,64,4,3,"tf32x3",SPLIT_K=8), g(64,64,64,4,3,"tf32x3",SPLIT_K=16),
     g(128,128,64,8,3,"tf32x3",SPLIT_K=32), g(64,128,32,4,4,"tf32x3",SPLIT_K=16)], 95),
  ("06_matmul_batched_fp32", "gemm_tiled", [g(128,128,32,8,3,"ieee"), g(128,128,32,8,3,"tf32x3"),
     g(64,128,32,4,4,"tf32x3"), g(128,64,32,4,4,"tf32x3"), g(128,128,64,8,3,"tf32x3")], 55),
  ("03_matmul_tall_skinny_fp32", "gemm_tiled", [g(128,128,32,8,3,"ieee"), g(128,128,32,8,3,"tf32x3"),
     g(128,256,32,8,3,"tf32x3"), g(256,128,32,8,3,"tf32x3"), g(128,64,32,4,4,"tf32x3")], 55),
  ("35_conv2d_fp32", "conv2d_implicit_gemm", [g(128,128,32,8,3,"ieee",PADDING=1),
     g(128,128,32,8,3,"tf32x3",PADDING=1), g(128,128,64,8,3,"tf32x3",PADDING=1),
     g(256,128,32,8,3,"tf32x3",PADDING=1), g(64,128,32,4,4,"tf32x3",PADDING=1),
     g(128,64,32,4,4,"tf32x3",PADDING=1)], 75),
  ("02_matmul_square_bf16", "gemm_persistent_tma", [g(128,256,64,8,3,"ieee"), g(128,256,64,8,4,"ieee"), g(128,128,64,8,4,"ieee")], 40),
  ("04_matmul_small_k_bf16", "gemm_persistent_tma", [g(128,256,64,8,3,"ieee"), g(128,128,64,8,3,"ieee"), g(128,128,64,4,2,"ieee")], 40),
  ("07_matmul_transposed_a_bf16", "gemm_persistent_tma", [g(128,256,64,8,3,"ieee",A_EXPR="A.mT"), g(128,128,64,8,4,"ieee",A_EXPR="A.mT")], 40),
]
for prob, tpl, cfgs, limit in jobs:
    try:
        r = subprocess.run(["timeout", str(limit), sys.executable, "tests/gpu/template_sweep.py", prob, tpl,
                            json.dumps(cfgs), os.path.join(OUT, "sweep.jsonl")],
                           capture_output=True, text=True)
        print(prob, tpl, "rc", r.returncode, r.stderr[-600:] if r.returncode else "", flush=True)
    except Exception as e:
        print(prob, tpl, "failed", e, flush=True)
