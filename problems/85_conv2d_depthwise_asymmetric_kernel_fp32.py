# 85_conv2d_depthwise_asymmetric_kernel_fp32: Depthwise Conv2d kernel (5, 1), dilation 2, no padding, 96 channels, no bias, fp32; the constructor takes (in_channels, kernel_size, stride, padding, dilation, bias).
# x: 16 x 96 x 511 x 509 fp32, weight 96 x 1 x 5 x 1; output 16 x 96 x 503 x 509.
# H200 floor: 3.17 GB moved -> 0.74 ms; 3.9 GFLOP -> 0.06 ms; floor 0.74 ms (memory bound).
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
CHANNELS = _s(96, 8)
H = _s(511, 13)
W = _s(509, 11)
KERNEL = 5
DILATION = 2


class Model(nn.Module):
    def __init__(self, in_channels, kernel_size, stride=1, padding=0, dilation=1, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, in_channels, kernel_size=(kernel_size, 1),
                              stride=stride, padding=padding, dilation=dilation,
                              groups=in_channels, bias=bias)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, CHANNELS, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [CHANNELS, KERNEL, 1, 0, DILATION]
