# 13_symmetric_fp32: C = A @ B of two symmetric 4096 x 4096 matrices.
# KernelBench level 1's matrix-product problem of this form, at its sizes, fp32, exact (TF32
# off, as the reference runs). No starting kernel: the brain starts from its first kernel.
# The inputs are made on the default device (the harness makes it the GPU), as KernelBench's.
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def _symmetric(n):
    a = torch.randn(n, n)
    return (a + a.T) / 2


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [_symmetric(4096), _symmetric(4096)]


def get_init_inputs():
    return []
