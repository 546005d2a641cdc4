# 70_conv_transpose3d_large_cube_fp32: a transposed 3-D convolution, 48 -> 24 channels, 3 x 3
# x 3 kernel, batch 8 of 96^3. KernelBench level 1's convolution problem 70 (transposed), at
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
        self.conv = nn.ConvTranspose3d(48, 24, 3, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(8, 48, 96, 96, 96)]


def get_init_inputs():
    return []
