# Starting kernel for 79_conv2d_deep_small_spatial_bf16: direct convolution, 64 output pixels x up to 64 output channels of one group per program, scalar loops over the taps and input channels (outer products, no tl.dot).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_kernel(x_ptr, w_ptr, b_ptr, y_ptr, CG, D, H, W, OCG, OD, OH, OW, G,
                KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr,
                SD: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr,
                PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
                DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,
                HAS_BIAS: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr):
    # The convolution as 3-D (a 1-D or 2-D one has unit D and H). One program per
    # (BLOCK_P output positions, BLOCK_OC output channels of one group, one sample): per
    # tap and input channel of the group, one outer product of BLOCK_P inputs and BLOCK_OC
    # weights, accumulated in fp32; then the bias.
    pid_p = tl.program_id(0)
    pid_oc = tl.program_id(1)
    ng = tl.program_id(2).to(tl.int64)  # n * G + g
    g = ng % G
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    pmask = offs_p < OD * OH * OW
    od = offs_p // (OH * OW)
    oh = (offs_p // OW) % OH
    ow = offs_p % OW
    offs_oc = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    ocmask = offs_oc < OCG
    oc = g * OCG + offs_oc
    DHW = D * H * W
    x_base = x_ptr + ng * CG * DHW
    acc = tl.zeros([BLOCK_P, BLOCK_OC], tl.float32)
    for kd in tl.static_range(KD):
        id_ = od * SD - PD + kd * DD
        for kh in tl.static_range(KH):
            ih = oh * SH - PH + kh * DH
            for kw in tl.static_range(KW):
                iw = ow * SW - PW + kw * DW
                valid = (pmask & (id_ >= 0) & (id_ < D) & (ih >= 0) & (ih < H)
                         & (iw >= 0) & (iw < W))
                x_ptrs = x_base + tl.where(valid, (id_ * H + ih) * W + iw, 0)
                w_ptrs = w_ptr + oc * (CG * KD * KH * KW) + (kd * KH + kh) * KW + kw
                for c in range(0, CG):
                    xv = tl.load(x_ptrs, mask=valid, other=0.0).to(tl.float32)
                    wv = tl.load(w_ptrs, mask=ocmask, other=0.0).to(tl.float32)
                    acc += xv[:, None] * wv[None, :]
                    x_ptrs += DHW
                    w_ptrs += KD * KH * KW
    if HAS_BIAS:
        acc += tl.load(b_ptr + oc, mask=ocmask, other=0.0).to(tl.float32)[None, :]
    n = ng // G
    y_ptrs = (y_ptr + (n * G * OCG + oc[None, :]).to(tl.int64) * (OD * OH * OW)
              + offs_p[:, None])
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=pmask[:, None] & ocmask[None, :])


def _conv(conv, x):
    """conv (an nn.Conv1d, Conv2d or Conv3d, zero padding) applied to x by conv_kernel."""
    nd = x.dim() - 2
    x = x.contiguous()
    w = conv.weight.contiguous()
    G = conv.groups
    N, C = x.shape[:2]
    OC, CG = w.shape[:2]
    unit = (1,) * (3 - nd)
    size = unit + tuple(x.shape[2:])
    k = unit + tuple(w.shape[2:])
    s = unit + tuple(conv.stride)
    p = (0,) * (3 - nd) + tuple(conv.padding)
    d = unit + tuple(conv.dilation)
    out = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(3)]
    y = torch.empty((N, OC) + tuple(out[3 - nd:]), dtype=x.dtype, device=x.device)
    OCG = OC // G
    block_oc = min(64, max(8, triton.next_power_of_2(OCG)))
    grid = (triton.cdiv(out[0] * out[1] * out[2], 64), triton.cdiv(OCG, block_oc), N * G)
    conv_kernel[grid](x, w, conv.bias if conv.bias is not None else w, y, CG, *size, OCG, *out, G,
                      KD=k[0], KH=k[1], KW=k[2], SD=s[0], SH=s[1], SW=s[2],
                      PD=p[0], PH=p[1], PW=p[2], DD=d[0], DH=d[1], DW=d[2],
                      HAS_BIAS=conv.bias is not None, BLOCK_P=64, BLOCK_OC=block_oc,
                      num_warps=4)
    return y


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, groups=groups, bias=bias, dtype=torch.bfloat16)

    def forward(self, x):
        return _conv(self.conv, x)
