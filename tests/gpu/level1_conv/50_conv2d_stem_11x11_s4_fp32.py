# 50_conv2d_stem_11x11_s4_fp32: a 2-D stem: 3 -> 96 channels, 11 x 11 kernel, stride 4,
# padding 2, with bias, batch 256 of 224 x 224. KernelBench level 1's convolution problem 50
# (standard), at its sizes, fp32, exact (TF32 off, as the reference runs). No starting kernel:
# the brain starts from its first kernel. The inputs are made on the default device (the
# harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 96, 11, stride=4, padding=2)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(256, 3, 224, 224)]


def get_init_inputs():
    return []
