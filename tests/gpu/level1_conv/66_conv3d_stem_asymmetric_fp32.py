# 66_conv3d_stem_asymmetric_fp32: a 3-D stem: 3 -> 64 channels, 3 x 5 x 7 kernel, batch 8 of
# 16 x 128 x 128. KernelBench level 1's convolution problem 66 (standard), at its sizes, fp32,
# exact (TF32 off, as the reference runs). No starting kernel: the brain starts from its first
# kernel. The inputs are made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(3, 64, (3, 5, 7), bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(8, 3, 16, 128, 128)]


def get_init_inputs():
    return []
