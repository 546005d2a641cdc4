# 96_maxpool2d_dilated_odd_fp32: MaxPool2d kernel 3, stride 2, padding 1, dilation 2 on odd planes, fp32.
# x: 40 x 64 x 511 x 383 fp32; output 40 x 64 x 255 x 191.
# H200 floor: 2.50 GB moved -> 0.58 ms; floor 0.58 ms (memory bound).
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


N = _s(40, 1)
C = _s(64, 8)
H = _s(511, 9)
W = _s(383, 11)


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding,
                                 dilation=dilation)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [3, 2, 1, 2]
