# 79_conv2d_deep_small_spatial_bf16: Conv2d 3x3, padding 1, 512 -> 512 channels on 28 x 28 images (a late ResNet stage), no bias, bf16.
# x: 192 x 512 x 28 x 28 bf16, weight 512 x 512 x 3 x 3; output 192 x 512 x 28 x 28.
# H200 floor: 0.31 GB moved -> 0.07 ms; 710.3 GFLOP -> 0.72 ms; floor 0.72 ms (compute bound).
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


N = _s(192, 1)
C_IN = _s(512, 24)
C_OUT = _s(512, 40)
H = _s(28, 7)
W = _s(28, 7)
KERNEL = 3

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, groups=groups, bias=bias, dtype=torch.bfloat16)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, dtype=torch.bfloat16, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, 1, 1]
