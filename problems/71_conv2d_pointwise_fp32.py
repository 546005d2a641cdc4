# 71_conv2d_pointwise_fp32: pointwise (1x1) Conv2d 64 -> 128 channels on a non-square image, no bias, fp32.
# x: 8 x 64 x 1024 x 384 fp32, weight 128 x 64 x 1 x 1; output 8 x 128 x 1024 x 384.
# H200 floor: 2.42 GB moved -> 0.56 ms; 51.5 GFLOP -> 0.77 ms; floor 0.77 ms (compute bound).
# (4.3 TB/s copy bandwidth; 67 TFLOP/s fp32 FMA; 989 TFLOP/s bf16 tensor cores).
# KAGENT_PROBLEM_SCALE (a divisor, default 1) shrinks the big dimensions so the CPU tests
# can run every problem under Triton's interpreter. The harness seeds; this file never does.
import os

import torch
import torch.nn as nn

SCALE = max(1, int(os.environ.get("KAGENT_PROBLEM_SCALE", "1")))


def _s(n, floor):
    """n divided by KAGENT_PROBLEM_SCALE, at least floor."""
    return max(floor, n // SCALE)


# Exact fp32 convolutions in the reference (cuDNN would use TF32 by default).
torch.backends.cudnn.allow_tf32 = False

N = _s(8, 1)
C_IN = _s(64, 19)
C_OUT = _s(128, 24)
H = _s(1024, 7)
W = _s(384, 13)


class Model(nn.Module):
    """A pointwise convolution built from the channel counts alone (KernelBench level 1's
    constructor: the kernel size is fixed inside)."""

    def __init__(self, in_channels, out_channels, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0,
                              bias=bias)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT]
