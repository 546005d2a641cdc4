# Starting kernel for 31_maxpool1d_fp32: one program per (row, 1024 outputs), a load per window tap.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def pool1d_kernel(x_ptr, y_ptr, L, L_OUT, KSIZE: tl.constexpr, STRIDE: tl.constexpr,
                  PAD: tl.constexpr, IS_MAX: tl.constexpr, BLOCK: tl.constexpr):
    # One program per (row = n * C + c, BLOCK outputs); padding counts as -inf (max) or 0 (avg).
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < L_OUT
    if IS_MAX:
        acc = tl.full([BLOCK], float("-inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for k in tl.static_range(KSIZE):
        pos = offs * STRIDE - PAD + k
        valid = mask & (pos >= 0) & (pos < L)
        if IS_MAX:
            x = tl.load(x_ptr + row * L + pos, mask=valid, other=float("-inf")).to(tl.float32)
            acc = tl.maximum(acc, x)
        else:
            x = tl.load(x_ptr + row * L + pos, mask=valid, other=0.0).to(tl.float32)
            acc += x
    if not IS_MAX:
        acc = acc / KSIZE  # count_include_pad=True
    tl.store(y_ptr + row * L_OUT + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.k, self.s, self.p = kernel_size, stride, padding

    def forward(self, x):
        x = x.contiguous()
        N, C, L = x.shape
        L_out = (L + 2 * self.p - self.k) // self.s + 1
        y = torch.empty((N, C, L_out), dtype=x.dtype, device=x.device)
        grid = (N * C, triton.cdiv(L_out, 1024))
        pool1d_kernel[grid](x, y, L, L_out, KSIZE=self.k, STRIDE=self.s, PAD=self.p,
                            IS_MAX=True, BLOCK=1024, num_warps=4)
        return y
