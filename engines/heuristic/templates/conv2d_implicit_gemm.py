# kagent-template: conv2d_implicit_gemm
# 2-D convolution (NCHW, groups >= 1) as an implicit GEMM: output pixels (n, oh, ow) are
# the M rows, output channels the N columns, and the reduction runs over the KH*KW
# window taps and the input channels in BLOCK_K chunks (one flat loop). Each
# A tile is gathered straight from the input (padding by masks, no im2col buffer), each B
# tile is a slice of the weight, multiplied with tl.dot into an fp32 accumulator. Grouped
# program order (GROUP_M) keeps the weight tiles shared by neighbouring pixel tiles in L2.
# Grouped convolution (groups = G): each group is an independent implicit GEMM with
# K = (C/G)*KH*KW and N = CO/G, on the grid's second axis; a program adds its group's
# offset once to the per-row input offsets and per-column channel indices it computes
# anyway, so the K loop is the groups = 1 loop over C/G channels, and no tile straddles
# two groups (BLOCK_N is masked to CO/G). Depthwise convolutions (groups = C) run here
# correctly but belong to conv2d_depthwise.
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
_INT64_FROM = 2 ** 31  # tensors spanning this many elements need 64-bit offsets


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, CG, H, W, CO, COG, OH, OW, M,
                  sxn, sxc, sxh, sxw, swo, swc, swh, sww,
                  SH, SW, PH, PW, DH, DW, KH, KW,
                  HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                  INT64: tl.constexpr):
    # Offsets in int32 unless a tensor spans 2**31 elements: 64-bit pointer arithmetic on
    # the gathered tiles costs registers (spills at 128-wide tiles).
    y_plane = OH * OW
    if INT64:
        sxn = sxn.to(tl.int64)
        sxc = sxc.to(tl.int64)
        sxh = sxh.to(tl.int64)
        sxw = sxw.to(tl.int64)
        swo = swo.to(tl.int64)
        swc = swc.to(tl.int64)
        swh = swh.to(tl.int64)
        sww = sww.to(tl.int64)
        y_plane = y_plane.to(tl.int64)
    # CG, COG: input and output channels per group (C and CO when groups = 1). Grid axis 1
    # is the group g: offs_n counts channels within the group (masked to COG, so no tile
    # straddles two groups) and the group's offset enters once, in x_img and co below;
    # the K loop is the groups = 1 loop over CG channels. (Moving the four base pointers
    # instead costs 26 registers at fp32 64x64x32 on sm_90: 146 against 120.)
    g = tl.program_id(1)
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(COG, BLOCK_N)
    {{> grouped_pid}}

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < COG
    img = offs_m // (OH * OW)
    pix = offs_m % (OH * OW)
    oh = pix // OW
    ow = pix % OW
    co = g * COG + offs_n  # output channel
    x_img = img * sxn + g * CG * sxc
    w_co = co * swo
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # One flat loop over (tap, channel chunk) so the software pipeline sees every K step.
    num_ck = tl.cdiv(CG, BLOCK_K)
    for it in range(0, KH * KW * num_ck):
        tap = it // num_ck
        c0 = (it - tap * num_ck) * BLOCK_K
        kh = tap // KW
        kw = tap - kh * KW
        ih = oh * SH - PH + kh * DH
        iw = ow * SW - PW + kw * DW
        a_mask_m = m_mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a_base = x_img + ih * sxh + iw * sxw
        b_base = w_co + kh * swh + kw * sww
        {{> conv_gather_dot}}
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    # y is contiguous (N, CO, OH, OW); y_ptr points at this group's first channel.
    y_offs = (img * (CO * y_plane) + pix)[:, None] + co[None, :] * y_plane
    tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty),
             mask=m_mask[:, None] & n_mask[None, :])


{{> ctor_arg}}


