# 80_conv2d_dilated_padded_fp32: a 2-D convolution, 32 -> 64 channels, 5 x 9 kernel, padding
# (2, 4), dilation (2, 3), batch 8 of 512 x 512. KernelBench level 1's convolution problem 80
# (standard), at its sizes, fp32, exact (TF32 off, as the reference runs). No starting kernel:
# the brain starts from its first kernel. The inputs are made on the default device (the
# harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(32, 64, (5, 9), padding=(2, 4), dilation=(2, 3), bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(8, 32, 512, 512)]


def get_init_inputs():
    return []
