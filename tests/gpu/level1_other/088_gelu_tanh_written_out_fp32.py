# 088_gelu_tanh_written_out_fp32: minGPT's GELU: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715
# x^3))), written out. KernelBench level 1's problem 88 at its sizes, fp32, exact (TF32 off,
# as the reference runs). No starting kernel: the brain starts from its first kernel. The
# inputs are made on the default device (the harness makes it the GPU).
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
        return 0.5 * x * (1.0 + torch.tanh(inner))


def get_inputs():
    return [torch.rand(8192, 8192)]


def get_init_inputs():
    return []
