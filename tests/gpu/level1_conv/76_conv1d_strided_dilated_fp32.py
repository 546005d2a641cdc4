# 76_conv1d_strided_dilated_fp32: a 1-D convolution, 64 -> 128 channels, kernel 3, stride 3,
# dilation 4, length 524280. KernelBench level 1's convolution problem 76 (standard), at its
# sizes but batch 32 where KernelBench has 64: its 8.6 GB input would not leave room for the
# trials, fp32, exact (TF32 off, as the reference runs). No starting kernel: the brain starts
# from its first kernel. The inputs are made on the default device (the harness makes it the
# GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(64, 128, 3, stride=3, dilation=4, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(32, 64, 524280)]


def get_init_inputs():
    return []
