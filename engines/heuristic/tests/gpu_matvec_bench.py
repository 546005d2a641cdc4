"""GPU check of the matvec templates on the flagship shape (A 2048 x 1048576 bf16).

Run on a GPU machine: python engines/heuristic/tests/gpu_matvec_bench.py
Prints the median time of the 32-row tile starting kernel and of each matvec template,
and checks each against torch.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from template_render import load_model_new  # noqa: E402

M, K = 2048, 1048576
A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
x = torch.randn(K, 1, device="cuda", dtype=torch.bfloat16)
ref = (A.float() @ x.float())
gb = (A.numel() + x.numel() + M) * 2 / 1e9


def bench(name, model):
    out = model(A, x)
    err = (out.float() - ref).abs().max().item()
    ms = triton.testing.do_bench(lambda: model(A, x), warmup=10, rep=100)
    print(f"{name:55s} {ms:8.3f} ms  {gb / ms * 1e3:7.0f} GB/s  max_err {err:.3g}", flush=True)


bench("start: multi_row BLOCK_M=32 BLOCK_K=512 stages=1",
      load_model_new("matvec_multi_row", BLOCK_M=32, BLOCK_K=512, num_stages=1, num_warps=4)())
bench("torch eager", lambda a, b: a @ b)
for bk, w, s in [(4096, 8, 2), (2048, 8, 2), (4096, 16, 2), (8192, 16, 3), (2048, 4, 3)]:
    bench(f"row_per_program BLOCK_K={bk} warps={w} stages={s}",
          load_model_new("matvec_row_per_program", BLOCK_K=bk, num_warps=w, num_stages=s)())
for bm, bk, sk, w in [(1, 4096, 4, 8), (1, 2048, 8, 8), (2, 2048, 4, 8), (4, 1024, 8, 4)]:
    bench(f"split_k BLOCK_M={bm} BLOCK_K={bk} SPLIT_K={sk} warps={w}",
          load_model_new("matvec_split_k", BLOCK_M=bm, BLOCK_K=bk, SPLIT_K=sk, num_warps=w)())
for bm, bk in [(16, 512), (8, 1024), (4, 2048)]:
    bench(f"multi_row BLOCK_M={bm} BLOCK_K={bk}",
          load_model_new("matvec_multi_row", BLOCK_M=bm, BLOCK_K=bk, num_warps=8, num_stages=2)())
