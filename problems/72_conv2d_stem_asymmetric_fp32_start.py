# Starting kernel for 72_conv2d_stem_asymmetric_fp32: a direct convolution, one program per (image, 64 output pixels) for every output channel, an outer-product FMA per (input channel, tap).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, H, W, CO, OH, OW,
                KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
                PH: tl.constexpr, PW: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
                BLOCK: tl.constexpr, BLOCK_CO: tl.constexpr):
    n = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    co = tl.arange(0, BLOCK_CO)
    mask = offs < OH * OW
    co_mask = co < CO
    oh = offs // OW
    ow = offs % OW
    acc = tl.zeros([BLOCK, BLOCK_CO], tl.float32)
    for c in range(0, C):
        x_base = (n * C + c).to(tl.int64) * H * W
        for kh in range(KH):
            ih = oh * SH - PH + kh * DH
            for kw in range(KW):
                iw = ow * SW - PW + kw * DW
                valid = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
                x = tl.load(x_ptr + x_base + ih * W + iw, mask=valid, other=0.0)
                w = tl.load(w_ptr + ((co * C + c) * KH + kh) * KW + kw, mask=co_mask, other=0.0)
                acc += x[:, None] * w[None, :]
    acc += tl.load(b_ptr + co, mask=co_mask, other=0.0)[None, :]
    y_offs = (n * CO + co[None, :]).to(tl.int64) * OH * OW + offs[:, None]
    tl.store(y_ptr + y_offs, acc, mask=mask[:, None] & co_mask[None, :])


class ModelNew(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=96, kernel_size=(11, 7), stride=(4, 2),
                               padding=(2, 3), dilation=(1, 2))

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        conv = self.conv1
        CO = conv.out_channels
        (KH, KW), (SH, SW), (PH, PW), (DH, DW) = (conv.kernel_size, conv.stride, conv.padding,
                                                  conv.dilation)
        OH = (H + 2 * PH - DH * (KH - 1) - 1) // SH + 1
        OW = (W + 2 * PW - DW * (KW - 1) - 1) // SW + 1
        y = torch.empty((N, CO, OH, OW), device=x.device, dtype=x.dtype)
        conv_kernel[(N, triton.cdiv(OH * OW, 64))](
            x, conv.weight.contiguous(), conv.bias, y, C, H, W, CO, OH, OW, KH=KH, KW=KW,
            SH=SH, SW=SW, PH=PH, PW=PW, DH=DH, DW=DW, BLOCK=64,
            BLOCK_CO=triton.next_power_of_2(CO), num_warps=4)
        return y
