# 78_conv_transpose2d_padded_fp32: a transposed 2-D convolution, 32 -> 32 channels, 3 x 7
# kernel, padding (1, 3), batch 8 of 512 x 1024. KernelBench level 1's convolution problem 78
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
        self.conv = nn.ConvTranspose2d(32, 32, (3, 7), padding=(1, 3), bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(8, 32, 512, 1024)]


def get_init_inputs():
    return []
