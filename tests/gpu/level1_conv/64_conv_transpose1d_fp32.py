# 64_conv_transpose1d_fp32: a transposed 1-D convolution, 128 -> 128 channels, kernel 3, batch
# 64 of length 65536. KernelBench level 1's convolution problem 64 (transposed), at its sizes,
# fp32, exact (TF32 off, as the reference runs). No starting kernel: the brain starts from its
# first kernel. The inputs are made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose1d(128, 128, 3, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(64, 128, 65536)]


def get_init_inputs():
    return []
