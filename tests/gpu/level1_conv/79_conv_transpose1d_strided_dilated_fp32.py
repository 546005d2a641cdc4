# 79_conv_transpose1d_strided_dilated_fp32: a transposed 1-D convolution, 32 -> 64 channels,
# kernel 3, stride 2, padding 1, dilation 2, batch 16 of length 131072. KernelBench level 1's
# convolution problem 79 (transposed), at its sizes, fp32, exact (TF32 off, as the reference
# runs). No starting kernel: the brain starts from its first kernel. The inputs are made on
# the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose1d(32, 64, 3, stride=2, padding=1, dilation=2, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(16, 32, 131072)]


def get_init_inputs():
    return []
