# 82_conv2d_depthwise_fp32: a depthwise 2-D convolution, 64 channels, 3 x 3 kernel, batch 16
# of 512 x 512. KernelBench level 1's convolution problem 82 (depthwise), at its sizes, fp32,
# exact (TF32 off, as the reference runs). No starting kernel: the brain starts from its first
# kernel. The inputs are made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 64, 3, groups=64, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(16, 64, 512, 512)]


def get_init_inputs():
    return []
