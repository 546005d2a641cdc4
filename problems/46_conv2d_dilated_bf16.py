# 46_conv2d_dilated_bf16: Conv2d 3x3, stride 1, padding 2, dilation 2, 256 -> 256 channels, no bias, bf16.
# x: 64 x 256 x 128 x 128 bf16, weight 256 x 256 x 3 x 3; output 64 x 256 x 128 x 128.
# H200 floor: 1.07 GB moved -> 0.25 ms; 1237.0 GFLOP -> 1.25 ms; floor 1.25 ms (compute bound).
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


N = _s(64, 1)
C_IN = _s(256, 16)
C_OUT = _s(256, 24)
H = _s(128, 6)
W = _s(128, 7)
K = 3
STRIDE = 1
PADDING = 2
DILATION = 2


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, bias=False,
                              dtype=torch.bfloat16)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, dtype=torch.bfloat16, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, K, STRIDE, PADDING, DILATION]
