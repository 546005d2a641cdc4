# 86_conv2d_depthwise_multiplier_bf16: Depthwise Conv2d 3x3 with channel multiplier 2 (64 -> 128, groups 64), stride 2, padding 1, no bias, bf16.
# x: 48 x 64 x 384 x 640 bf16, weight 128 x 1 x 3 x 3; output 48 x 128 x 192 x 320.
# H200 floor: 2.26 GB moved -> 0.53 ms; 6.8 GFLOP -> 0.01 ms; floor 0.53 ms (memory bound).
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


N = _s(48, 1)
C_IN = _s(64, 6)
C_OUT = 2 * C_IN
H = _s(384, 9)
W = _s(640, 14)
KERNEL = 3
STRIDE = 2
PADDING = 1


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, groups=in_channels, bias=bias,
                              dtype=torch.bfloat16)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, dtype=torch.bfloat16, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, PADDING]
