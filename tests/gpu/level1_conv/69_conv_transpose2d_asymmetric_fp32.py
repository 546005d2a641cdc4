# 69_conv_transpose2d_asymmetric_fp32: a transposed 2-D convolution, 64 -> 128 channels, 3 x 5
# kernel, batch 64 of 128 x 256. KernelBench level 1's convolution problem 69 (transposed), at
# its sizes, fp32, exact (TF32 off, as the reference runs). No starting kernel: the brain
# starts from its first kernel. The inputs are made on the default device (the harness makes
# it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(64, 128, (3, 5), bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(64, 64, 128, 256)]


def get_init_inputs():
    return []
