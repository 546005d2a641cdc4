# 21_mean_dim_bf16: Mean over the last dim, bf16.
# x: 96 x 4096 x 4096 bf16, reduced over dim 2.
# H200 floor: 3.22 GB moved -> 0.75 ms; floor 0.75 ms (memory bound).
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


B = _s(96, 2)
D1 = _s(4096, 13)
D2 = _s(4096, 13)


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.mean(x, dim=self.dim)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(B, D1, D2, dtype=torch.bfloat16, device=device)
    return [x]


def get_init_inputs():
    return [2]
