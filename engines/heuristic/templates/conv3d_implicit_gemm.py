# kagent-template: conv3d_implicit_gemm
# 3-D convolution (NCDHW, groups >= 1) as an implicit GEMM, and 1-D convolution (N, C, L)
# run as a 3-D one with unit depth and height: output voxels (n, od, oh, ow) are the M
# rows, output channels the N columns, and the reduction runs over the KD*KH*KW window
# taps and the input channels in BLOCK_K chunks (one flat loop). Each A tile is gathered
# straight from the input (padding by masks, no im2col buffer), each B tile is a slice of
# the weight, multiplied with tl.dot into an fp32 accumulator. Grouped program order
# (GROUP_M) keeps the weight tiles shared by neighbouring voxel tiles in L2. Stride,
# padding and dilation are per dim (asymmetric kernels and strides). Grouped convolution
# (groups = G): each group is an independent implicit GEMM with K = KD*KH*KW*C/G and
# N = CO/G on the grid's second axis, as in conv2d_implicit_gemm. A 1-D convolution
# passes D = H = KD = KH = 1 with zero strides for the missing dims (Triton specializes
# the unit sizes, so the extra index arithmetic folds away).
import os

import torch
import torch.nn as nn
import triton
import triton.language as tl

_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
_INT64_FROM = 2 ** 31  # tensors spanning this many elements need 64-bit offsets


@triton.jit
def conv3d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, CG, D, H, W, CO, COG, OD, OH, OW, M,
                  sxn, sxc, sxd, sxh, sxw, swo, swc, swd, swh, sww,
                  SD, SH, SW, PD, PH, PW, DD, DH, DW, KD, KH, KW,
                  HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                  INT64: tl.constexpr):
    # Offsets in int32 unless a tensor spans 2**31 elements (64-bit pointer arithmetic on
    # the gathered tiles costs registers).
    y_plane = OD * OH * OW
    if INT64:
        sxn = sxn.to(tl.int64)
        sxc = sxc.to(tl.int64)
        sxd = sxd.to(tl.int64)
        sxh = sxh.to(tl.int64)
        sxw = sxw.to(tl.int64)
        swo = swo.to(tl.int64)
        swc = swc.to(tl.int64)
        swd = swd.to(tl.int64)
        swh = swh.to(tl.int64)
        sww = sww.to(tl.int64)
        y_plane = y_plane.to(tl.int64)
    # CG, COG: input and output channels per group. Grid axis 1 is the group g: offs_n
    # counts channels within the group (masked to COG) and the group's offset enters once,
    # in x_img and co.
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
    img = offs_m // (OD * OH * OW)
    pix = offs_m % (OD * OH * OW)
    od = pix // (OH * OW)
    ohw = pix % (OH * OW)
    oh = ohw // OW
    ow = ohw % OW
    # The window's corner in the input (before dilation steps).
    id0 = od * SD - PD
    ih0 = oh * SH - PH
    iw0 = ow * SW - PW
    co = g * COG + offs_n  # output channel
    x_img = img * sxn + g * CG * sxc
    w_co = co * swo
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # One flat loop over (tap, channel chunk) so the software pipeline sees every K step.
    num_ck = tl.cdiv(CG, BLOCK_K)
    KHW = KH * KW
    for it in range(0, KD * KHW * num_ck):
        tap = it // num_ck
        c0 = (it - tap * num_ck) * BLOCK_K
        kd = tap // KHW
        khw = tap - kd * KHW
        kh = khw // KW
        kw = khw - kh * KW
        i_d = id0 + kd * DD
        i_h = ih0 + kh * DH
        i_w = iw0 + kw * DW
        a_mask_m = (m_mask & (i_d >= 0) & (i_d < D) & (i_h >= 0) & (i_h < H)
                    & (i_w >= 0) & (i_w < W))
        a_base = x_img + i_d * sxd + i_h * sxh + i_w * sxw
        b_base = w_co + kd * swd + kh * swh + kw * sww
        {{> conv_gather_dot}}
    if HAS_BIAS:
        acc += tl.load(b_ptr + co, mask=n_mask, other=0.0).to(tl.float32)[None, :]
    # y is contiguous (N, CO, OD, OH, OW) (or (N, CO, OL)).
    y_offs = (img * (CO * y_plane) + pix)[:, None] + co[None, :] * y_plane
    tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty),
             mask=m_mask[:, None] & n_mask[None, :])


{{> ctor_arg}}


def _per_dim(dims, d, h, w):
    """The module's per-dim value: an int for Conv1d, a (D, H, W) tuple for Conv3d."""
    return w if dims == 1 else (d, h, w)


