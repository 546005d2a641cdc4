# 48_conv2d_strided_asymmetric_fp32: Conv2d 5x3 kernel, stride 2, padding (2, 1), 64 -> 128 channels, with bias, fp32.
# x: 8 x 64 x 512 x 512 fp32, weight 128 x 64 x 5 x 3, bias 128; output 8 x 128 x 256 x 256.
# H200 floor: 0.81 GB moved -> 0.19 ms; 128.8 GFLOP -> 1.92 ms; floor 1.92 ms (compute bound).
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

N = _s(8, 1)
C_IN = _s(64, 16)
C_OUT = _s(128, 24)
H = _s(512, 11)
W = _s(512, 8)
KERNEL = (5, 3)
STRIDE = 2
PADDING = (2, 1)


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, PADDING]
