# 80_conv1d_strided_dilated_fp32: Conv1d kernel 3, stride 3, dilation 4, 48 -> 96 channels, no bias, fp32; the constructor takes (in, out, kernel, stride, dilation, bias).
# x: 16 x 48 x 262147 fp32, weight 96 x 48 x 3; output 16 x 96 x 87380.
# H200 floor: 1.34 GB moved -> 0.31 ms; 38.7 GFLOP -> 0.58 ms; floor 0.58 ms (compute bound).
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

N = _s(16, 1)
C_IN = _s(48, 16)
C_OUT = _s(96, 24)
L = _s(262147, 301)
KERNEL = 3
STRIDE = 3
DILATION = 4


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, dilation=1, bias=False):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride,
                              dilation=dilation, bias=bias)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, L, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, DILATION]
