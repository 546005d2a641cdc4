# 85_conv2d_depthwise_kernel_3x7_fp32: a depthwise 2-D convolution, 128 channels, 3 x 7
# kernel, batch 32 of 128 x 256. KernelBench level 1's convolution problem 85 (depthwise), at
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
        self.conv = nn.Conv2d(128, 128, (3, 7), groups=128, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(32, 128, 128, 256)]


def get_init_inputs():
    return []
