# 68_batchnorm1d_training_fp32: nn.BatchNorm1d on (N, C) features as a plain module, not
# put in eval mode: forward normalizes each feature with the batch's statistics (over N)
# and updates the module's running_mean / running_var, fp32.
# x: 270000 x 1000 fp32; weight, bias, running statistics: 1000.
# H200 floor: 2.16 GB moved -> 0.50 ms; floor 0.50 ms (memory bound; a two-pass kernel
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


BATCH = _s(270000, 37)
FEATURES = _s(1000, 19)


class Model(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm1d(num_features)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(BATCH, FEATURES, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [FEATURES]
