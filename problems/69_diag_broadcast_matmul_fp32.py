# 69_diag_broadcast_matmul_fp32: diag(A) @ B written as a broadcast multiply
# (A.unsqueeze(1) * B, KernelBench's diagonal-matrix product in its broadcast form): each
# row i of B scaled by A[i], fp32.
# A: 12000 fp32, B: 12000 x 22400 fp32.
# H200 floor: 2.15 GB moved -> 0.50 ms; floor 0.50 ms (memory bound).
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


N = _s(12000, 5)
M = _s(22400, 33)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A.unsqueeze(1) * B


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    A = torch.randn(N, dtype=torch.float32, device=device)
    B = torch.randn(N, M, dtype=torch.float32, device=device)
    return [A, B]


def get_init_inputs():
    return []
