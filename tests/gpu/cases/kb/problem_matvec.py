# KernelBench level 1, "matrix-vector multiplication" at its current size, as KernelBench
# writes it: get_inputs draws on the host. A: 2048 x 1,048,576 fp32 (8 GiB), B: 1,048,576 x 1.
import os

import torch
import torch.nn as nn

S = max(1, int(os.environ.get("KAGENT_PROBLEM_SCALE", "1")))
M = 256 * 8 // S
K = 131072 * 8 // S


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, 1)
    return [A, B]


def get_init_inputs():
    return []
