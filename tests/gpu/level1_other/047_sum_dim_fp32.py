# 047_sum_dim_fp32: torch.sum(x, dim=1, keepdim=True). KernelBench level 1's problem 47 at its
# sizes, fp32, exact (TF32 off, as the reference runs). No starting kernel: the brain starts
# from its first kernel. The inputs are made on the default device (the harness makes it the
# GPU).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=1, keepdim=True)


def get_inputs():
    return [torch.rand(128, 4096, 4095)]


def get_init_inputs():
    return []
