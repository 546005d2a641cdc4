# 81_conv1d_grouped_bf16: Conv1d kernel 9, stride 2, padding 4, 256 -> 256 channels in 8 groups, with bias, bf16.
# x: 96 x 256 x 32771 bf16, weight 256 x 32 x 9, bias 256; output 96 x 256 x 16386.
# H200 floor: 2.42 GB moved -> 0.56 ms; 232.0 GFLOP -> 0.23 ms; floor 0.56 ms (memory bound).
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


N = _s(96, 1)
C_IN = _s(256, 16)
C_OUT = C_IN
GROUPS = 8
L = _s(32771, 101)
KERNEL = 9

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=False):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, groups=groups, bias=bias, dtype=torch.bfloat16)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, L, dtype=torch.bfloat16, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, 2, 4, 1, GROUPS, True]
