# kagent-template: conv2d_depthwise
# Depthwise 2-D convolution (NCHW, groups = in_channels, CHANNELS * MULT output channels):
# a direct stencil, no GEMM. Grid (N*CO * cdiv(OH, BLOCK_H) * cdiv(OW, BLOCK_W),): each
# program computes a BLOCK_H x BLOCK_W output tile of one output channel; the KH x KW taps
# are unrolled, each a masked load of the tile's inputs (padding by masks; neighbouring
# taps share cache lines) times one scalar weight, accumulated in fp32; bias added at the
# end. The layer is built from the recorded shapes and scalars (nn.Conv2d with the
# reference's channels, kernel, stride, padding, dilation, groups and bias), so the
# harness's seed gives the reference's weights whatever order the constructor takes its
# arguments in.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def dwconv_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, H, W, CO, OH, OW,
                  sxn, sxc, sxh, sxw, tiles_h, tiles_w,
                  SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                  DH: tl.constexpr, DW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                  MULT: tl.constexpr, HAS_BIAS: tl.constexpr,
                  BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    pid = tl.program_id(0)
    plane = pid // (tiles_h * tiles_w)
    tile = pid % (tiles_h * tiles_w)
    oh = (tile // tiles_w) * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = (tile % tiles_w) * BLOCK_W + tl.arange(0, BLOCK_W)
    n = plane // CO
    co = plane % CO
    ci = co // MULT
    base = n.to(tl.int64) * sxn + ci.to(tl.int64) * sxc
    out_mask = (oh < OH)[:, None] & (ow < OW)[None, :]
    acc = tl.zeros([BLOCK_H, BLOCK_W], dtype=tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh * DH
        hmask = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KW):
            iw = ow * SW - PW + kw * DW
            m = (hmask[:, None] & ((iw >= 0) & (iw < W))[None, :]) & out_mask
            v = tl.load(x_ptr + base + ih[:, None].to(tl.int64) * sxh + iw[None, :].to(tl.int64) * sxw,
                        mask=m, other=0.0).to(tl.float32)
            wt = tl.load(w_ptr + co * (KH * KW) + kh * KW + kw).to(tl.float32)
            acc += v * wt
    if HAS_BIAS:
        acc += tl.load(b_ptr + co).to(tl.float32)
    y_offs = plane.to(tl.int64) * OH * OW + oh[:, None].to(tl.int64) * OW + ow[None, :]
    tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


{{> pair_as_h}}


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # Constructors of depthwise problems order their arguments differently; the shapes
        # and scalars the brain recorded are unambiguous.
        channels = {{CHANNELS}}
        self.conv = nn.Conv2d(
            channels, channels * {{MULT}}, ({{KH}}, {{KW}}),
            stride=_pair({{STRIDE}}, {{STRIDE_W}}), padding=_pair({{PADDING}}, {{PADDING_W}}),
            dilation=_pair({{DILATION}}, {{DILATION_W}}), groups=channels, bias={{BIAS}})

    def forward(self, x):
        w = self.conv.weight
        bias = self.conv.bias
        N, C, H, W = x.shape
        CO, _, KH, KW = w.shape
        (SH, SW), (PH, PW), (DH, DW) = self.conv.stride, self.conv.padding, self.conv.dilation
        OH = (H + 2 * PH - DH * (KH - 1) - 1) // SH + 1
        OW = (W + 2 * PW - DW * (KW - 1) - 1) // SW + 1
        y = torch.empty((N, CO, OH, OW), device=x.device, dtype=x.dtype)
        if y.numel() == 0:
            return y
        w = w.contiguous()
        BLOCK_H = min({{BLOCK_H}}, triton.next_power_of_2(OH))
        BLOCK_W = min({{BLOCK_W}}, triton.next_power_of_2(OW))
        tiles_h = triton.cdiv(OH, BLOCK_H)
        tiles_w = triton.cdiv(OW, BLOCK_W)
        grid = (N * CO * tiles_h * tiles_w,)
        dwconv_kernel[grid](
            x, w, bias if bias is not None else w, y, C, H, W, CO, OH, OW,
            x.stride(0), x.stride(1), x.stride(2), x.stride(3), tiles_h, tiles_w,
            SH=SH, SW=SW, PH=PH, PW=PW, DH=DH, DW=DW, KH=KH, KW=KW, MULT=CO // C,
            HAS_BIAS=bias is not None, BLOCK_H=BLOCK_H, BLOCK_W=BLOCK_W,
            num_warps={{num_warps}})
        return y
