# 05_matrix_scalar_fp32: C = A * s: A 16384 x 16384, s a Python float.
# KernelBench level 1's matrix-product problem of this form, at its sizes, fp32, exact (TF32
# off, as the reference runs). No starting kernel: the brain starts from its first kernel.
# The inputs are made on the default device (the harness makes it the GPU), as KernelBench's.
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, s):
        return A * s


def get_inputs():
    return [torch.randn(16384, 16384), 3.14]


def get_init_inputs():
    return []
