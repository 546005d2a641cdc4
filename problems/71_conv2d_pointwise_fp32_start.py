# Starting kernel for 71_conv2d_pointwise_fp32: one program per (image, output channel, 1024 pixels), a scalar FMA loop over the input channels.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pointwise_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, CO, P, HAS_BIAS: tl.constexpr,
                     BLOCK: tl.constexpr):
    # y[n, co, p] = sum_c w[co, c] * x[n, c, p] (+ b[co]); program (n * CO + co, pixel block).
    row = tl.program_id(0)
    n = row // CO
    co = row % CO
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < P
    acc = tl.zeros([BLOCK], tl.float32)
    for c in range(0, C):
        x = tl.load(x_ptr + (n * C + c).to(tl.int64) * P + offs, mask=mask, other=0.0)
        acc += x.to(tl.float32) * tl.load(w_ptr + co * C + c).to(tl.float32)
    if HAS_BIAS:
        acc += tl.load(b_ptr + co).to(tl.float32)
    tl.store(y_ptr + row.to(tl.int64) * P + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0,
                              bias=bias)

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        CO = self.conv.out_channels
        y = torch.empty((N, CO, H, W), device=x.device, dtype=x.dtype)
        w = self.conv.weight.reshape(CO, C).contiguous()
        b = self.conv.bias
        pointwise_kernel[(N * CO, triton.cdiv(H * W, 1024))](
            x, w, b if b is not None else w, y, C, CO, H * W, HAS_BIAS=b is not None,
            BLOCK=1024, num_warps=4)
        return y
