# 87_conv2d_depthwise_strided_asymmetric_fp32: Depthwise Conv2d kernel (3, 7), stride (2, 1), padding (1, 3), 64 channels, with bias, fp32; the constructor takes every size per dim (kernel_size_h, kernel_size_w, stride_h, ...).
# x: 48 x 64 x 400 x 300 fp32, weight 64 x 1 x 3 x 7, bias 64; output 48 x 64 x 200 x 300.
# H200 floor: 2.21 GB moved -> 0.51 ms; 7.7 GFLOP -> 0.12 ms; floor 0.51 ms (memory bound).
# (4.3 TB/s copy bandwidth; 67 TFLOP/s fp32 FMA; 989 TFLOP/s bf16 tensor cores).
# KAGENT_PROBLEM_SCALE (a divisor, default 1) shrinks the big dimensions so the CPU tests
# can run every problem under Triton's interpreter. The harness seeds; this file never does.
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

SCALE = max(1, int(os.environ.get("KAGENT_PROBLEM_SCALE", "1")))


def _s(n, floor):
    """n divided by KAGENT_PROBLEM_SCALE, at least floor."""
    return max(floor, n // SCALE)


# Exact fp32 convolutions in the reference (cuDNN would use TF32 by default).
torch.backends.cudnn.allow_tf32 = False

N = _s(48, 1)
CHANNELS = _s(64, 6)
H = _s(400, 11)
W = _s(300, 13)


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size_h, kernel_size_w, stride_h=1,
                 stride_w=1, padding_h=0, padding_w=0, dilation_h=1, dilation_w=1, groups=1,
                 bias=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, in_channels, (kernel_size_h, kernel_size_w),
                              stride=(stride_h, stride_w), padding=(padding_h, padding_w),
                              dilation=(dilation_h, dilation_w), groups=in_channels, bias=bias)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, CHANNELS, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [CHANNELS, CHANNELS, 3, 7, 2, 1, 1, 3, 1, 1, CHANNELS, True]
