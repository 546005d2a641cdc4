# Starting kernel for 35_conv2d_fp32: direct convolution, 64 pixels x 64 output channels per program, tl.dot over input-channel chunks per tap.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv2d_kernel(x_ptr, w_ptr, y_ptr, C, H, W, OC, OH, OW,
                  KSIZE: tl.constexpr, PAD: tl.constexpr,
                  BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr, BLOCK_C: tl.constexpr):
    # Direct convolution, stride 1: a BLOCK_P pixels x BLOCK_OC output channels tile per
    # program; for each tap, input channels in BLOCK_C chunks through tl.dot (fp32, no TF32).
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
        for kw in tl.static_range(KSIZE):
            ih = oh - PAD + kh
            iw = ow - PAD + kw
            valid = pmask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            for c0 in range(0, C, BLOCK_C):
                cs = c0 + tl.arange(0, BLOCK_C)
                cmask = cs < C
                a = tl.load(x_n + cs[None, :] * H * W + (ih * W + iw)[:, None],
                            mask=valid[:, None] & cmask[None, :], other=0.0)
                wt = tl.load(w_ptr + offs_oc[None, :] * C * KSIZE * KSIZE + cs[:, None] * KSIZE * KSIZE
                             + kh * KSIZE + kw, mask=cmask[:, None] & ocmask[None, :], other=0.0)
                acc += tl.dot(a, wt, input_precision="ieee")
    y_ptrs = y_ptr + n * OC * OH * OW + offs_oc[None, :] * OH * OW + offs_p[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=pmask[:, None] & ocmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2,
                              bias=False)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        N, C, H, W = x.shape
        OC, _, K, _ = w.shape
        pad = K // 2
        OH, OW = H + 2 * pad - K + 1, W + 2 * pad - K + 1
        y = torch.empty((N, OC, OH, OW), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OH * OW, 64), triton.cdiv(OC, 64), N)
        conv2d_kernel[grid](x, w, y, C, H, W, OC, OH, OW, KSIZE=K, PAD=pad,
                            BLOCK_P=64, BLOCK_OC=64, BLOCK_C=32, num_warps=4)
        return y
