# 94_layernorm_multidim_fp32: LayerNorm over the last three dims (features, height, width), elementwise affine, fp32.
# x: 72 x 63 x 255 x 257 fp32, normalized over (63, 255, 257); weight, bias: 63 x 255 x 257 fp32.
# H200 floor: 2.41 GB moved -> 0.56 ms; floor 0.56 ms (memory bound).
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


N = _s(72, 3)
FEATURES = _s(63, 5)
H = _s(255, 7)
W = _s(257, 9)


class Model(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(N, FEATURES, H, W, dtype=torch.float32, device=device)
    return [x]


def get_init_inputs():
    return [(FEATURES, H, W)]
