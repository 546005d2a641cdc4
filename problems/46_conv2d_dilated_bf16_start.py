# Starting kernel for 46_conv2d_dilated_bf16: direct convolution, 64 pixels x 64 output channels per program, scalar loops over taps and input channels (outer products, no tl.dot), fp32 accumulation.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, y_ptr, C, H, W, OC, OH, OW,
                  KSIZE: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
                  DIL: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr):
    # A BLOCK_P pixels x BLOCK_OC output channels tile per program; per tap and input channel,
    # one outer product of BLOCK_P inputs and BLOCK_OC weights, accumulated in fp32.
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
        ih = oh * STRIDE - PAD + kh * DIL
        for kw in tl.static_range(KSIZE):
            iw = ow * STRIDE - PAD + kw * DIL
            valid = pmask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x_ptrs = x_n + tl.where(valid, ih * W + iw, 0)
            w_ptrs = w_ptr + offs_oc * (C * KSIZE * KSIZE) + kh * KSIZE + kw
            for c in range(0, C):
                xv = tl.load(x_ptrs, mask=valid, other=0.0).to(tl.float32)
                wv = tl.load(w_ptrs, mask=ocmask, other=0.0).to(tl.float32)
                acc += xv[:, None] * wv[None, :]
                x_ptrs += H * W
                w_ptrs += KSIZE * KSIZE
    y_ptrs = y_ptr + n * OC * OH * OW + offs_oc[None, :] * OH * OW + offs_p[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=pmask[:, None] & ocmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, bias=False,
                              dtype=torch.bfloat16)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        N, C, H, W = x.shape
        OC, _, K, _ = w.shape
        S, P, D = self.conv.stride[0], self.conv.padding[0], self.conv.dilation[0]
        OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
        OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
        y = torch.empty((N, OC, OH, OW), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OH * OW, 64), triton.cdiv(OC, 64), N)
        conv2d_kernel[grid](x, w, y, C, H, W, OC, OH, OW, KSIZE=K, STRIDE=S, PAD=P, DIL=D,
                            BLOCK_P=64, BLOCK_OC=64, num_warps=4)
        return y
