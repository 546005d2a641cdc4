# 099_triplet_margin_loss_fp32: nn.TripletMarginLoss(margin=1.0). KernelBench level 1's
# problem 99 at its sizes, fp32, exact (TF32 off, as the reference runs). No starting kernel:
# the brain starts from its first kernel. The inputs are made on the default device (the
# harness makes it the GPU).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = nn.TripletMarginLoss(margin=1.0)

    def forward(self, anchor, positive, negative):
        return self.loss(anchor, positive, negative)


def get_inputs():
    shape = (32768, 8192)
    return [torch.rand(shape) * torch.rand(()), torch.rand(shape), torch.rand(shape)]


def get_init_inputs():
    return []
