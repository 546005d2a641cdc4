# 89_conv2d_single_image_fp32: Conv2d 3x3, padding 1, 16 -> 48 channels on one 2048 x 1536 image (batch 1), with bias, fp32.
# x: 1 x 16 x 2048 x 1536 fp32, weight 48 x 16 x 3 x 3, bias 48; output 1 x 48 x 2048 x 1536.
# H200 floor: 0.81 GB moved -> 0.19 ms; 43.5 GFLOP -> 0.65 ms; floor 0.65 ms (compute bound).
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


# Exact fp32 convolutions in the reference (cuDNN would use TF32 by default).
torch.backends.cudnn.allow_tf32 = False

N = 1
C_IN = 16
C_OUT = _s(48, 24)
H = _s(2048, 9)
W = _s(1536, 10)
KERNEL = 3

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, groups=groups, bias=bias)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, 1, 1, 1, 1, True]
