# kagent-template: pool_nd
# Max / average pooling over the last one, two or three dims of an (N, C, L),
# (N, C, H, W) or (N, C, D, H, W) input (1-D and 2-D run as 3-D with D = 1, H = 1).
# Grid (N*C*OD * cdiv(OH, BLOCK_H) * cdiv(OW, BLOCK_W),): each program computes a
# BLOCK_H x BLOCK_W tile of one output plane; the window loops are unrolled (kernel size,
# stride, padding and dilation are constexpr). Two ways to read a row of the window:
# - packed (LOAD auto when 1 <= SW <= KW, no dilation along W and the input's W stride
#   is 1): the taps go in groups of SW; a group is ONE contiguous load of BLOCK_W*SW inputs
#   seen as [BLOCK_H, BLOCK_W, SW] (SW padded to a power of two), each output's SW inputs
#   a vector; groups accumulate elementwise in a [BLOCK_H, BLOCK_W, SW] register tile
#   reduced over its last axis once at the end; overlapping groups hit L1.
# - taps (otherwise, or LOAD taps): every tap is its own masked load x[ow*SW - PW + kw*DW]
#   of the tile's inputs (strided when SW > 1; any input strides, any dilation).
# fp32 accumulation; max propagates NaN like torch; avg counts the padding unless
# count_include_pad=False, or divides by divisor_override.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _max_nan(a, b):
    # torch's max: a NaN anywhere in the window wins.
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def pool_kernel(x_ptr, y_ptr, C, D, H, W, OD, OH, OW, stride_n, stride_c, stride_d,
                stride_h, stride_w, tiles_h, tiles_w, divisor,
                KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
                PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
                BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr, OP: tl.constexpr,
                COUNT_PAD: tl.constexpr, USE_DIVISOR: tl.constexpr,
                PACKED: tl.constexpr, SWP: tl.constexpr):
    pid = tl.program_id(0)
    plane = pid // (tiles_h * tiles_w)         # (n, c, od)
    tile = pid % (tiles_h * tiles_w)
    oh = (tile // tiles_w) * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = (tile % tiles_w) * BLOCK_W + tl.arange(0, BLOCK_W)
    od = plane % OD
    n = plane // OD // C
    c = plane // OD % C
    base = n.to(tl.int64) * stride_n + c.to(tl.int64) * stride_c
    out_mask = (oh < OH)[:, None] & (ow < OW)[None, :]
    if PACKED:
        # Group g reads inputs ow*SW + g*SW + j (j < SW) for each output ow of the tile: over
        # the tile one contiguous run of BLOCK_W*SW inputs, each output's SW of them aligned
        # to SW elements so they load as one vector (a run starting at ow*SW - PW would be
        # misaligned for odd padding: scalar loads, a cross-lane reduction). Input
        # ow*SW + g*SW + j is tap k = g*SW + j + PW of output ow, so the groups
        # g = floor(-PW / SW) .. floor((KW - 1 - PW) / SW) cover the window; taps outside
        # [0, KW) (neighbouring windows' inputs, loaded with the vector) are dropped by
        # tl.where, not by the load's mask, so the mask stays uniform over a vector.
        j = tl.arange(0, SWP)
        ws = ow * SW
        if OP == "max":
            acc3 = tl.full([BLOCK_H, BLOCK_W, SWP], float("-inf"), tl.float32)
        else:
            acc3 = tl.zeros([BLOCK_H, BLOCK_W, SWP], dtype=tl.float32)
        for kd in tl.static_range(KD):
            i_d = od * SD - PD + kd * DD
            d_base = base + i_d.to(tl.int64) * stride_d
            i_dv = tl.zeros([BLOCK_H], dtype=tl.int32) + i_d
            dmask = (i_dv >= 0) & (i_dv < D)
            for kh in tl.static_range(KH):
                ih = oh * SH - PH + kh * DH
                hmask = (ih >= 0) & (ih < H) & dmask
                rows = x_ptr + (d_base + ih.to(tl.int64) * stride_h)     # [BLOCK_H] pointers
                for g in tl.static_range(-((PW + SW - 1) // SW), (KW - 1 - PW) // SW + 1):
                    iw = (ws + g * SW)[:, None] + j[None, :]             # [BLOCK_W, SWP]
                    k = g * SW + PW + j
                    tap = ((j < SW) & (k >= 0) & (k < KW))[None, None, :]
                    m = hmask[:, None, None] & ((iw >= 0) & (iw < W))[None, :, :]
                    ptrs = rows[:, None, None] + (iw * stride_w)[None, :, :]
                    if OP == "max":
                        v = tl.load(ptrs, mask=m, other=float("-inf")).to(tl.float32)
                        acc3 = _max_nan(tl.where(tap, v, float("-inf")), acc3)
                    else:
                        v = tl.load(ptrs, mask=m, other=0.0).to(tl.float32)
                        acc3 += tl.where(tap, v, 0.0)
        if OP == "max":
            acc = tl.reduce(acc3, 2, _max_nan)
        else:
            acc = tl.sum(acc3, axis=2)
            if not COUNT_PAD:
                # inputs inside the window, padding excluded (no dilation on this path
                # for avg)
                ds = od * SD - PD
                hs = oh * SH - PH
                wst = ws - PW
                dn = tl.minimum(ds + KD, D) - tl.maximum(ds, 0)
                hn = tl.minimum(hs + KH, H) - tl.maximum(hs, 0)
                wn = tl.minimum(wst + KW, W) - tl.maximum(wst, 0)
                count = (dn * hn[:, None] * wn[None, :]).to(tl.float32)
    else:
        if OP == "max":
            acc = tl.full([BLOCK_H, BLOCK_W], float("-inf"), tl.float32)
        else:
            acc = tl.zeros([BLOCK_H, BLOCK_W], dtype=tl.float32)
            count = tl.zeros([BLOCK_H, BLOCK_W], dtype=tl.float32)
        for kd in tl.static_range(KD):
            i_d = od * SD - PD + kd * DD
            d_base = base + i_d.to(tl.int64) * stride_d
            # Compared as a vector: the interpreter mis-types masks from scalar comparisons.
            i_dv = tl.zeros([BLOCK_H], dtype=tl.int32) + i_d
            dmask = (i_dv >= 0) & (i_dv < D)
            for kh in tl.static_range(KH):
                ih = oh * SH - PH + kh * DH
                hmask = (ih >= 0) & (ih < H) & dmask
                for kw in tl.static_range(KW):
                    iw = ow * SW - PW + kw * DW
                    m = (hmask[:, None] & ((iw >= 0) & (iw < W))[None, :]) & out_mask
                    offs = d_base + ih[:, None].to(tl.int64) * stride_h + iw[None, :].to(tl.int64) * stride_w
                    if OP == "max":
                        v = tl.load(x_ptr + offs, mask=m, other=float("-inf")).to(tl.float32)
                        acc = tl.where((v > acc) | (v != v), v, acc)
                    else:
                        v = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
                        acc += v
                        count += m.to(tl.float32)
    if OP == "avg":
        if USE_DIVISOR:
            acc = acc / divisor
        elif COUNT_PAD:
            # torch counts the padded window, clipped to the padded input's extent.
            ds = od * SD - PD
            hs = oh * SH - PH
            ws = ow * SW - PW
            de = tl.minimum(ds + KD, D + PD)
            he = tl.minimum(hs + KH, H + PH)
            we = tl.minimum(ws + KW, W + PW)
            area = ((de - ds) * (he - hs)[:, None] * (we - ws)[None, :]).to(tl.float32)
            acc = acc / tl.maximum(area, 1.0)  # lanes past the output have no window
        else:
            acc = acc / tl.maximum(count, 1.0)
    y_offs = plane.to(tl.int64) * OH * OW + oh[:, None].to(tl.int64) * OW + ow[None, :]
    tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


def _arg(args, kwargs, index, name, default):
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index and args[index] is not None else default


def _triple(v):
    if isinstance(v, (tuple, list)):
        v = [int(e) for e in v]
        return tuple([1] * (3 - len(v)) + v) if len(v) < 3 else tuple(v[-3:])
    return (int(v),) * 3


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # CTOR torch: KernelBench order, (kernel_size, stride, padding[, dilation]) like
        # nn.MaxPool*d, nn.AvgPool*d's other options by keyword only; KERNEL / STRIDE /
        # PADDING where the constructor gives none. CTOR recorded: everything from the
        # recorded op's scalars (per dim, D H W; a 1-D or 2-D pool's leading ones unused),
        # whatever the reference's constructor takes (none, with the sizes inside).
        op = "{{OP}}"
        if "{{CTOR}}" == "recorded":
            self.kernel = ({{KERNEL_D}}, {{KERNEL_H}}, {{KERNEL_W}})
            self.stride = ({{STRIDE_D}}, {{STRIDE_H}}, {{STRIDE_W}})
            self.padding = ({{PADDING_D}}, {{PADDING_H}}, {{PADDING_W}})
            self.dilation = ({{DILATION_D}}, {{DILATION_H}}, {{DILATION_W}})
            self.count_include_pad = {{COUNT_INCLUDE_PAD}}
            self.divisor = {{DIVISOR}} or None
            return
        self.kernel = _arg(args, kwargs, 0, "kernel_size", {{KERNEL}})
        self.stride = _arg(args, kwargs, 1, "stride", None)
        if self.stride is None:
            self.stride = self.kernel if {{STRIDE}} == 0 else {{STRIDE}}
        self.padding = _arg(args, kwargs, 2, "padding", {{PADDING}})
        self.dilation = _arg(args, kwargs, 3, "dilation", 1) if op == "max" else 1
        self.count_include_pad = bool(kwargs.get("count_include_pad", True))
        self.divisor = kwargs.get("divisor_override", None)
        if kwargs.get("ceil_mode", False) or kwargs.get("return_indices", False):
            raise NotImplementedError("pool_nd: ceil_mode and return_indices are not supported")

    def forward(self, x):
        nd = x.dim() - 2                        # pooled dims: 1, 2 or 3
        x5 = x.reshape(x.shape[:2] + (1,) * (3 - nd) + x.shape[2:]) if nd < 3 else x
        N, C, D, H, W = x5.shape
        k, s = list(_triple(self.kernel)), list(_triple(self.stride))
        p, dl = list(_triple(self.padding)), list(_triple(self.dilation))
        for i in range(3 - nd):                 # the added unit dims are not pooled
            k[i], s[i], p[i], dl[i] = 1, 1, 0, 1
        kd, kh, kw = k
        sd, sh, sw = s
        pd, ph, pw = p
        dd, dh, dw = dl
        OD = (D + 2 * pd - dd * (kd - 1) - 1) // sd + 1
        OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        y = torch.empty((N, C, OD, OH, OW), device=x.device, dtype=x.dtype)
        out_shape = (N, C) + (OD, OH, OW)[3 - nd:]
        if y.numel() == 0:
            return y.reshape(out_shape)
        BLOCK_H = min({{BLOCK_H}}, triton.next_power_of_2(OH))
        BLOCK_W = min({{BLOCK_W}}, triton.next_power_of_2(OW))
        tiles_h = triton.cdiv(OH, BLOCK_H)
        tiles_w = triton.cdiv(OW, BLOCK_W)
        grid = (N * C * OD * tiles_h * tiles_w,)
        # packed: one contiguous load per group of SW taps (needs no dilation along W);
        # auto takes it when windows overlap or touch (1 <= SW <= KW) and W is contiguous.
        load = "{{LOAD}}"
        stride_w = x5.stride(4) if W > 1 else 1
        packed = (load != "taps" and dw == 1 and (W + BLOCK_W * sw + kw) * stride_w < 2**31 and
                  (load == "packed" or (sw <= kw and stride_w == 1)))
        pool_kernel[grid](
            x5, y, C, D, H, W, OD, OH, OW, x5.stride(0), x5.stride(1), x5.stride(2),
            x5.stride(3), stride_w, tiles_h, tiles_w, float(self.divisor or 1.0),
            KD=kd, KH=kh, KW=kw, SD=sd, SH=sh, SW=sw, PD=pd, PH=ph, PW=pw, DD=dd, DH=dh, DW=dw,
            BLOCK_H=BLOCK_H, BLOCK_W=BLOCK_W, OP="{{OP}}",
            COUNT_PAD=self.count_include_pad, USE_DIVISOR=self.divisor is not None,
            PACKED=packed, SWP=triton.next_power_of_2(sw),
            num_warps={{num_warps}})
        return y.reshape(out_shape)
