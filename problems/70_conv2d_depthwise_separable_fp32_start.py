# Starting kernel for 70_conv2d_depthwise_separable_fp32: two kernels, the depthwise output written to memory; the pointwise one a scalar FMA loop over the channels.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def depthwise_kernel(x_ptr, w_ptr, y_ptr, C, H, W, OH, OW, KSIZE: tl.constexpr,
                     STRIDE: tl.constexpr, PAD: tl.constexpr, DIL: tl.constexpr,
                     BLOCK: tl.constexpr):
    # One program per (plane = n * C + c, BLOCK output pixels).
    plane = tl.program_id(0)
    c = plane % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < OH * OW
    oh = offs // OW
    ow = offs % OW
    x_base = plane.to(tl.int64) * H * W
    acc = tl.zeros([BLOCK], tl.float32)
    for kh in tl.static_range(KSIZE):
        for kw in tl.static_range(KSIZE):
            ih = oh * STRIDE - PAD + kh * DIL
            iw = ow * STRIDE - PAD + kw * DIL
            valid = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x = tl.load(x_ptr + x_base + ih * W + iw, mask=valid, other=0.0).to(tl.float32)
            acc += x * tl.load(w_ptr + c * KSIZE * KSIZE + kh * KSIZE + kw).to(tl.float32)
    tl.store(y_ptr + plane.to(tl.int64) * OH * OW + offs, acc, mask=mask)


@triton.jit
def pointwise_kernel(x_ptr, w_ptr, y_ptr, C, CO, P, BLOCK: tl.constexpr):
    # One program per (n * CO + co, BLOCK pixels): y[n, co, p] = sum_c w[co, c] * x[n, c, p].
    row = tl.program_id(0)
    n = row // CO
    co = row % CO
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < P
    acc = tl.zeros([BLOCK], tl.float32)
    for c in range(0, C):
        x = tl.load(x_ptr + (n * C + c).to(tl.int64) * P + offs, mask=mask, other=0.0)
        acc += x * tl.load(w_ptr + co * C + c)
    tl.store(y_ptr + row.to(tl.int64) * P + offs, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 bias=False):
        super().__init__()
        if bias:
            raise NotImplementedError("this starting kernel has no biases")
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride,
                                   padding=padding, dilation=dilation, groups=in_channels,
                                   bias=False)
        self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False)

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        K = self.depthwise.kernel_size[0]
        S, P, D = self.depthwise.stride[0], self.depthwise.padding[0], self.depthwise.dilation[0]
        OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
        OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
        mid = torch.empty((N, C, OH, OW), device=x.device, dtype=torch.float32)
        depthwise_kernel[(N * C, triton.cdiv(OH * OW, 1024))](
            x, self.depthwise.weight.contiguous(), mid, C, H, W, OH, OW, KSIZE=K, STRIDE=S,
            PAD=P, DIL=D, BLOCK=1024, num_warps=4)
        CO = self.pointwise.out_channels
        y = torch.empty((N, CO, OH, OW), device=x.device, dtype=x.dtype)
        pointwise_kernel[(N * CO, triton.cdiv(OH * OW, 1024))](
            mid, self.pointwise.weight.reshape(CO, C).contiguous(), y, C, CO, OH * OW,
            BLOCK=1024, num_warps=4)
        return y
