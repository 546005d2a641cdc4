# kagent-template: conv2d_depthwise_separable
# Depthwise-separable 2-D convolution (NCHW): a depthwise conv (groups = C, C * MULT
# channels, KH x KW taps, any stride, padding and dilation per dim) followed by a pointwise
# 1x1 conv (C * MULT -> CO channels), fused into one kernel so the intermediate never goes
# to memory. Grid (N * cdiv(OH*OW, BLOCK_P) * cdiv(CO, BLOCK_CO),): each program owns
# BLOCK_P output pixels of one image and BLOCK_CO output channels; it walks the
# intermediate channels in BLOCK_C chunks: the depthwise outputs of the chunk (BLOCK_P x
# BLOCK_C, the KW taps of each row unrolled, padding by masks, fp32) are rounded to the input dtype as the
# reference's intermediate tensor is, then multiplied by the pointwise weights' BLOCK_C x
# BLOCK_CO slice with tl.dot into an fp32 accumulator. Neighbouring programs share an
# image's pixels (the CO tiles of one pixel tile are adjacent), so the input is read from
# DRAM about once; with CO > BLOCK_CO the depthwise stage is recomputed per CO tile (KH*KW
# MACs per intermediate element against BLOCK_CO for the pointwise stage).
# The layers are built from the recorded shapes and scalars and named depthwise and
# pointwise (KernelBench's names, so the reference's state_dict loads where it has them),
# in the reference's order, so the harness's seed gives the reference's weights.
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def dwsep_kernel(x_ptr, wd_ptr, bd_ptr, wp_ptr, bp_ptr, y_ptr, CM, H, W, CO, OH, OW,
                 sxn, sxc, sxh, sxw, swo, swc, tiles_p, tiles_co,
                 SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                 DH: tl.constexpr, DW: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                 MULT: tl.constexpr, DW_BIAS: tl.constexpr, PW_BIAS: tl.constexpr,
                 BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_CO: tl.constexpr,
                 INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    pid = tl.program_id(0)
    per_img = tiles_p * tiles_co
    n = pid // per_img
    rem = pid % per_img
    pid_p = rem // tiles_co
    pid_co = rem % tiles_co
    P = OH * OW
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_co = pid_co * BLOCK_CO + tl.arange(0, BLOCK_CO)
    p_mask = offs_p < P
    co_mask = offs_co < CO
    oh = offs_p // OW
    ow = offs_p % OW
    x_img = x_ptr + n.to(tl.int64) * sxn
    acc = tl.zeros((BLOCK_P, BLOCK_CO), dtype=tl.float32)
    for c0 in range(0, CM, BLOCK_C):
        offs_c = c0 + tl.arange(0, BLOCK_C)
        c_mask = offs_c < CM
        x_c = (offs_c // MULT).to(tl.int64) * sxc  # intermediate channel j reads input j / MULT
        dw = tl.zeros((BLOCK_P, BLOCK_C), dtype=tl.float32)
        # kh a loop, kw unrolled: unrolling both lets the compiler hoist every tap's load
        # (a 7x7 kernel spilled 1.6 KB a thread and wanted 428 KB of shared memory on
        # sm_90 at 64 x 16 x 128; compile_sm90.py).
        for kh in range(KH):
            ih = oh * SH - PH + kh * DH
            h_ok = p_mask & (ih >= 0) & (ih < H)
            for kw in tl.static_range(KW):
                iw = ow * SW - PW + kw * DW
                m = h_ok & (iw >= 0) & (iw < W)
                v = tl.load(x_img + (ih * sxh + iw * sxw)[:, None] + x_c[None, :],
                            mask=m[:, None] & c_mask[None, :], other=0.0)
                wt = tl.load(wd_ptr + offs_c * (KH * KW) + (kh * KW + kw), mask=c_mask, other=0.0)
                dw += v.to(tl.float32) * wt.to(tl.float32)[None, :]
        if DW_BIAS:
            dw += tl.load(bd_ptr + offs_c, mask=c_mask, other=0.0).to(tl.float32)[None, :]
        a = dw.to(y_ptr.dtype.element_ty)  # the reference's intermediate tensor's rounding
        b = tl.load(wp_ptr + offs_c[:, None] * swc + offs_co[None, :] * swo,
                    mask=c_mask[:, None] & co_mask[None, :], other=0.0)
        if UPCAST:  # Triton's CPU interpreter mis-computes 16-bit tl.dot
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    if PW_BIAS:
        acc += tl.load(bp_ptr + offs_co, mask=co_mask, other=0.0).to(tl.float32)[None, :]
    y_offs = (n.to(tl.int64) * CO * P + offs_co[None, :].to(tl.int64) * P) + offs_p[:, None]
    tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty),
             mask=p_mask[:, None] & co_mask[None, :])


