# Starting kernel for 45_conv_transpose2d_fp32: direct transposed convolution, 64 output pixels x 64 output channels per program, scalar loops over taps and input channels (outer products, no tl.dot).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_transpose2d_kernel(x_ptr, w_ptr, y_ptr, C, H, W, OC, OH, OW,
                            KSIZE: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
                            BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr):
    # Gather form: output (oh, ow) takes input ((oh + PAD - kh) / STRIDE, (ow + PAD - kw) / STRIDE)
    # through tap (kh, kw) when both divisions are exact and in range. A BLOCK_P pixels x
    # BLOCK_OC output channels tile per program; per tap and input channel, one outer product
    # of BLOCK_P inputs and BLOCK_OC weights (weight layout C x OC x KSIZE x KSIZE), fp32.
    pid_p = tl.program_id(0)
    pid_oc = tl.program_id(1)
    n = tl.program_id(2).to(tl.int64)
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    pmask = offs_p < OH * OW
    oh = offs_p // OW
    ow = offs_p % OW
    offs_oc = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    ocmask = offs_oc < OC
    x_n = x_ptr + n * C * H * W
    acc = tl.zeros([BLOCK_P, BLOCK_OC], tl.float32)
    for kh in tl.static_range(KSIZE):
        th = oh + PAD - kh
        ih = th // STRIDE
        vh = (th >= 0) & (th % STRIDE == 0) & (ih < H)
        for kw in tl.static_range(KSIZE):
            tw = ow + PAD - kw
            iw = tw // STRIDE
            valid = pmask & vh & (tw >= 0) & (tw % STRIDE == 0) & (iw < W)
            x_ptrs = x_n + tl.where(valid, ih * W + iw, 0)
            w_ptrs = w_ptr + offs_oc * (KSIZE * KSIZE) + kh * KSIZE + kw
            for c in range(0, C):
                xv = tl.load(x_ptrs, mask=valid, other=0.0)
                wv = tl.load(w_ptrs, mask=ocmask, other=0.0)
                acc += xv[:, None] * wv[None, :]
                x_ptrs += H * W
                w_ptrs += OC * KSIZE * KSIZE
    y_ptrs = y_ptr + n * OC * OH * OW + offs_oc[None, :] * OH * OW + offs_p[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=pmask[:, None] & ocmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, output_padding=output_padding,
                                         bias=False)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv_t.weight.contiguous()
        N, C, H, W = x.shape
        _, OC, K, _ = w.shape
        S = self.conv_t.stride[0]
        P = self.conv_t.padding[0]
        OP = self.conv_t.output_padding[0]
        OH = (H - 1) * S - 2 * P + K + OP
        OW = (W - 1) * S - 2 * P + K + OP
        y = torch.empty((N, OC, OH, OW), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OH * OW, 64), triton.cdiv(OC, 64), N)
        conv_transpose2d_kernel[grid](x, w, y, C, H, W, OC, OH, OW, KSIZE=K, STRIDE=S, PAD=P,
                                      BLOCK_P=64, BLOCK_OC=64, num_warps=4)
        return y
