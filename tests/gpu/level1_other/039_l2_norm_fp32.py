# 039_l2_norm_fp32: x / torch.norm(x, p=2, dim=1). KernelBench level 1's problem 39 at its
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
        return x / torch.norm(x, p=2, dim=1, keepdim=True)


def get_inputs():
    return [torch.rand(32768, 65535)]


def get_init_inputs():
    return []
