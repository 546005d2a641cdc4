# 40_kl_div_fp32: KL divergence kl_div(log(predictions), targets, batchmean) between row distributions, fp32.
# predictions, targets: 16384 x 32768 fp32 (rows sum to 1).
# H200 floor: 4.29 GB moved -> 1.00 ms; floor 1.00 ms (memory bound).
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


ROWS = _s(16384, 3)
COLS = _s(32768, 33)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.kl_div(torch.log(predictions), targets, reduction="batchmean")


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    predictions = torch.randn(ROWS, COLS, dtype=torch.float32, device=device).softmax(dim=-1)
    targets = torch.randn(ROWS, COLS, dtype=torch.float32, device=device).softmax(dim=-1)
    return [predictions, targets]


def get_init_inputs():
    return []
