# 58_masked_cumsum_fp32: Prefix sum along dim 1 of x * mask (a bool mask), fp32.
# x: 32768 x 16384 fp32, mask: 32768 x 16384 bool, scanned along dim 1.
# H200 floor: 4.83 GB moved -> 1.12 ms; floor 1.12 ms (memory bound).
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


ROWS = _s(32768, 3)
COLS = _s(16384, 1500)


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, mask):
        return torch.cumsum(x * mask, dim=self.dim)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(ROWS, COLS, dtype=torch.float32, device=device)
    mask = torch.randint(0, 2, (ROWS, COLS), device=device).bool()
    return [x, mask]


def get_init_inputs():
    return [1]
