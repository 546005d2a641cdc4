# 77_conv2d_strided_5x5_fp32: Conv2d 5x5, stride 3, padding 2, 64 -> 192 channels, with bias, fp32.
# x: 6 x 64 x 331 x 331 fp32, weight 192 x 64 x 5 x 5, bias 192; output 6 x 192 x 111 x 111.
# H200 floor: 0.23 GB moved -> 0.05 ms; 45.4 GFLOP -> 0.68 ms; floor 0.68 ms (compute bound).
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

N = _s(6, 1)
C_IN = _s(64, 16)
C_OUT = _s(192, 24)
H = _s(331, 17)
W = _s(331, 19)
KERNEL = 5
STRIDE = 3
PADDING = 2

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
    return [C_IN, C_OUT, KERNEL, STRIDE, PADDING, 1, 1, True]
