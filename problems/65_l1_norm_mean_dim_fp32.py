# 65_l1_norm_mean_dim_fp32: L1 normalization by the mean absolute value over a middle dim
# (x / mean(|x|, dim=1, keepdim=True)), fp32.
# x: 128 x 384 x 6144 fp32, normalized over dim 1 (384 channels, each column of dim 2 apart).
# H200 floor: 2.42 GB moved -> 0.56 ms; floor 0.56 ms (memory bound).
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


B = _s(128, 2)
CHANNELS = 384
L = _s(6144, 13)


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x / torch.mean(torch.abs(x), dim=self.dim, keepdim=True)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(B, CHANNELS, L, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [1]