def _dhw(dims, values, unit):
    """(D, H, W) from a module's per-dim tuple, the missing leading dims at `unit`."""
    return (unit,) * (3 - dims) + tuple(values)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # DIMS 3: nn.Conv3d; DIMS 1: nn.Conv1d (the D and H params unused).
        # CTOR torch: the constructor's arguments in nn.Conv3d / nn.Conv1d order
        # (in_channels, out_channels, kernel_size, stride, padding, dilation, groups,
        # bias), what it omits from the params. CTOR recorded: the layer comes from the
        # params alone (channels, kernel, stride, padding, dilation, groups and bias as the
        # recorded aten::convolution had them), whatever the order of the reference's
        # constructor (KernelBench builds kernels such as (k, k, 1) from an int, or omits
        # padding). Either way the layer is built as the reference's, so the same seed
        # gives the same weights (stride and the like draw nothing).
        dims = {{DIMS}}
        self.dims = dims
        stride = _per_dim(dims, {{STRIDE_D}}, {{STRIDE_H}}, {{STRIDE_W}})
        padding = _per_dim(dims, {{PADDING_D}}, {{PADDING_H}}, {{PADDING_W}})
        dilation = _per_dim(dims, {{DILATION_D}}, {{DILATION_H}}, {{DILATION_W}})
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
        else:
            in_channels, out_channels = {{IN_CHANNELS}}, {{OUT_CHANNELS}}
            kernel_size = _per_dim(dims, {{KERNEL_D}}, {{KERNEL_H}}, {{KERNEL_W}})
        if kwargs.get("padding_mode", "zeros") != "zeros":
            raise NotImplementedError("conv3d_implicit_gemm: only padding_mode='zeros'")
        module = nn.Conv1d if dims == 1 else nn.Conv3d
        self.conv = module(in_channels, out_channels, kernel_size, stride=stride,
                           padding=padding, dilation=dilation, groups=groups,
                           bias=bool(bias))
        if isinstance(self.conv.padding, str):
            raise NotImplementedError("conv3d_implicit_gemm: string padding is not supported")

    def forward(self, x):
        dims = self.dims
        if x.dim() == dims + 1:  # an unbatched input, as nn.Conv1d / nn.Conv3d accept it
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.dim() != dims + 2:
            raise ValueError(f"conv3d_implicit_gemm: a rank-{x.dim()} input to a {dims}-D conv")
        w = self.conv.weight
        bias = self.conv.bias
        N, C = x.shape[:2]
        CO, CG = w.shape[:2]
        G = self.conv.groups
        COG = CO // G
        if C != CG * G:
            raise ValueError(f"conv3d_implicit_gemm: {C} input channels, the weight wants {CG * G}")
        D, H, W = _dhw(dims, x.shape[2:], 1)
        sxd, sxh, sxw = _dhw(dims, x.stride()[2:], 0)
        KD, KH, KW = _dhw(dims, w.shape[2:], 1)
        SD, SH, SW = _dhw(dims, self.conv.stride, 1)
        PD, PH, PW = _dhw(dims, self.conv.padding, 0)
        DD, DH, DW = _dhw(dims, self.conv.dilation, 1)
        OD = (D + 2 * PD - DD * (KD - 1) - 1) // SD + 1
        OH = (H + 2 * PH - DH * (KH - 1) - 1) // SH + 1
        OW = (W + 2 * PW - DW * (KW - 1) - 1) // SW + 1
        y = torch.empty((N, CO) + (OD, OH, OW)[3 - dims:], device=x.device, dtype=x.dtype)
        M = N * OD * OH * OW
        if y.numel() == 0:
            return y
        if w.dtype != x.dtype:
            w = w.to(x.dtype)
        swd, swh, sww = _dhw(dims, w.stride()[2:], 0)
        BLOCK_M = {{BLOCK_M}}
        BLOCK_N = {{BLOCK_N}}
        BLOCK_K = {{BLOCK_K}}
        GROUP_M = {{GROUP_M}}
        if G > 65535:  # grid axis 1 limit
            raise NotImplementedError("conv3d_implicit_gemm: more than 65535 groups")
        grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(COG, BLOCK_N), G)
        extent = 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride()))
        int64 = max(extent, y.numel(), w.numel()) >= _INT64_FROM
        conv3d_kernel[grid](
            x, w, bias if bias is not None else w, y, CG, D, H, W, CO, COG, OD, OH, OW, M,
            x.stride(0), x.stride(1), sxd, sxh, sxw,
            w.stride(0), w.stride(1), swd, swh, sww,
            SD, SH, SW, PD, PH, PW, DD, DH, DW, KD, KH, KW,
            HAS_BIAS=bias is not None, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
            GROUP_M=GROUP_M, INPUT_PRECISION="{{INPUT_PRECISION}}",
            UPCAST=_INTERPRETED and x.dtype != torch.float32, INT64=int64,
            num_warps={{num_warps}}, num_stages={{num_stages}})
        return y
