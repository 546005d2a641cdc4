# Starting kernel for 50_conv1d_bf16: direct 1-D convolution, 64 positions x 64 output channels per program, scalar loops over taps and input channels (outer products, no tl.dot), fp32 accumulation.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv1d_kernel(x_ptr, w_ptr, y_ptr, C, L, OC, OL,
                  KSIZE: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
                  BLOCK_L: tl.constexpr, BLOCK_OC: tl.constexpr):
    # A BLOCK_L positions x BLOCK_OC output channels tile per program; per tap and input
    # channel, one outer product of BLOCK_L inputs and BLOCK_OC weights, accumulated in fp32.
    pid_l = tl.program_id(0)
    pid_oc = tl.program_id(1)
    n = tl.program_id(2).to(tl.int64)
    offs_l = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    lmask = offs_l < OL
    offs_oc = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    ocmask = offs_oc < OC
    x_n = x_ptr + n * C * L
    acc = tl.zeros([BLOCK_L, BLOCK_OC], tl.float32)
    for k in tl.static_range(KSIZE):
        il = offs_l * STRIDE - PAD + k
        valid = lmask & (il >= 0) & (il < L)
        x_ptrs = x_n + tl.where(valid, il, 0)
        w_ptrs = w_ptr + offs_oc * (C * KSIZE) + k
        for c in range(0, C):
            xv = tl.load(x_ptrs, mask=valid, other=0.0).to(tl.float32)
            wv = tl.load(w_ptrs, mask=ocmask, other=0.0).to(tl.float32)
            acc += xv[:, None] * wv[None, :]
            x_ptrs += L
            w_ptrs += KSIZE
    y_ptrs = y_ptr + n * OC * OL + offs_oc[None, :] * OL + offs_l[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=lmask[:, None] & ocmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, bias=False, dtype=torch.bfloat16)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv.weight.contiguous()
        N, C, L = x.shape
        OC, _, K = w.shape
        S, P = self.conv.stride[0], self.conv.padding[0]
        OL = (L + 2 * P - K) // S + 1
        y = torch.empty((N, OC, OL), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OL, 64), triton.cdiv(OC, 64), N)
        conv1d_kernel[grid](x, w, y, C, L, OC, OL, KSIZE=K, STRIDE=S, PAD=P,
                            BLOCK_L=64, BLOCK_OC=64, num_warps=4)
        return y
