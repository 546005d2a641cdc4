# 62_conv_transpose2d_grouped_fp32: ConvTranspose2d kernel (3, 5), stride (2, 1), padding (1, 2), output_padding (1, 0), dilation (1, 2), groups 4, 128 -> 128 channels, bias, fp32.
# x: 16 x 128 x 128 x 256 fp32, weight 128 x 32 x 3 x 5, bias 128; output 16 x 128 x 256 x 260.
# H200 floor: 0.81 GB moved -> 0.19 ms; 64.4 GFLOP -> 0.96 ms; floor 0.96 ms (compute bound).
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
C_IN = _s(128, 20)  # 4 groups: 5 input and 3 output channels per group at the floors
C_OUT = _s(128, 12)
H = _s(128, 5)
W = _s(256, 7)
KERNEL = (3, 5)
STRIDE = (2, 1)
PADDING = (1, 2)
OUTPUT_PADDING = (1, 0)
DILATION = (1, 2)
GROUPS = 4


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding,
                 dilation, groups, bias=True):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, output_padding=output_padding,
                                         groups=groups, bias=bias, dilation=dilation)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, PADDING, OUTPUT_PADDING, DILATION, GROUPS]
