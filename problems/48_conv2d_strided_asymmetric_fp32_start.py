# Starting kernel for 48_conv2d_strided_asymmetric_fp32: direct convolution, 64 pixels x 64 output channels per program, scalar loops over the KH x KW taps and input channels (outer products, no tl.dot), bias added.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, H, W, OC, OH, OW,
                  KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
                  PH: tl.constexpr, PW: tl.constexpr,
                  BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr):
    # A BLOCK_P pixels x BLOCK_OC output channels tile per program; per tap and input channel,
    # one outer product of BLOCK_P inputs and BLOCK_OC weights, fp32; then the bias.
    pid_p = tl.program_id(0)
    pid_oc = tl.program_id(1)
    n = tl.program_id(2).to(tl.int64)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    pmask = offs_p < OH * OW
    oh = offs_p // OW
    ow = offs_p % OW
    offs_oc = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    ocmask = offs_oc < OC
    x_n = x_ptr + n * C * H * W
    acc = tl.zeros([BLOCK_P, BLOCK_OC], tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        for kw in tl.static_range(KW):
            iw = ow * SW - PW + kw
            valid = pmask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x_ptrs = x_n + tl.where(valid, ih * W + iw, 0)
            w_ptrs = w_ptr + offs_oc * (C * KH * KW) + kh * KW + kw
            for c in range(0, C):
                xv = tl.load(x_ptrs, mask=valid, other=0.0)
                wv = tl.load(w_ptrs, mask=ocmask, other=0.0)
                acc += xv[:, None] * wv[None, :]
                x_ptrs += H * W
                w_ptrs += KH * KW
    acc += tl.load(b_ptr + offs_oc, mask=ocmask, other=0.0)[None, :]
    y_ptrs = y_ptr + n * OC * OH * OW + offs_oc[None, :] * OH * OW + offs_p[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=pmask[:, None] & ocmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, bias=True)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        N, C, H, W = x.shape
        OC, _, KH, KW = w.shape
        SH, SW = self.conv.stride
        PH, PW = self.conv.padding
        OH = (H + 2 * PH - KH) // SH + 1
        OW = (W + 2 * PW - KW) // SW + 1
        y = torch.empty((N, OC, OH, OW), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OH * OW, 64), triton.cdiv(OC, 64), N)
        conv2d_kernel[grid](x, w, self.conv.bias, y, C, H, W, OC, OH, OW,
                            KH=KH, KW=KW, SH=SH, SW=SW, PH=PH, PW=PW,
                            BLOCK_P=64, BLOCK_OC=64, num_warps=4)
        return y
