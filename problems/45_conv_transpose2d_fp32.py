# 45_conv_transpose2d_fp32: ConvTranspose2d 3x3, stride 2, padding 1, output_padding 1, 128 -> 64 channels, no bias, fp32.
# x: 8 x 128 x 256 x 256 fp32, weight 128 x 64 x 3 x 3; output 8 x 64 x 512 x 512.
# H200 floor: 0.81 GB moved -> 0.19 ms; 77.3 GFLOP -> 1.15 ms; floor 1.15 ms (compute bound).
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
C_IN = _s(128, 16)
C_OUT = _s(64, 24)
H = _s(256, 6)
W = _s(256, 7)
K = 3
STRIDE = 2
PADDING = 1
OUTPUT_PADDING = 1


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, output_padding=output_padding,
                                         bias=False)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, K, STRIDE, PADDING, OUTPUT_PADDING]
