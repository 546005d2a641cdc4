# Starting kernel for 65_l1_norm_mean_dim_fp32: one program per (b, column of dim 2), two
# passes down the normalized dim (mean of |x| in fp32, then divide).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l1_mean_kernel(x_ptr, y_ptr, C, L, BLOCK: tl.constexpr):
    # Program (b, l): x[b, :, l] has C elements L apart.
    b = tl.program_id(0).to(tl.int64)
    l = tl.program_id(1)
    base = b * C * L + l
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for c in range(0, C, BLOCK):
        x = tl.load(x_ptr + base + (c + offs) * L, mask=c + offs < C, other=0.0)
        acc += tl.abs(x)
    mean = tl.sum(acc, axis=0) / C
    for c in range(0, C, BLOCK):
        mask = c + offs < C
        x = tl.load(x_ptr + base + (c + offs) * L, mask=mask, other=0.0)
        tl.store(y_ptr + base + (c + offs) * L, x / mean, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        d = self.dim % x.dim()
        b = 1
        for s in x.shape[:d]:
            b *= s
        c = x.shape[d]
        l = x.numel() // max(1, b * c)
        y = torch.empty_like(x)
        l1_mean_kernel[(b, l)](x, y, c, l, BLOCK=128, num_warps=4)
        return y
