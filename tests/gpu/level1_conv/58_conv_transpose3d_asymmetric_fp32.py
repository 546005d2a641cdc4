# 58_conv_transpose3d_asymmetric_fp32: a transposed 3-D convolution, 32 -> 16 channels, 3 x 5
# x 7 kernel, batch 16 of 16 x 32 x 64. KernelBench level 1's convolution problem 58
# (transposed), at its sizes, fp32, exact (TF32 off, as the reference runs). No starting
# kernel: the brain starts from its first kernel. The inputs are made on the default device
# (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose3d(32, 16, (3, 5, 7), bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(16, 32, 16, 32, 64)]


def get_init_inputs():
    return []
