# KernelBench level 1, "matmul with irregular shapes" at its current size, as KernelBench
# writes it: get_inputs draws on the host. C (8205 x 5921) = A (8205 x 2949) @ B (2949 x 5921), fp32.
import os

import torch
import torch.nn as nn

S = max(1, int(os.environ.get("KAGENT_PROBLEM_SCALE", "1")))
M = 8205 // S
K = 2949 // S
N = 5921 // S


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
