# 03_batched_fp32: C = bmm(A, B): 128 products of 512 x 1024 by 1024 x 2048.
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
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(128, 512, 1024), torch.randn(128, 1024, 2048)]


def get_init_inputs():
    return []
