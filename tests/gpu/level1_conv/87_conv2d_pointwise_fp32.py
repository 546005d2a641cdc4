# 87_conv2d_pointwise_fp32: a pointwise (1 x 1) 2-D convolution, 64 -> 128 channels, 1024 x
# 1024 images. KernelBench level 1's convolution problem 87 (pointwise), at its sizes but
# batch 8 where KernelBench has 16: its 8.6 GB output would not leave room for the trials,
# fp32, exact (TF32 off, as the reference runs). No starting kernel: the brain starts from its
# first kernel. The inputs are made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 128, 1, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(8, 64, 1024, 1024)]


def get_init_inputs():
    return []
