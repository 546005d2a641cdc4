# 75_conv_transpose2d_strided_grouped_dilated_fp32: a transposed 2-D convolution, 32 -> 64
# channels in 4 groups, 3 x 5 kernel, stride (2, 3), padding (1, 2), dilation (2, 1), batch 16
# of 128 x 256. KernelBench level 1's convolution problem 75 (transposed), at its sizes, fp32,
# exact (TF32 off, as the reference runs). No starting kernel: the brain starts from its first
# kernel. The inputs are made on the default device (the harness makes it the GPU).
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.ConvTranspose2d(32, 64, (3, 5), stride=(2, 3), padding=(1, 2),
                                       dilation=(2, 1), groups=4, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.rand(16, 32, 128, 256)]


def get_init_inputs():
    return []
