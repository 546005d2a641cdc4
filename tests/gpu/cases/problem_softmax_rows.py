# Row softmax, fp32 (red-team pair of red_token_softmax.py).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(4096, 4096)]


def get_init_inputs():
    return []
