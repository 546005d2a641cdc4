# kagent-template: conv_transpose_nd
# Transposed convolution in 1-D, 2-D and 3-D (nn.ConvTranspose1d/2d/3d, groups >= 1) as a
# phase-split implicit GEMM with tl.dot, in the gradient-of-input form: each output voxel
# gathers the input voxels that reach it (no zero-stuffed input, no col2im buffer, no
# atomics). Output (od, oh, ow) takes input ((od + PD - kd*DD) / SD, (oh + PH - kh*DH) / SH,
# (ow + PW - kw*DW) / SW) through tap (kd, kh, kw) when the three divisions are exact and
# in range; the exactness depends only on the output's phase (od % SD, oh % SH, ow % SW),
# so the output voxels are split into the SD*SH*SW phases and a program owns one tile of
# one phase: it runs only that phase's taps (solved in closed form per dim), gathering its
# A tiles from the input with bounds masks. Output voxels of a phase are the M rows, the
# group's output channels the N columns, the phase's taps x the group's input channels the
# reduction, in BLOCK_K chunks (one flat loop). Groups on the grid's second axis, as in
# conv3d_implicit_gemm. The weight (C_in, C_out/G, *k) is permuted once per call to
# (KD, KH, KW, C_in, C_out/G) so B tiles load along the output channels. 1-D and 2-D run
# as 3-D with unit leading dims (size 1, stride 1, no padding: Triton specializes the unit
# values, and such a dim has one phase and one tap). fp32 accumulation; every output
# element is written once, by one program (deterministic).
import math
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
_INT64_FROM = 2 ** 31  # tensors spanning this many elements need 64-bit offsets


