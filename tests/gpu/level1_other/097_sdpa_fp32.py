# 097_sdpa_fp32: F.scaled_dot_product_attention, 32 x 32 heads, 512 tokens, head dim 1024.
# KernelBench level 1's problem 97 at its sizes, fp32, exact (TF32 off, as the reference
# runs). No starting kernel: the brain starts from its first kernel. The inputs are made on
# the default device (the harness makes it the GPU).
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    shape = (32, 32, 512, 1024)
    return [torch.rand(shape), torch.rand(shape), torch.rand(shape)]


def get_init_inputs():
    return []