{{> pair_as_h}}


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # The recorded op's layers, whatever the reference's constructor takes; built in
        # the reference's order (depthwise first) so the seed draws the same weights.
        channels = {{CHANNELS}}
        self.depthwise = nn.Conv2d(
            channels, channels * {{MULT}}, ({{KH}}, {{KW}}),
            stride=_pair({{STRIDE}}, {{STRIDE_W}}), padding=_pair({{PADDING}}, {{PADDING_W}}),
            dilation=_pair({{DILATION}}, {{DILATION_W}}), groups=channels, bias={{DW_BIAS}})
        self.pointwise = nn.Conv2d(channels * {{MULT}}, {{OUT_CHANNELS}}, 1, bias={{PW_BIAS}})

    def forward(self, x):
        if x.dim() != 4:
            raise ValueError(f"conv2d_depthwise_separable: a rank-{x.dim()} input, NCHW wanted")
        wd = self.depthwise.weight
        bd = self.depthwise.bias
        wp = self.pointwise.weight
        bp = self.pointwise.bias
        N, C, H, W = x.shape
        CM, _, KH, KW = wd.shape
        CO = wp.shape[0]
        if C != self.depthwise.in_channels:
            raise ValueError(f"conv2d_depthwise_separable: {C} input channels, the layer wants "
                             f"{self.depthwise.in_channels}")
        (SH, SW), (PH, PW) = self.depthwise.stride, self.depthwise.padding
        DH, DW = self.depthwise.dilation
        OH = (H + 2 * PH - DH * (KH - 1) - 1) // SH + 1
        OW = (W + 2 * PW - DW * (KW - 1) - 1) // SW + 1
        y = torch.empty((N, CO, OH, OW), device=x.device, dtype=x.dtype)
        if y.numel() == 0:
            return y
        wd = wd.to(x.dtype).contiguous()
        wp = wp.to(x.dtype).reshape(CO, CM)
        BLOCK_P = {{BLOCK_P}}
        BLOCK_C = {{BLOCK_C}}
        BLOCK_CO = {{BLOCK_CO}}
        tiles_p = triton.cdiv(OH * OW, BLOCK_P)
        tiles_co = triton.cdiv(CO, BLOCK_CO)
        grid = (N * tiles_p * tiles_co,)
        dwsep_kernel[grid](
            x, wd, bd if bd is not None else wd, wp, bp if bp is not None else wp, y,
            CM, H, W, CO, OH, OW, x.stride(0), x.stride(1), x.stride(2), x.stride(3),
            wp.stride(0), wp.stride(1), tiles_p, tiles_co,
            SH=SH, SW=SW, PH=PH, PW=PW, DH=DH, DW=DW, KH=KH, KW=KW, MULT=CM // C,
            DW_BIAS=bd is not None, PW_BIAS=bp is not None, BLOCK_P=BLOCK_P, BLOCK_C=BLOCK_C,
            BLOCK_CO=BLOCK_CO, INPUT_PRECISION="{{INPUT_PRECISION}}",
            UPCAST=_INTERPRETED and x.dtype != torch.float32,
            num_warps={{num_warps}}, num_stages={{num_stages}})
        return y
