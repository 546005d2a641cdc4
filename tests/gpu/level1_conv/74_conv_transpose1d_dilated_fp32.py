# 74_conv_transpose1d_dilated_fp32: a transposed 1-D convolution, 32 -> 64 channels, kernel 5,
# dilation 3, batch 32 of length 131072. KernelBench level 1's convolution problem 74
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
        self.conv = nn.ConvTranspose1d(32, 64, 5, dilation=3, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(32, 32, 131072)]


def get_init_inputs():
    return []
