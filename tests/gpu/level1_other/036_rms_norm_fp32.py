# 036_rms_norm_fp32: x / sqrt(mean(x^2 over channels) + 1e-5), written out. KernelBench level
# 1's problem 36 at its sizes, fp32, exact (TF32 off, as the reference runs). No starting
# kernel: the brain starts from its first kernel. The inputs are made on the default device
# (the harness makes it the GPU).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)
        return x / rms


def get_inputs():
    return [torch.rand(112, 64, 512, 512)]


def get_init_inputs():
    return []
