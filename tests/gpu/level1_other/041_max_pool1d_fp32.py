# 041_max_pool1d_fp32: nn.MaxPool1d(8, stride=1, padding=4, dilation=3). KernelBench level 1's
# problem 41 at its sizes, fp32, exact (TF32 off, as the reference runs). No starting kernel:
# the brain starts from its first kernel. The inputs are made on the default device (the
# harness makes it the GPU).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size=8, stride=1, padding=4, dilation=3)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.rand(64, 192, 65536)]


def get_init_inputs():
    return []
