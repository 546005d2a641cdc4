# 01_matmul_square_fp32: C = A @ B, square, fp32.
# A, B: 4096 x 4096 fp32.
# H200 floor: 0.20 GB moved -> 0.05 ms; 137.4 GFLOP -> 2.05 ms; floor 2.05 ms (compute bound).
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

N = _s(4096, 17)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    A = torch.randn(N, N, dtype=torch.float32, device=device)
    B = torch.randn(N, N, dtype=torch.float32, device=device)
    return [A, B]


def get_init_inputs():
    return []
