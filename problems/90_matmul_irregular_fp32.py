# 90_matmul_irregular_fp32: C = A @ B with irregular dims (none a multiple of 16), fp32.
# A: 4099 x 2949, B: 2949 x 3001, fp32.
# H200 floor: 0.13 GB moved -> 0.03 ms; 72.6 GFLOP -> 1.08 ms; floor 1.08 ms (compute bound).
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


M = _s(4099, 17)
K = _s(2949, 19)
N = _s(3001, 23)

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    A = torch.randn(M, K, dtype=torch.float32, device=device)
    B = torch.randn(K, N, dtype=torch.float32, device=device)
    return [A, B]


def get_init_inputs():
    return []
