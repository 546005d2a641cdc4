# 84_conv2d_depthwise_wide_input_fp32: a depthwise 2-D convolution, 128 channels, 3 x 3
# kernel, 256 x 512 images. KernelBench level 1's convolution problem 84 (depthwise), at its
# sizes but batch 32 where KernelBench has 64: 8.5 GB of input and output per trial, fp32,
# exact (TF32 off, as the reference runs). No starting kernel: the brain starts from its first
# kernel. The inputs are made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(128, 128, 3, groups=128, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(32, 128, 256, 512)]


def get_init_inputs():
    return []
