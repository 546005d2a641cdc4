# 60_conv_transpose1d_fp32: ConvTranspose1d kernel 5, stride 2, padding 2, output_padding 1, 128 -> 96 channels, bias, fp32.
# x: 16 x 128 x 32768 fp32, weight 128 x 96 x 5, bias 96; output 16 x 96 x 65536.
# H200 floor: 0.67 GB moved -> 0.16 ms; 64.4 GFLOP -> 0.96 ms; floor 0.96 ms (compute bound).
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
C_IN = _s(128, 20)
C_OUT = _s(96, 12)
L = _s(32768, 37)
K = 5
STRIDE = 2
PADDING = 2
OUTPUT_PADDING = 1


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv_t = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, output_padding=output_padding)

    def forward(self, x):
        return self.conv_t(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C_IN, L, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [C_IN, C_OUT, K, STRIDE, PADDING, OUTPUT_PADDING]
