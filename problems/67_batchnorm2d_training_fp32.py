# 67_batchnorm2d_training_fp32: nn.BatchNorm2d as a plain module (KernelBench's BatchNorm),
# not put in eval mode: forward normalizes with the batch's statistics per channel (over N,
# H, W) and updates the module's running_mean / running_var, fp32.
# x: 20 x 48 x 480 x 640 fp32; weight, bias, running statistics: 48.
# H200 floor: 2.36 GB moved -> 0.55 ms; floor 0.55 ms (memory bound; a two-pass kernel
# reads x twice).
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


B = _s(20, 2)
CHANNELS = 48
H = _s(480, 5)
W = _s(640, 7)


class Model(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(B, CHANNELS, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [CHANNELS]
