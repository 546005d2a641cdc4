# 098_kl_div_fp32: F.kl_div(log(p), t, reduction='batchmean') over softmax rows. KernelBench
# level 1's problem 98 at its sizes, fp32, exact (TF32 off, as the reference runs). No
# starting kernel: the brain starts from its first kernel. The inputs are made on the default
# device (the harness makes it the GPU).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return F.kl_div(torch.log(predictions), targets, reduction="batchmean")


def get_inputs():
    predictions = (torch.rand(16384, 16384) * torch.rand(())).softmax(dim=-1)
    return [predictions, torch.rand(16384, 16384).softmax(dim=-1)]


def get_init_inputs():
    return []
