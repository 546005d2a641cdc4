# 04_matvec_fp32: C = A @ B with B one column: A 2048 x 524288 (KernelBench's K is twice
# that; halved so the harness's trials fit beside each other on the GPU).
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
    return [torch.randn(2048, 524288), torch.randn(524288, 1)]


def get_init_inputs():
    return []
