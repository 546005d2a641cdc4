# Starting kernel for 49_conv3d_fp32: direct 3-D convolution, 64 output voxels x 64 output channels per program, scalar loops over the 27 taps and input channels (outer products, no tl.dot).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv3d_kernel(x_ptr, w_ptr, y_ptr, C, D, H, W, OC, OD, OH, OW,
                  KSIZE: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
                  BLOCK_P: tl.constexpr, BLOCK_OC: tl.constexpr):
    # A BLOCK_P voxels x BLOCK_OC output channels tile per program; per tap and input channel,
    # one outer product of BLOCK_P inputs and BLOCK_OC weights, accumulated in fp32.
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
    DHW = D * H * W
    x_n = x_ptr + n * C * DHW
    acc = tl.zeros([BLOCK_P, BLOCK_OC], tl.float32)
    for kd in tl.static_range(KSIZE):
        id_ = od * STRIDE - PAD + kd
        for kh in tl.static_range(KSIZE):
            ih = oh * STRIDE - PAD + kh
            for kw in tl.static_range(KSIZE):
                iw = ow * STRIDE - PAD + kw
                valid = (pmask & (id_ >= 0) & (id_ < D) & (ih >= 0) & (ih < H)
                         & (iw >= 0) & (iw < W))
                x_ptrs = x_n + tl.where(valid, (id_ * H + ih) * W + iw, 0)
                w_ptrs = (w_ptr + offs_oc * (C * KSIZE * KSIZE * KSIZE)
                          + (kd * KSIZE + kh) * KSIZE + kw)
                for c in range(0, C):
                    xv = tl.load(x_ptrs, mask=valid, other=0.0)
                    wv = tl.load(w_ptrs, mask=ocmask, other=0.0)
                    acc += xv[:, None] * wv[None, :]
                    x_ptrs += DHW
                    w_ptrs += KSIZE * KSIZE * KSIZE
    y_ptrs = y_ptr + n * OC * OD * OH * OW + offs_oc[None, :] * OD * OH * OW + offs_p[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=pmask[:, None] & ocmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, bias=False)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        N, C, D, H, W = x.shape
        OC, _, K, _, _ = w.shape
        S, P = self.conv.stride[0], self.conv.padding[0]
        OD = (D + 2 * P - K) // S + 1
        OH = (H + 2 * P - K) // S + 1
        OW = (W + 2 * P - K) // S + 1
        y = torch.empty((N, OC, OD, OH, OW), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OD * OH * OW, 64), triton.cdiv(OC, 64), N)
        conv3d_kernel[grid](x, w, y, C, D, H, W, OC, OD, OH, OW, KSIZE=K, STRIDE=S, PAD=P,
                            BLOCK_P=64, BLOCK_OC=64, num_warps=4)
        return y
