# 81_conv_transpose2d_stride5_dilated_fp32: a transposed 2-D convolution, 32 -> 64 channels, 3
# x 3 kernel, stride 5, padding 1, dilation 2, batch 16 of 64 x 128. KernelBench level 1's
# convolution problem 81 (transposed), at its sizes, fp32, exact (TF32 off, as the reference
# runs). No starting kernel: the brain starts from its first kernel. The inputs are made on
# the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(32, 64, 3, stride=5, padding=1, dilation=2, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(16, 32, 64, 128)]


def get_init_inputs():
    return []