@triton.jit
def _phase_taps(p, S, P, DL, K, G, INV):
    # The taps of phase p along one dim: k*DL = p + P (mod S) holds for k = k0 + j*step
    # (step = S / G, G = gcd(S, DL)) when G divides p + P, for none otherwise (k0 = K);
    # INV is the inverse of DL / G modulo step. Tap j reads input index i + q - j*dq for
    # the phase's index i (output p + i*S); the division is exact (shifted by S*K*DL to
    # stay non-negative).
    step = S // G
    r = (p + P) % S
    k0 = tl.where(r % G == 0, ((r // G) * INV) % step, K)
    nk = (tl.maximum(K - k0, 0) + step - 1) // step
    q = (p + P - k0 * DL + S * K * DL) // S - K * DL
    return k0, nk, q, DL // G, step


@triton.jit
def conv_transpose_nd_kernel(x_ptr, w_ptr, b_ptr, y_ptr, CG, D, H, W, CO, COG,
                             OD, OH, OW, ODP, OHP, OWP, MP,
                             sxn, sxc, sxd, sxh, sxw, swc, swd, swh, sww,
                             SD, SH, SW, PD, PH, PW, DD, DH, DW, KD, KH, KW,
                             GD, GH, GW, INV_D, INV_H, INV_W, DIMS: tl.constexpr,
                             HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_M: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                             UPCAST: tl.constexpr, INT64: tl.constexpr):
    # Offsets in int32 unless a tensor spans 2**31 elements (64-bit pointer arithmetic on
    # the gathered tiles costs registers).
    y_plane = OD * OH * OW
    if INT64:
        sxn = sxn.to(tl.int64)
        sxc = sxc.to(tl.int64)
        sxd = sxd.to(tl.int64)
        sxh = sxh.to(tl.int64)
        sxw = sxw.to(tl.int64)
        swc = swc.to(tl.int64)
        swd = swd.to(tl.int64)
        swh = swh.to(tl.int64)
        sww = sww.to(tl.int64)
        y_plane = y_plane.to(tl.int64)
    # CG, COG: input and output channels per group; grid axis 1 is the group g.
    g = tl.program_id(1)
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(MP, BLOCK_M)
    num_pid_n = tl.cdiv(COG, BLOCK_N)
    phase = pid // (num_pid_m * num_pid_n)
    pid = pid - phase * (num_pid_m * num_pid_n)
    pd = phase // (SH * SW)
    phw = phase - pd * (SH * SW)
    ph = phw // SW
    pw = phw - ph * SW
    {{> grouped_pid}}

    kd0, nkd, qd, dqd, step_d = _phase_taps(pd, SD, PD, DD, KD, GD, INV_D)
    kh0, nkh, qh, dqh, step_h = _phase_taps(ph, SH, PH, DH, KH, GH, INV_H)
    kw0, nkw, qw, dqw, step_w = _phase_taps(pw, SW, PW, DW, KW, GW, INV_W)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    img = offs_m // (ODP * OHP * OWP)
    rem = offs_m % (ODP * OHP * OWP)
    i = rem // (OHP * OWP)
    rem = rem % (OHP * OWP)
    j = rem // OWP
    l = rem % OWP
    od = pd + i * SD
    oh = ph + j * SH
    ow = pw + l * SW
    m_mask = (offs_m < MP) & (od < OD) & (oh < OH) & (ow < OW)
    n_mask = offs_n < COG
    # Rows outside the output (ragged tile, short phase) start at index -1 in the op's first
    # spatial dim: every tap reads an index <= the first one, so they stay masked without
    # m_mask in the loop. The unit leading dims of a 1-D or 2-D conv (DIMS) are compiled
    # out of the row offsets and masks (fewer registers held across the loop).
    ih0 = j + qh
    iw0 = l + qw
    if DIMS == 1:
        iw0 = tl.where(m_mask, iw0, -1)
    if DIMS == 2:
        ih0 = tl.where(m_mask, ih0, -1)
    x_row = img * sxn + g * CG * sxc + ih0 * sxh + iw0 * sxw
    if DIMS == 3:
        id0 = tl.where(m_mask, i + qd, -1)
        x_row += id0 * sxd
    # y is contiguous (N, CO, OD, OH, OW); -1 marks rows outside the output.
    y_row = tl.where(m_mask, img * (CO * y_plane) + (od * OH + oh) * OW + ow, -1)
    # The permuted weight is contiguous along the group's output channels.
    w_co = g * CG * swc + offs_n
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # One flat loop over (tap, channel chunk) so the software pipeline sees every K step.
    num_ck = tl.cdiv(CG, BLOCK_K)
    nkhw = nkh * nkw
    for it in range(0, nkd * nkhw * num_ck):
        tap = it // num_ck
        c0 = (it - tap * num_ck) * BLOCK_K
        jd = tap // nkhw
        jhw = tap - jd * nkhw
        jh = jhw // nkw
        jw = jhw - jh * nkw
        i_w = iw0 - jw * dqw
        a_mask_m = (i_w >= 0) & (i_w < W)
        if DIMS >= 2:
            i_h = ih0 - jh * dqh
            a_mask_m = a_mask_m & (i_h >= 0) & (i_h < H)
        if DIMS == 3:
            i_d = id0 - jd * dqd
            a_mask_m = a_mask_m & (i_d >= 0) & (i_d < D)
        a_base = x_row - (jd * dqd * sxd + jh * dqh * sxh + jw * dqw * sxw)
        b_base = (w_co + (kd0 + jd * step_d) * swd + (kh0 + jh * step_h) * swh
                  + (kw0 + jw * step_w) * sww)
        {{> conv_gather_dot}}
    co = g * COG + offs_n
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    y_offs = y_row[:, None] + co[None, :] * y_plane
    tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty),
             mask=(y_row >= 0)[:, None] & n_mask[None, :])


{{> ctor_arg}}


def _per_dim(dims, d, h, w):
    """The module's per-dim value: (W,), (H, W) or (D, H, W)."""
    return (d, h, w)[3 - dims:]


def _dhw(dims, values, unit):
    """(D, H, W) from a module's per-dim tuple, the missing leading dims at `unit`."""
    return (unit,) * (3 - dims) + tuple(values)


_MODULES = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # DIMS 1, 2, 3: nn.ConvTranspose1d / 2d / 3d (the leading D, H params unused).
        # CTOR torch: the constructor's arguments in nn.ConvTranspose*d order
        # (in_channels, out_channels, kernel_size, stride, padding, output_padding, groups,
        # bias, dilation), what it omits from the params. CTOR recorded: the layer comes
        # from the params alone (channels, kernel, stride, padding, output_padding,
        # dilation, groups and bias as the recorded aten::convolution had them), whatever
        # the order of the reference's constructor. Either way the layer is built as the
        # reference's, so the same seed gives the same weights (stride and the like draw
        # nothing).
        dims = {{DIMS}}
        self.dims = dims
        stride = _per_dim(dims, {{STRIDE_D}}, {{STRIDE_H}}, {{STRIDE_W}})
        padding = _per_dim(dims, {{PADDING_D}}, {{PADDING_H}}, {{PADDING_W}})
        out_pad = _per_dim(dims, {{OUTPUT_PADDING_D}}, {{OUTPUT_PADDING_H}}, {{OUTPUT_PADDING_W}})
        dilation = _per_dim(dims, {{DILATION_D}}, {{DILATION_H}}, {{DILATION_W}})
        groups = {{GROUPS}}
        bias = {{BIAS}}
        if "{{CTOR}}" == "torch":
            in_channels = _arg(args, kwargs, 0, "in_channels", None)
            out_channels = _arg(args, kwargs, 1, "out_channels", None)
            kernel_size = _arg(args, kwargs, 2, "kernel_size", None)
            stride = _arg(args, kwargs, 3, "stride", stride)
            padding = _arg(args, kwargs, 4, "padding", padding)
            out_pad = _arg(args, kwargs, 5, "output_padding", out_pad)
            groups = _arg(args, kwargs, 6, "groups", groups)
            bias = _arg(args, kwargs, 7, "bias", bias)
            dilation = _arg(args, kwargs, 8, "dilation", dilation)
        else:
            in_channels, out_channels = {{IN_CHANNELS}}, {{OUT_CHANNELS}}
            kernel_size = _per_dim(dims, {{KERNEL_D}}, {{KERNEL_H}}, {{KERNEL_W}})
        if kwargs.get("padding_mode", "zeros") != "zeros":
            raise NotImplementedError("conv_transpose_nd: only padding_mode='zeros'")
        self.conv = _MODULES[dims](in_channels, out_channels, kernel_size, stride=stride,
                                   padding=padding, output_padding=out_pad,
                                   groups=groups, bias=bool(bias), dilation=dilation)

    def forward(self, x):
        dims = self.dims
        if x.dim() == dims + 1:  # an unbatched input, as nn.ConvTranspose*d accepts it
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.dim() != dims + 2:
            raise ValueError(f"conv_transpose_nd: a rank-{x.dim()} input to a {dims}-D conv")
        w = self.conv.weight
        bias = self.conv.bias
        N, C = x.shape[:2]
        G = self.conv.groups
        COG = w.shape[1]
        CO, CG = COG * G, C // G
        if C != w.shape[0]:
            raise ValueError(f"conv_transpose_nd: input has {C} channels, the weight {w.shape[0]}")
        D, H, W = _dhw(dims, x.shape[2:], 1)
        sxd, sxh, sxw = _dhw(dims, x.stride()[2:], 0)
        KD, KH, KW = _dhw(dims, w.shape[2:], 1)
        SD, SH, SW = _dhw(dims, self.conv.stride, 1)
        PD, PH, PW = _dhw(dims, self.conv.padding, 0)
        DD, DH, DW = _dhw(dims, self.conv.dilation, 1)
        OPD, OPH, OPW = _dhw(dims, self.conv.output_padding, 0)
        # A constructor may give any stride / dilation; torch refuses non-positive ones at
        # the call, so does this.
        if min(SD, SH, SW) < 1:
            raise RuntimeError(f"conv_transpose_nd: non-positive stride is not supported, "
                               f"got {self.conv.stride}")
        if min(DD, DH, DW) < 1:
            raise RuntimeError(f"conv_transpose_nd: dilation should be greater than zero, "
                               f"got {self.conv.dilation}")
        OD = (D - 1) * SD - 2 * PD + DD * (KD - 1) + OPD + 1
        OH = (H - 1) * SH - 2 * PH + DH * (KH - 1) + OPH + 1
        OW = (W - 1) * SW - 2 * PW + DW * (KW - 1) + OPW + 1
        y = torch.empty((N, CO) + (OD, OH, OW)[3 - dims:], device=x.device, dtype=x.dtype)
        if y.numel() == 0:
            return y
        # (KD, KH, KW, C_in, C_out/G), contiguous, in x's dtype (one copy): B tiles load
        # along the output channels.
        w = torch.empty((KD, KH, KW, C, COG), device=x.device, dtype=x.dtype).copy_(
            w.reshape(C, COG, KD, KH, KW).permute(2, 3, 4, 0, 1))
        ODP, OHP, OWP = triton.cdiv(OD, SD), triton.cdiv(OH, SH), triton.cdiv(OW, SW)
        MP = N * ODP * OHP * OWP  # output voxels of one phase, rounded up
        BLOCK_M = {{BLOCK_M}}
        BLOCK_N = {{BLOCK_N}}
        BLOCK_K = {{BLOCK_K}}
        GROUP_M = {{GROUP_M}}
        if G > 65535:  # grid axis 1 limit
            raise NotImplementedError("conv_transpose_nd: more than 65535 groups")
        grid = (SD * SH * SW * triton.cdiv(MP, BLOCK_M) * triton.cdiv(COG, BLOCK_N), G)
        extent = 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride()))
        int64 = max(extent, y.numel(), w.numel()) >= _INT64_FROM
        gcd = [math.gcd(s, d) for s, d in ((SD, DD), (SH, DH), (SW, DW))]
        inv = [pow(d // g, -1, s // g) for (s, d), g in zip(((SD, DD), (SH, DH), (SW, DW)), gcd)]
        conv_transpose_nd_kernel[grid](
            x, w, bias if bias is not None else w, y, CG, D, H, W, CO, COG,
            OD, OH, OW, ODP, OHP, OWP, MP,
            x.stride(0), x.stride(1), sxd, sxh, sxw,
            w.stride(3), w.stride(0), w.stride(1), w.stride(2),
            SD, SH, SW, PD, PH, PW, DD, DH, DW, KD, KH, KW, *gcd, *inv, DIMS=dims,
            HAS_BIAS=bias is not None, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
            GROUP_M=GROUP_M, INPUT_PRECISION="{{INPUT_PRECISION}}",
            UPCAST=_INTERPRETED and x.dtype != torch.float32, INT64=int64,
            num_warps={{num_warps}}, num_stages={{num_stages}})
        return y
