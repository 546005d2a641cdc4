# 73_conv_transpose3d_strided_grouped_cube_fp32: a transposed 3-D convolution, 32 -> 32
# channels in 4 groups, 3 x 3 x 3 kernel, stride 2, padding 1, batch 4 of 32 x 64 x 128.
# KernelBench level 1's convolution problem 73 (transposed), at its sizes, fp32, exact (TF32
# off, as the reference runs). No starting kernel: the brain starts from its first kernel. The
# inputs are made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose3d(32, 32, 3, stride=2, padding=1, groups=4, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(4, 32, 32, 64, 128)]


def get_init_inputs():
    return []
