# kagent-template: conv_transpose2d
# Transposed 2-D convolution (nn.ConvTranspose2d, NCHW, groups = 1) as an implicit GEMM
# with tl.dot: output pixels are the M rows, output channels the N columns, and the
# reduction runs over the window taps and the input channels in BLOCK_K chunks. Output
# (oh, ow) takes input (ih, iw) = ((oh + PH - kh*DH) / SH, (ow + PW - kw*DW) / SW) through
# tap (kh, kw) when both divisions are exact and in range. The exactness depends only on
# the output's phase (oh % SH, ow % SW), so the output pixels are split into the SH*SW
# phases: a program owns one tile of one phase, runs only that phase's taps (about
# KH*KW / (SH*SW) of them, no tl.dot on taps that are masked for every row) and gathers
# its A tiles from the input with bounds masks (no col2im buffer, no atomics: every output
# element is written once, by one program, deterministic). B tiles come from the weight
# (C_in, C_out, KH, KW), permuted once per call to (KH, KW, C_in, C_out) so they load
# along C_out. fp32 accumulation; grouped program order (GROUP_M) inside a phase.
import math
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
_INT64_FROM = 2 ** 31  # tensors spanning this many elements need 64-bit offsets


@triton.jit
def conv_transpose2d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, H, W, CO, OH, OW, OHP, OWP, MP,
                            sxn, sxc, sxh, sxw, swi, swo, swh, sww,
                            SH, SW, PH, PW, DH, DW, KH, KW,
                            GH, GW, INV_H, INV_W,
                            HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                            UPCAST: tl.constexpr, INT64: tl.constexpr):
    # Offsets in int32 unless a tensor spans 2**31 elements (64-bit pointer arithmetic on
    # the gathered tiles costs registers).
    y_plane = OH * OW
    if INT64:
        sxn = sxn.to(tl.int64)
        sxc = sxc.to(tl.int64)
        sxh = sxh.to(tl.int64)
        sxw = sxw.to(tl.int64)
        swi = swi.to(tl.int64)
        swo = swo.to(tl.int64)
        swh = swh.to(tl.int64)
        sww = sww.to(tl.int64)
        y_plane = y_plane.to(tl.int64)
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(MP, BLOCK_M)
    num_pid_n = tl.cdiv(CO, BLOCK_N)
    phase = pid // (num_pid_m * num_pid_n)
    pid = pid - phase * (num_pid_m * num_pid_n)
    ph = phase // SW
    pw = phase - ph * SW
    {{> grouped_pid}}

    # This phase's taps: kh*DH = ph + PH (mod SH) holds for kh = kh0 + j*STEP_H with
    # STEP_H = SH / GH (GH = gcd(SH, DH)) when GH divides ph + PH, none otherwise; kh0 is
    # the smallest solution, INV_H the inverse of DH / GH modulo STEP_H. kw alike.
    STEP_H = SH // GH
    STEP_W = SW // GW
    rh = (ph + PH) % SH
    rw = (pw + PW) % SW
    kh0 = tl.where(rh % GH == 0, ((rh // GH) * INV_H) % STEP_H, KH)
    kw0 = tl.where(rw % GW == 0, ((rw // GW) * INV_W) % STEP_W, KW)
    nkh = (tl.maximum(KH - kh0, 0) + STEP_H - 1) // STEP_H
    nkw = (tl.maximum(KW - kw0, 0) + STEP_W - 1) // STEP_W
    # Tap j of the phase reads input row i + qh - j*DH/GH for the phase's row i
    # (oh = ph + i*SH); the division is exact (shifted by SH*KH*DH to stay non-negative).
    qh = (ph + PH - kh0 * DH + SH * KH * DH) // SH - KH * DH
    qw = (pw + PW - kw0 * DW + SW * KW * DW) // SW - KW * DW
    dqh = DH // GH
    dqw = DW // GW

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    img = offs_m // (OHP * OWP)
    rem = offs_m % (OHP * OWP)
    i = rem // OWP
    j = rem % OWP
    oh = ph + i * SH
    ow = pw + j * SW
    m_mask = (offs_m < MP) & (oh < OH) & (ow < OW)
    n_mask = offs_n < CO
    # Rows outside the output (ragged tile, short phase) start at input row -1: every tap
    # reads a row <= the first one, so they stay masked without m_mask in the loop.
    ih0 = tl.where(m_mask, i + qh, -1)
    iw0 = j + qw
    x_row = img * sxn + ih0 * sxh + iw0 * sxw
    # y is contiguous (N, CO, OH, OW); -1 marks rows outside the output.
    y_row = tl.where(m_mask, img * (CO * y_plane) + oh * OW + ow, -1)
    w_co = offs_n * swo
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # One flat loop over (tap, channel chunk) so the software pipeline sees every K step.
    num_ck = tl.cdiv(C, BLOCK_K)
    for it in range(0, nkh * nkw * num_ck):
        tap = it // num_ck
        c0 = (it - tap * num_ck) * BLOCK_K
        jh = tap // nkw
        jw = tap - jh * nkw
        ih = ih0 - jh * dqh
        iw = iw0 - jw * dqw
        a_mask_m = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        a_base = x_row - (jh * dqh * sxh + jw * dqw * sxw)
        b_base = w_co + (kh0 + jh * STEP_H) * swh + (kw0 + jw * STEP_W) * sww
        ck = c0 + offs_k
        k_mask = ck < C
        a = tl.load(x_ptr + a_base[:, None] + ck[None, :] * sxc,
                    mask=a_mask_m[:, None] & k_mask[None, :], other=0.0)
        b = tl.load(w_ptr + ck[:, None] * swi + b_base[None, :],
                    mask=k_mask[:, None] & n_mask[None, :], other=0.0)
        if UPCAST:  # Triton's CPU interpreter mis-computes 16-bit tl.dot
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    y_offs = y_row[:, None] + offs_n[None, :] * y_plane
    tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty),
             mask=(y_row >= 0)[:, None] & n_mask[None, :])


{{> ctor_arg}}


{{> pair_as_h}}


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # CTOR torch: the constructor's arguments in nn.ConvTranspose2d order
        # (in_channels, out_channels, kernel_size, stride, padding, output_padding, groups,
        # bias, dilation), what it does not give from the params. CTOR recorded: the layer
        # comes from the params alone (channels, kernel, stride, padding, output_padding,
        # dilation and bias as the recorded aten::convolution had them), whatever the
        # reference's constructor takes: another order, fewer arguments or none. Either way
        # the layer is built like the reference's, so the same seed gives the same weights
        # (stride and the like draw nothing).
        in_channels, out_channels = {{IN_CHANNELS}}, {{OUT_CHANNELS}}
        kernel_size = ({{KERNEL_H}}, {{KERNEL_W}})
        stride = _pair({{STRIDE}}, {{STRIDE_W}})
        padding = _pair({{PADDING}}, {{PADDING_W}})
        output_padding = _pair({{OUTPUT_PADDING}}, {{OUTPUT_PADDING_W}})
        dilation = _pair({{DILATION}}, {{DILATION_W}})
        bias = {{BIAS}}
        groups = 1
        if "{{CTOR}}" == "torch":
            in_channels = _arg(args, kwargs, 0, "in_channels", in_channels)
            out_channels = _arg(args, kwargs, 1, "out_channels", out_channels)
            kernel_size = _arg(args, kwargs, 2, "kernel_size", kernel_size)
            stride = _arg(args, kwargs, 3, "stride", stride)
            padding = _arg(args, kwargs, 4, "padding", padding)
            output_padding = _arg(args, kwargs, 5, "output_padding", output_padding)
            groups = _arg(args, kwargs, 6, "groups", groups)
            bias = _arg(args, kwargs, 7, "bias", bias)
            dilation = _arg(args, kwargs, 8, "dilation", dilation)
        if groups != 1:
            raise NotImplementedError(f"conv_transpose2d: groups must be 1, got {groups}")
        if kwargs.get("padding_mode", "zeros") != "zeros":
            raise NotImplementedError("conv_transpose2d: only padding_mode='zeros'")
        self.conv = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding,
            output_padding=output_padding, groups=1, bias=bool(bias), dilation=dilation)

    def forward(self, x):
        w = self.conv.weight
        bias = self.conv.bias
        N, C, H, W = x.shape
        _, CO, KH, KW = w.shape
        if C != w.shape[0]:
            raise ValueError(f"conv_transpose2d: input has {C} channels, the weight {w.shape[0]}")
        (SH, SW), (PH, PW) = self.conv.stride, self.conv.padding
        (DH, DW), (OPH, OPW) = self.conv.dilation, self.conv.output_padding
        # A constructor may give any stride / dilation (the params' bounds exclude 0); torch
        # refuses non-positive ones at the call, so does this.
        if min(SH, SW) < 1:
            raise RuntimeError(f"conv_transpose2d: non-positive stride is not supported, got {(SH, SW)}")
        if min(DH, DW) < 1:
            raise RuntimeError(f"conv_transpose2d: dilation should be greater than zero, got {(DH, DW)}")
        OH = (H - 1) * SH - 2 * PH + DH * (KH - 1) + OPH + 1
        OW = (W - 1) * SW - 2 * PW + DW * (KW - 1) + OPW + 1
        y = torch.empty((N, CO, OH, OW), device=x.device, dtype=x.dtype)
        if y.numel() == 0:
            return y
        # (KH, KW, C_in, C_out), contiguous, in x's dtype (one copy): B tiles load along C_out.
        w = torch.empty((KH, KW, C, CO), device=x.device, dtype=x.dtype).copy_(w.permute(2, 3, 0, 1))
        OHP, OWP = triton.cdiv(OH, SH), triton.cdiv(OW, SW)
        MP = N * OHP * OWP  # output pixels of one phase, rounded up
        BLOCK_M = {{BLOCK_M}}
        BLOCK_N = {{BLOCK_N}}
        BLOCK_K = {{BLOCK_K}}
        GROUP_M = {{GROUP_M}}
        grid = (SH * SW * triton.cdiv(MP, BLOCK_M) * triton.cdiv(CO, BLOCK_N),)
        extent = 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride()))
        int64 = max(extent, y.numel(), w.numel()) >= _INT64_FROM
        gh, gw = math.gcd(SH, DH), math.gcd(SW, DW)
        inv_h, inv_w = pow(DH // gh, -1, SH // gh), pow(DW // gw, -1, SW // gw)
        conv_transpose2d_kernel[grid](
            x, w, bias if bias is not None else w, y, C, H, W, CO, OH, OW, OHP, OWP, MP,
            x.stride(0), x.stride(1), x.stride(2), x.stride(3),
            w.stride(2), w.stride(3), w.stride(0), w.stride(1),
            SH, SW, PH, PW, DH, DW, KH, KW, gh, gw, inv_h, inv_w,
            HAS_BIAS=bias is not None, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
            GROUP_M=GROUP_M, INPUT_PRECISION="{{INPUT_PRECISION}}",
            UPCAST=_INTERPRETED and x.dtype != torch.float32, INT64=int64,
            num_warps={{num_warps}}, num_stages={{num_stages}})
        return y
