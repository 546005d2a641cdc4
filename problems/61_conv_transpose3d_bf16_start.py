# Starting kernel for 61_conv_transpose3d_bf16: direct transposed 3-D convolution in the gather form, 128 output voxels x 32 output channels per program, loops over the 27 taps and 16-channel chunks (broadcast multiply and sum in fp32, no tl.dot, no phase split).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_transpose3d_kernel(x_ptr, w_ptr, y_ptr, C, D, H, W, OC, OD, OH, OW, STRIDE, PAD,
                            KSIZE: tl.constexpr, BLOCK_P: tl.constexpr,
                            BLOCK_C: tl.constexpr, BLOCK_OC: tl.constexpr):
    # Output (od, oh, ow) takes input ((od + PAD - kd) / STRIDE, ...) through tap
    # (kd, kh, kw) when the three divisions are exact and in range; every tap is visited
    # and masked where it does not reach (weight layout C x OC x K x K x K).
    pid_p = tl.program_id(0)
    pid_oc = tl.program_id(1)
    n = tl.program_id(2).to(tl.int64)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    pmask = offs_p < OD * OH * OW
    od = offs_p // (OH * OW)
    oh = (offs_p // OW) % OH
    ow = offs_p % OW
    offs_oc = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    ocmask = offs_oc < OC
    offs_c = tl.arange(0, BLOCK_C)
    acc = tl.zeros([BLOCK_P, BLOCK_OC], tl.float32)
    for tap in range(0, KSIZE * KSIZE * KSIZE):
        kd = tap // (KSIZE * KSIZE)
        kh = (tap // KSIZE) % KSIZE
        kw = tap % KSIZE
        td = od + PAD - kd
        th = oh + PAD - kh
        tw = ow + PAD - kw
        i_d = td // STRIDE
        i_h = th // STRIDE
        i_w = tw // STRIDE
        valid = (pmask & (td >= 0) & (td % STRIDE == 0) & (i_d < D) & (th >= 0)
                 & (th % STRIDE == 0) & (i_h < H) & (tw >= 0) & (tw % STRIDE == 0) & (i_w < W))
        pix = tl.where(valid, (i_d * H + i_h) * W + i_w, 0)
        for c0 in range(0, C, BLOCK_C):
            c = c0 + offs_c
            cmask = c < C
            xv = tl.load(x_ptr + n * C * D * H * W + c[None, :] * (D * H * W) + pix[:, None],
                         mask=valid[:, None] & cmask[None, :], other=0.0).to(tl.float32)
            wv = tl.load(w_ptr + c[:, None] * (OC * KSIZE * KSIZE * KSIZE)
                         + offs_oc[None, :] * (KSIZE * KSIZE * KSIZE) + tap,
                         mask=cmask[:, None] & ocmask[None, :], other=0.0).to(tl.float32)
            acc += tl.sum(xv[:, :, None] * wv[None, :, :], axis=1)
    y_ptrs = y_ptr + n * OC * OD * OH * OW + offs_oc[None, :] * (OD * OH * OW) + offs_p[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=pmask[:, None] & ocmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=False):
        super().__init__()
        if groups != 1 or bias:
            raise NotImplementedError("this starting kernel serves groups=1 without bias")
        self.conv = nn.ConvTranspose3d(in_channels, out_channels, (kernel_size,) * 3,
                                         stride=stride, padding=padding,
                                         output_padding=output_padding, groups=groups,
                                         bias=bias, dtype=torch.bfloat16)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        N, C, D, H, W = x.shape
        _, OC, K, _, _ = w.shape
        S = self.conv.stride[0]
        P = self.conv.padding[0]
        OP = self.conv.output_padding[0]
        OD, OH, OW = ((n - 1) * S - 2 * P + K + OP for n in (D, H, W))
        y = torch.empty((N, OC, OD, OH, OW), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OD * OH * OW, 128), triton.cdiv(OC, 32), N)
        conv_transpose3d_kernel[grid](x, w, y, C, D, H, W, OC, OD, OH, OW, S, P, KSIZE=K,
                                      BLOCK_P=128, BLOCK_C=16, BLOCK_OC=32, num_warps=4)
        return y
