# 042_max_pool2d_fp32: nn.MaxPool2d(4, stride=1, padding=1). KernelBench level 1's problem 42
# at its sizes, fp32, exact (TF32 off, as the reference runs). No starting kernel: the brain
# starts from its first kernel. The inputs are made on the default device (the harness makes
# it the GPU).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=4, stride=1, padding=1, dilation=1)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.rand(32, 64, 512, 512)]


def get_init_inputs():
    return []
