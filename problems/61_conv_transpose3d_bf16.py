# 61_conv_transpose3d_bf16: ConvTranspose3d 3x3x3, stride 2, padding 1, output_padding 1, 64 -> 64 channels, no bias, bf16.
# x: 16 x 64 x 32 x 64 x 64 bf16, weight 64 x 64 x 3 x 3 x 3; output 16 x 64 x 64 x 128 x 128.
# H200 floor: 2.42 GB moved -> 0.56 ms; 463.9 GFLOP -> 0.47 ms; floor 0.56 ms (memory bound).
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


N = _s(16, 1)
C_IN = _s(64, 12)
C_OUT = _s(64, 20)
D = _s(32, 2)
H = _s(64, 4)
W = _s(64, 5)
K = 3
STRIDE = 2
PADDING = 1
OUTPUT_PADDING = 1


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=False):
        super().__init__()
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, (kernel_size,) * 3,
                                         stride=stride, padding=padding,
                                         output_padding=output_padding, groups=groups,
                                         bias=bias, dtype=torch.bfloat16)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, D, H, W, dtype=torch.bfloat16, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, K, STRIDE, PADDING, OUTPUT_PADDING]
