# The seed's case study: C = A @ x with A (M x K) bf16, x (K x 1) bf16, fp32 accumulation.
# M = 2048, K = 1,048,576 (A is 4 GiB). KAGENT_MATVEC_M / KAGENT_MATVEC_K override the
# sizes (the CPU tests shrink them; read in the process that loads this file).
import os

import torch
import torch.nn as nn

M = int(os.environ.get("KAGENT_MATVEC_M", "2048"))
K = int(os.environ.get("KAGENT_MATVEC_K", "1048576"))

# fp32 accumulation in the reference too (no reduced-precision split-K reductions).
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, x):
        return torch.matmul(A, x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    A = torch.randn(M, K, dtype=torch.bfloat16, device=device)
    x = torch.randn(K, 1, dtype=torch.bfloat16, device=device)
    return [A, x]


def get_init_inputs():
    return []
