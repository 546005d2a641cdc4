# 82_conv3d_asymmetric_input_fp32: Conv3d kernel (3, 3, 1) built from an int, padding 1 in every dim, 64 -> 64 channels, no bias, fp32.
# x: 4 x 64 x 112 x 112 x 16 fp32, weight 64 x 64 x 3 x 3 x 1; output 4 x 64 x 112 x 112 x 18.
# H200 floor: 0.44 GB moved -> 0.10 ms; 66.6 GFLOP -> 0.99 ms; floor 0.99 ms (compute bound).
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

N = _s(4, 1)
C_IN = _s(64, 16)
C_OUT = _s(64, 24)
H = _s(112, 6)
W = _s(112, 7)
D = _s(16, 3)
KERNEL = 3
PADDING = 1


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=False):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, (kernel_size, kernel_size, 1),
                              stride=stride, padding=padding, dilation=dilation, groups=groups,
                              bias=bias)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, D, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, 1, PADDING]
