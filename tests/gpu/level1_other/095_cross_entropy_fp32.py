# 095_cross_entropy_fp32: F.cross_entropy over 4096 classes. KernelBench level 1's problem 95
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

    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)


def get_inputs():
    return [torch.rand(32768, 4096), torch.randint(0, 4096, (32768,))]


def get_init_inputs():
    return []
