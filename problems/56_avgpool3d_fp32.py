# 56_avgpool3d_fp32: Average pooling 3D (kernel 3, stride 2, padding 1, padding counted), fp32.
# x: 32 x 16 x 96 x 128 x 128 fp32 (output 32 x 16 x 48 x 64 x 64).
# H200 floor: 3.62 GB moved -> 0.84 ms; floor 0.84 ms (memory bound).
# (fp32 rather than bf16: PyTorch has no CPU bf16 avg_pool3d, and the CPU tests run the reference.)
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


N = _s(32, 1)
C = 16
D = _s(96, 5)
H = _s(128, 7)
W = _s(128, 9)


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool3d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, C, D, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [3, 2, 1]
