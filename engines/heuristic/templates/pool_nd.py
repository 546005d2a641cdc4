# kagent-template: pool_nd
# Max / average pooling over the last one or two dims of an (N, C, L) or (N, C, H, W)
# input (1-D is run as 2-D with H = 1). Grid (N*C * cdiv(OH, BLOCK_H) * cdiv(OW, BLOCK_W),):
# each program computes a BLOCK_H x BLOCK_W tile of one output plane; the window loops
# are unrolled (kernel size, stride, padding and dilation are constexpr) and every tap is
# a masked load of the tile's inputs, so neighbouring windows share cache lines. fp32
# accumulation; max propagates NaN like torch; avg counts the padding unless
# count_include_pad=False, or divides by divisor_override.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pool_kernel(x_ptr, y_ptr, C, H, W, OH, OW, stride_n, stride_c, stride_h, stride_w,
                tiles_h, tiles_w, divisor,
                KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
                PH: tl.constexpr, PW: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
                BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr, OP: tl.constexpr,
                COUNT_PAD: tl.constexpr, USE_DIVISOR: tl.constexpr):
    pid = tl.program_id(0)
    plane = pid // (tiles_h * tiles_w)
    tile = pid % (tiles_h * tiles_w)
    oh = (tile // tiles_w) * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = (tile % tiles_w) * BLOCK_W + tl.arange(0, BLOCK_W)
    n = plane // C
    c = plane % C
    base = n.to(tl.int64) * stride_n + c.to(tl.int64) * stride_c
    out_mask = (oh < OH)[:, None] & (ow < OW)[None, :]
    if OP == "max":
        acc = tl.full([BLOCK_H, BLOCK_W], float("-inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK_H, BLOCK_W], dtype=tl.float32)
        count = tl.zeros([BLOCK_H, BLOCK_W], dtype=tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh * DH
        hmask = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KW):
            iw = ow * SW - PW + kw * DW
            m = (hmask[:, None] & ((iw >= 0) & (iw < W))[None, :]) & out_mask
            offs = base + ih[:, None].to(tl.int64) * stride_h + iw[None, :].to(tl.int64) * stride_w
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
            hs = oh * SH - PH
            ws = ow * SW - PW
            he = tl.minimum(hs + KH, H + PH)
            we = tl.minimum(ws + KW, W + PW)
            area = ((he - hs)[:, None] * (we - ws)[None, :]).to(tl.float32)
            acc = acc / tl.maximum(area, 1.0)  # lanes past the output have no window
        else:
            acc = acc / tl.maximum(count, 1.0)
    y_offs = plane.to(tl.int64) * OH * OW + oh[:, None].to(tl.int64) * OW + ow[None, :]
    tl.store(y_ptr + y_offs, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


def _arg(args, kwargs, index, name, default):
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index and args[index] is not None else default


def _pair(v):
    return (int(v[0]), int(v[-1])) if isinstance(v, (tuple, list)) else (int(v), int(v))


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # KernelBench order: (kernel_size, stride, padding[, dilation]) like nn.MaxPool*d;
        # nn.AvgPool*d's other options by keyword only.
        op = "{{OP}}"
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
        one_d = x.dim() == 3
        x4 = x.unsqueeze(2) if one_d else x
        N, C, H, W = x4.shape
        (kh, kw), (sh, sw) = _pair(self.kernel), _pair(self.stride)
        (ph, pw), (dh, dw) = _pair(self.padding), _pair(self.dilation)
        if one_d:
            kh, sh, ph, dh = 1, 1, 0, 1
        OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
        OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
        y = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype)
        if y.numel() == 0:
            return y.squeeze(2) if one_d else y
        BLOCK_H = min({{BLOCK_H}}, triton.next_power_of_2(OH))
        BLOCK_W = min({{BLOCK_W}}, triton.next_power_of_2(OW))
        tiles_h = triton.cdiv(OH, BLOCK_H)
        tiles_w = triton.cdiv(OW, BLOCK_W)
        grid = (N * C * tiles_h * tiles_w,)
        pool_kernel[grid](
            x4, y, C, H, W, OH, OW, x4.stride(0), x4.stride(1), x4.stride(2), x4.stride(3),
            tiles_h, tiles_w, float(self.divisor or 1.0),
            KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, DH=dh, DW=dw,
            BLOCK_H=BLOCK_H, BLOCK_W=BLOCK_W, OP="{{OP}}",
            COUNT_PAD=self.count_include_pad, USE_DIVISOR=self.divisor is not None,
            num_warps={{num_warps}})
        return y.squeeze(2) if one_d else y
