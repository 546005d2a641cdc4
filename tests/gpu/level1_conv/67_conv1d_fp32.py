# 67_conv1d_fp32: a 1-D convolution, 64 -> 128 channels, kernel 3, batch 32 of length 131072.
# KernelBench level 1's convolution problem 67 (standard), at its sizes, fp32, exact (TF32
# off, as the reference runs). No starting kernel: the brain starts from its first kernel. The
# inputs are made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(64, 128, 3, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(32, 64, 131072)]


def get_init_inputs():
    return []
