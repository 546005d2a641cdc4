# 040_layer_norm_fp32: nn.LayerNorm over the last three dims (64, 256, 256). KernelBench level
# 1's problem 40 at its sizes, fp32, exact (TF32 off, as the reference runs). No starting
# kernel: the brain starts from its first kernel. The inputs are made on the default device
# (the harness makes it the GPU).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm((64, 256, 256))

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.rand(16, 64, 256, 256)]


def get_init_inputs():
    return []
