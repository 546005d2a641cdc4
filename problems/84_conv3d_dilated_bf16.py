# 84_conv3d_dilated_bf16: Conv3d kernel 3, dilation 2, no padding, 64 -> 128 channels, with bias, bf16.
# x: 12 x 64 x 32 x 64 x 64 bf16, weight 128 x 64 x 3 x 3 x 3, bias 128; output 12 x 128 x 28 x 60 x 60.
# H200 floor: 0.51 GB moved -> 0.12 ms; 535.1 GFLOP -> 0.54 ms; floor 0.54 ms (compute bound).
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


N = _s(12, 1)
C_IN = _s(64, 16)
C_OUT = _s(128, 24)
D = _s(32, 6)
H = _s(64, 7)
W = _s(64, 8)
KERNEL = 3

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=False):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, groups=groups, bias=bias, dtype=torch.bfloat16)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, D, H, W, dtype=torch.bfloat16, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, 1, 0, 2, 1, True]
