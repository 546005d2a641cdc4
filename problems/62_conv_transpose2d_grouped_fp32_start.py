# Starting kernel for 62_conv_transpose2d_grouped_fp32: direct grouped transposed 2-D convolution in the gather form, 128 output pixels x 16 output channels of one group per program, loops over the taps and 16-channel chunks (an fp32 tl.dot per chunk, IEEE: no TF32; no phase split).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_transpose2d_grouped_kernel(x_ptr, w_ptr, b_ptr, y_ptr, CG, H, W, OCG, OH, OW,
                                    SH, SW, PH, PW, DH, DW, KH, KW,
                                    BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr,
                                    BLOCK_OC: tl.constexpr):
    # Output (oh, ow) takes input ((oh + PH - kh*DH) / SH, (ow + PW - kw*DW) / SW) through
    # tap (kh, kw) when both divisions are exact and in range; every tap is visited and
    # masked where it does not reach. Group g reads input channels g*CG.. and writes output
    # channels g*OCG.. (weight layout C x OCG x KH x KW), fp32 accumulation.
    pid_p = tl.program_id(0)
    g = tl.program_id(1)
    n = tl.program_id(2).to(tl.int64)
    C = CG * tl.num_programs(1)
    OC = OCG * tl.num_programs(1)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    pmask = offs_p < OH * OW
    oh = offs_p // OW
    ow = offs_p % OW
    offs_c = tl.arange(0, BLOCK_C)
    for oc0 in range(0, OCG, BLOCK_OC):
        oc = oc0 + tl.arange(0, BLOCK_OC)
        ocmask = oc < OCG
        acc = tl.zeros([BLOCK_P, BLOCK_OC], tl.float32)
        for tap in range(0, KH * KW):
            kh = tap // KW
            kw = tap % KW
            th = oh + PH - kh * DH
            tw = ow + PW - kw * DW
            ih = th // SH
            iw = tw // SW
            valid = (pmask & (th >= 0) & (th % SH == 0) & (ih < H)
                     & (tw >= 0) & (tw % SW == 0) & (iw < W))
            pix = tl.where(valid, ih * W + iw, 0)
            for c0 in range(0, CG, BLOCK_C):
                c = g * CG + c0 + offs_c
                cmask = c0 + offs_c < CG
                xv = tl.load(x_ptr + n * C * H * W + c[None, :] * (H * W) + pix[:, None],
                             mask=valid[:, None] & cmask[None, :], other=0.0)
                wv = tl.load(w_ptr + c[:, None] * (OCG * KH * KW) + oc[None, :] * (KH * KW) + tap,
                             mask=cmask[:, None] & ocmask[None, :], other=0.0)
                # Written as a broadcast multiply and sum, Triton turned this product into a
                # TF32-precision one on the H100 (74 % of the elements outside 1e-4 against
                # float64, the reference inside; tests/gpu/reference_accuracy.py): IEEE says so.
                acc += tl.dot(xv, wv, input_precision="ieee")
        acc += tl.load(b_ptr + g * OCG + oc, mask=ocmask, other=0.0)[None, :]
        y_ptrs = (y_ptr + n * OC * OH * OW + (g * OCG + oc)[None, :] * (OH * OW)
                  + offs_p[:, None])
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=pmask[:, None] & ocmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding,
                 dilation, groups, bias=True):
        super().__init__()
        if not bias:
            raise NotImplementedError("this starting kernel serves the layer with its bias")
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, output_padding=output_padding,
                                         groups=groups, bias=bias, dilation=dilation)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv_t.weight.contiguous()
        N, C, H, W = x.shape
        _, OCG, KH, KW = w.shape
        G = self.conv_t.groups
        (SH, SW), (PH, PW) = self.conv_t.stride, self.conv_t.padding
        (DH, DW), (OPH, OPW) = self.conv_t.dilation, self.conv_t.output_padding
        OH = (H - 1) * SH - 2 * PH + DH * (KH - 1) + OPH + 1
        OW = (W - 1) * SW - 2 * PW + DW * (KW - 1) + OPW + 1
        y = torch.empty((N, OCG * G, OH, OW), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OH * OW, 128), G, N)
        conv_transpose2d_grouped_kernel[grid](
            x, w, self.conv_t.bias, y, C // G, H, W, OCG, OH, OW, SH, SW, PH, PW, DH, DW, KH, KW,
            BLOCK_P=128, BLOCK_C=16, BLOCK_OC=16, num_warps=4)
        return y
