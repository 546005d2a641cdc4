# KernelBench level 1, "matrix x scalar" at its current size, as KernelBench writes it:
# get_inputs draws on the host (no device given). A: 65536 x 16384 fp32 (4 GiB).
# KAGENT_PROBLEM_SCALE (a divisor) shrinks it for the CPU tests.
import os

import torch
import torch.nn as nn

S = max(1, int(os.environ.get("KAGENT_PROBLEM_SCALE", "1")))
M = 16384 * 4 // S
N = 4096 * 4 // S


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return A * s


def get_inputs():
    A = torch.rand(M, N)
    s = 3.14
    return [A, s]


def get_init_inputs():
    return []
