# 91_tanh_tall_odd_fp32: tanh on a tall, narrow tensor with odd dims, fp32.
# x: 524287 x 1023 fp32.
# H200 floor: 4.29 GB moved -> 1.00 ms; floor 1.00 ms (memory bound).
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


ROWS = _s(524287, 7)
COLS = _s(1023, 33)

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(ROWS, COLS, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return []
