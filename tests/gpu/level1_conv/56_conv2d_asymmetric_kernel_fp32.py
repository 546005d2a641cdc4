# 56_conv2d_asymmetric_kernel_fp32: a 2-D convolution, 64 -> 128 channels, 5 x 7 kernel, batch
# 8 of 512 x 256. KernelBench level 1's convolution problem 56 (standard), at its sizes, fp32,
# exact (TF32 off, as the reference runs). No starting kernel: the brain starts from its first
# kernel. The inputs are made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 128, (5, 7), bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(8, 64, 512, 256)]


def get_init_inputs():
    return []
