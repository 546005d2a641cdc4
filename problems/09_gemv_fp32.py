# 09_gemv_fp32: y = A @ x with A 16384 x 65536 fp32 and x a vector.
# A: 16384 x 65536 fp32, x: 65536 fp32.
# H200 floor: 4.30 GB moved -> 1.00 ms; 2.1 GFLOP -> 0.03 ms; floor 1.00 ms (memory bound).
# (4.3 TB/s copy bandwidth; 67 TFLOP/s fp32 FMA; 989 TFLOP/s bf16 tensor cores).
# KAGENT_PROBLEM_SCALE (a divisor, default 1) shrinks the big dimensions so the CPU tests
# can run every problem under Triton's interpreter. The harness seeds; this file never does.
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SCALE = max(1, int(os.environ.get("KAGENT_PROBLEM_SCALE", "1")))


def _s(n, floor):
    """n divided by KAGENT_PROBLEM_SCALE, at least floor."""
    return max(floor, n // SCALE)


# Exact fp32 in the reference (no TF32, no reduced-precision bf16 reductions).
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False

M = _s(16384, 5)
K = _s(65536, 300)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, x):
        return torch.mv(A, x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    A = torch.randn(M, K, dtype=torch.float32, device=device)
    x = torch.randn(K, dtype=torch.float32, device=device)
    return [A, x]


def get_init_inputs():
    return []
