# 70_conv2d_depthwise_separable_fp32: depthwise Conv2d 3x3 (padding 1, 64 channels) then a pointwise 1x1 Conv2d 64 -> 128, no biases, fp32.
# x: 16 x 64 x 512 x 512 fp32, depthwise weight 64 x 1 x 3 x 3, pointwise weight 128 x 64 x 1 x 1; output 16 x 128 x 512 x 512.
# H200 floor: 3.22 GB moved (input and output; the intermediate need not be) -> 0.75 ms; 73.5 GFLOP -> 1.10 ms; floor 1.10 ms (compute bound).
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

N = _s(16, 1)
C_IN = _s(64, 6)
C_OUT = _s(128, 19)
H = _s(512, 9)
W = _s(512, 11)
KERNEL = 3
STRIDE = 1
PADDING = 1
DILATION = 1


class Model(nn.Module):
    """A depthwise-separable convolution: a per-channel KERNEL x KERNEL conv, then a 1x1
    conv mixing the channels (KernelBench level 1's constructor order)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 bias=False):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride,
                                   padding=padding, dilation=dilation, groups=in_channels,
                                   bias=bias)
        self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, PADDING, DILATION]