{{> pair_as_h}}


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # CTOR recorded (the brain's choice where the signature records aten::convolution's
        # scalars): the layer comes from the params alone (channels, kernel, stride,
        # padding, dilation, groups and bias as the recorded op had them), whatever the
        # reference's constructor takes (KernelBench: (num_classes), (in, out) for a 1x1
        # conv, (in, out, kernel, stride, padding, dilation, bias), ...). CTOR torch: the
        # constructor's arguments in nn.Conv2d order (in_channels, out_channels,
        # kernel_size, stride, padding, dilation, groups, bias), what it omits from the
        # params. Either way nn.Conv2d is built like the reference's, so the same seed
        # gives the same weights (stride and the like draw nothing).
        stride = _pair({{STRIDE}}, {{STRIDE_W}})
        padding = _pair({{PADDING}}, {{PADDING_W}})
        dilation = _pair({{DILATION}}, {{DILATION_W}})
        groups = {{GROUPS}}
        bias = {{BIAS}}
        if "{{CTOR}}" == "torch":
            in_channels = _arg(args, kwargs, 0, "in_channels", None)
            out_channels = _arg(args, kwargs, 1, "out_channels", None)
            kernel_size = _arg(args, kwargs, 2, "kernel_size", None)
            stride = _arg(args, kwargs, 3, "stride", stride)
            padding = _arg(args, kwargs, 4, "padding", padding)
            dilation = _arg(args, kwargs, 5, "dilation", dilation)
            groups = _arg(args, kwargs, 6, "groups", groups)
            bias = _arg(args, kwargs, 7, "bias", bias)
            if None in (in_channels, out_channels, kernel_size):
                raise TypeError("conv2d_implicit_gemm (CTOR torch): the constructor gives no "
                                "in_channels, out_channels and kernel_size in nn.Conv2d order")
        else:
            in_channels, out_channels = {{IN_CHANNELS}}, {{OUT_CHANNELS}}
            kernel_size = ({{KERNEL_H}}, {{KERNEL_W}})
        if kwargs.get("padding_mode", "zeros") != "zeros":
            raise NotImplementedError("conv2d_implicit_gemm: only padding_mode='zeros'")
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, groups=groups,
                              bias=bool(bias))
        if isinstance(self.conv.padding, str):
            raise NotImplementedError("conv2d_implicit_gemm: string padding is not supported")

    def forward(self, x):
        w = self.conv.weight
        bias = self.conv.bias
        N, C, H, W = x.shape
        CO, CG, KH, KW = w.shape
        G = self.conv.groups
        COG = CO // G
        if C != CG * G:
            raise ValueError(f"conv2d_implicit_gemm: {C} input channels, the weight wants {CG * G}")
        (SH, SW), (PH, PW), (DH, DW) = self.conv.stride, self.conv.padding, self.conv.dilation
        OH = (H + 2 * PH - DH * (KH - 1) - 1) // SH + 1
        OW = (W + 2 * PW - DW * (KW - 1) - 1) // SW + 1
        y = torch.empty((N, CO, OH, OW), device=x.device, dtype=x.dtype)
        M = N * OH * OW
        if y.numel() == 0:
            return y
        if w.dtype != x.dtype:
            w = w.to(x.dtype)
        BLOCK_M = {{BLOCK_M}}
        BLOCK_N = {{BLOCK_N}}
        BLOCK_K = {{BLOCK_K}}
        GROUP_M = {{GROUP_M}}
        if G > 65535:  # grid axis 1 limit; such a conv is depthwise in practice
            raise NotImplementedError("conv2d_implicit_gemm: more than 65535 groups")
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(COG, BLOCK_N), G)
        extent = 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride()))
        int64 = max(extent, y.numel(), w.numel()) >= _INT64_FROM
        conv2d_kernel[grid](
            x, w, bias if bias is not None else w, y, CG, H, W, CO, COG, OH, OW, M,
            x.stride(0), x.stride(1), x.stride(2), x.stride(3),
            w.stride(0), w.stride(1), w.stride(2), w.stride(3),
            SH, SW, PH, PW, DH, DW, KH, KW,
            HAS_BIAS=bias is not None, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
            GROUP_M=GROUP_M, INPUT_PRECISION="{{INPUT_PRECISION}}",
            UPCAST=_INTERPRETED and x.dtype != torch.float32, INT64=int64,
            num_warps={{num_warps}}, num_stages={{num_stages}})
        return y
