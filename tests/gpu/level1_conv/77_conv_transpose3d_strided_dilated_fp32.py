# 77_conv_transpose3d_strided_dilated_fp32: a transposed 3-D convolution, 32 -> 64 channels, 3
# x 3 x 3 kernel, stride 2, padding 1, dilation 2, batch 16 of 16 x 32 x 32. KernelBench level
# 1's convolution problem 77 (transposed), at its sizes, fp32, exact (TF32 off, as the
# reference runs). No starting kernel: the brain starts from its first kernel. The inputs are
# made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose3d(32, 64, 3, stride=2, padding=1, dilation=2, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(16, 32, 16, 32, 32)]


def get_init_inputs():
    return []
