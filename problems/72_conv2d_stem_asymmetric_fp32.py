# 72_conv2d_stem_asymmetric_fp32: a classifier's stem Conv2d 3 -> 96 channels, kernel (11, 7), stride (4, 2), padding (2, 3), dilation (1, 2), with bias, fp32; the constructor takes only num_classes.
# x: 256 x 3 x 224 x 224 fp32, weight 96 x 3 x 11 x 7, bias 96; output 256 x 96 x 55 x 109.
# H200 floor: 0.74 GB moved -> 0.17 ms; 68.1 GFLOP -> 1.02 ms; floor 1.02 ms (compute bound).
# (4.3 TB/s copy bandwidth; 67 TFLOP/s fp32 FMA; 989 TFLOP/s bf16 tensor cores).
# KAGENT_PROBLEM_SCALE (a divisor, default 1) shrinks the big dimensions so the CPU tests
# can run every problem under Triton's interpreter. The harness seeds; this file never does.
import os

import torch
import torch.nn as nn

SCALE = max(1, int(os.environ.get("KAGENT_PROBLEM_SCALE", "1")))


def _s(n, floor):
    """n divided by KAGENT_PROBLEM_SCALE, at least floor."""
    return max(floor, n // SCALE)


# Exact fp32 convolutions in the reference (cuDNN would use TF32 by default).
torch.backends.cudnn.allow_tf32 = False

N = _s(256, 1)
H = _s(224, 23)
W = _s(224, 29)
NUM_CLASSES = 1000


class Model(nn.Module):
    """The first layer of an image classifier: its constructor takes the class count (unused
    here), the convolution's arguments are fixed inside, per dim (KernelBench level 1 writes
    its AlexNet stem this way)."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=96, kernel_size=(11, 7), stride=(4, 2),
                               padding=(2, 3), dilation=(1, 2))

    def forward(self, x):
        return self.conv1(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, 3, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [NUM_CLASSES]
