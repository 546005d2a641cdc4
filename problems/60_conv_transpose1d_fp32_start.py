# Starting kernel for 60_conv_transpose1d_fp32: direct transposed 1-D convolution in the gather form, 64 output positions x 32 output channels per program, a loop over the taps and 16-channel chunks (an fp32 tl.dot per chunk, IEEE: no TF32; no phase split).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv_transpose1d_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, L, OC, OL, K, STRIDE, PAD,
                            BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr,
                            BLOCK_OC: tl.constexpr):
    # Output ol takes input (ol + PAD - k) / STRIDE through tap k when the division is exact
    # and in range; every tap is visited and masked when it does not reach (weight layout
    # C x OC x K), fp32 accumulation.
    pid_l = tl.program_id(0)
    pid_oc = tl.program_id(1)
    n = tl.program_id(2).to(tl.int64)
    offs_l = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    lmask = offs_l < OL
    offs_oc = pid_oc * BLOCK_OC + tl.arange(0, BLOCK_OC)
    ocmask = offs_oc < OC
    offs_c = tl.arange(0, BLOCK_C)
    acc = tl.zeros([BLOCK_L, BLOCK_OC], tl.float32)
    for k in range(0, K):
        t = offs_l + PAD - k
        il = t // STRIDE
        valid = lmask & (t >= 0) & (t % STRIDE == 0) & (il < L)
        il = tl.where(valid, il, 0)
        for c0 in range(0, C, BLOCK_C):
            c = c0 + offs_c
            cmask = c < C
            xv = tl.load(x_ptr + n * C * L + c[None, :] * L + il[:, None],
                         mask=valid[:, None] & cmask[None, :], other=0.0)
            wv = tl.load(w_ptr + c[:, None] * (OC * K) + offs_oc[None, :] * K + k,
                         mask=cmask[:, None] & ocmask[None, :], other=0.0)
            # Written as a broadcast multiply and sum, Triton turned this product into a
            # TF32-precision one on the H100 (74 % of the elements outside 1e-4 against
            # float64, the reference inside; tests/gpu/reference_accuracy.py): IEEE says so.
            acc += tl.dot(xv, wv, input_precision="ieee")
    acc += tl.load(b_ptr + offs_oc, mask=ocmask, other=0.0)[None, :]
    y_ptrs = y_ptr + n * OC * OL + offs_oc[None, :] * OL + offs_l[:, None]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=lmask[:, None] & ocmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv_t = nn.ConvTranspose1d(in_channels, out_channels, kernel_size, stride=stride,
                                         padding=padding, output_padding=output_padding)

    def forward(self, x):
        x = x.contiguous()
        w = self.conv_t.weight.contiguous()
        N, C, L = x.shape
        _, OC, K = w.shape
        S = self.conv_t.stride[0]
        P = self.conv_t.padding[0]
        OP = self.conv_t.output_padding[0]
        OL = (L - 1) * S - 2 * P + K + OP
        y = torch.empty((N, OC, OL), dtype=x.dtype, device=x.device)
        grid = (triton.cdiv(OL, 64), triton.cdiv(OC, 32), N)
        conv_transpose1d_kernel[grid](x, w, self.conv_t.bias, y, C, L, OC, OL, K, S, P,
                                      BLOCK_L=64, BLOCK_C=16, BLOCK_OC=32, num_warps=4)
        return y
