# 36_conv2d_depthwise_fp32: Depthwise Conv2d 3x3, stride 1, padding 1, 128 channels, with bias, fp32.
# x: 16 x 128 x 512 x 512 fp32, weight 128 x 1 x 3 x 3.
# H200 floor: 4.29 GB moved -> 1.00 ms; 9.7 GFLOP -> 0.14 ms; floor 1.00 ms (memory bound).
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
CHANNELS = 128
H = _s(512, 6)
W = _s(512, 7)
K = 3


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2,
                              groups=channels, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, CHANNELS, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [CHANNELS, K]
