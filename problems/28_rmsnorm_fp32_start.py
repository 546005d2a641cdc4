# Starting kernel for 28_rmsnorm_fp32: one program per (batch, 256 positions), two passes over the features.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, y_ptr, F, HW, eps, BLOCK: tl.constexpr):
    # x viewed as (B, F, HW), normalized over F. One program per (b, BLOCK positions),
    # two passes over F.
    pid = tl.program_id(0)
    nblk = tl.cdiv(HW, BLOCK)
    b = pid // nblk
    offs = (pid % nblk) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    base = b.to(tl.int64) * F * HW
    ss = tl.zeros([BLOCK], tl.float32)
    for f in range(0, F):
        x = tl.load(x_ptr + base + f * HW + offs, mask=mask, other=0.0).to(tl.float32)
        ss += x * x
    rms = tl.sqrt(ss / F + eps)
    for f in range(0, F):
        x = tl.load(x_ptr + base + f * HW + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + f * HW + offs, (x / rms).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features, eps):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        B, F = x.shape[0], x.shape[1]
        HW = x.numel() // (B * F)
        rmsnorm_kernel[(B * triton.cdiv(HW, 256),)](x, y, F, HW, self.eps, BLOCK=256, num_warps=4)
        return y
