# 83_conv2d_depthwise_column_kernel_fp32: a depthwise 2-D convolution, 8 channels, 3 x 1
# kernel, batch 64 of 512 x 512. KernelBench level 1's convolution problem 83 (depthwise), at
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
        self.conv = nn.Conv2d(8, 8, (3, 1), groups=8, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(64, 8, 512, 512)]


def get_init_inputs():
    return []
