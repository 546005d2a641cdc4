# KernelBench level 1, "tanh" at its current size, as KernelBench writes it: get_inputs
# draws on the host. x: 4096 x 393,216 fp32 (6 GiB).
import os

import torch
import torch.nn as nn

S = max(1, int(os.environ.get("KAGENT_PROBLEM_SCALE", "1")))
BATCH = 4096 // S
DIM = 393216 // S


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.tanh(x)


def get_inputs():
    x = torch.rand(BATCH, DIM)
    return [x]


def get_init_inputs():
    return []
