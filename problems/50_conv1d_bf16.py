# 50_conv1d_bf16: Conv1d kernel 5, stride 1, padding 2, 1024 -> 1024 channels, no bias, bf16.
# x: 8 x 1024 x 16384 bf16, weight 1024 x 1024 x 5; output 8 x 1024 x 16384.
# H200 floor: 0.55 GB moved -> 0.13 ms; 1374.4 GFLOP -> 1.39 ms; floor 1.39 ms (compute bound).
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


N = _s(8, 1)
C_IN = _s(1024, 16)
C_OUT = _s(1024, 24)
L = _s(16384, 37)
K = 5
STRIDE = 1
PADDING = 2


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, bias=False, dtype=torch.bfloat16)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, L, dtype=torch.bfloat16, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, K, STRIDE, PADDING]
