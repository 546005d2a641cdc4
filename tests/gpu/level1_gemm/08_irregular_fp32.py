# 08_irregular_fp32: C = A @ B at irregular sizes: A 8205 x 2949, B 2949 x 5921.
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

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(8205, 2949), torch.randn(2949, 5921)]


def get_init_inputs():
    return []
