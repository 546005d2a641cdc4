# Starting kernel for 95_groupnorm_odd_fp32: one program per (sample, group), three passes: mean, variance, normalize with the per-channel affine; fp32 math.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def groupnorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, HW, CPG, eps, BLOCK: tl.constexpr):
    # One program per (n, group): three passes over the group's CPG * HW elements.
    pid = tl.program_id(0)
    G = C // CPG
    n = pid // G
    g = pid % G
    size = CPG * HW
    base = (n.to(tl.int64) * C + g * CPG) * HW
    offs = tl.arange(0, BLOCK)
    s = tl.zeros([BLOCK], tl.float32)
    for i in range(0, size, BLOCK):
        s += tl.load(x_ptr + base + i + offs, mask=i + offs < size, other=0.0).to(tl.float32)
    mean = tl.sum(s, axis=0) / size
    v = tl.zeros([BLOCK], tl.float32)
    for i in range(0, size, BLOCK):
        mask = i + offs < size
        x = tl.load(x_ptr + base + i + offs, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        v += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(v, axis=0) / size + eps)
    for i in range(0, size, BLOCK):
        mask = i + offs < size
        c = g * CPG + (i + offs) // HW
        x = tl.load(x_ptr + base + i + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=mask, other=0.0)
        b = tl.load(b_ptr + c, mask=mask, other=0.0)
        tl.store(y_ptr + base + i + offs, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty),
                 mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features, num_groups):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)
        nn.init.normal_(self.gn.weight, 1.0, 0.1)
        nn.init.normal_(self.gn.bias, 0.0, 0.1)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        N, C = x.shape[0], x.shape[1]
        HW = x.numel() // (N * C)
        G = self.gn.num_groups
        groupnorm_kernel[(N * G,)](x, self.gn.weight, self.gn.bias, y, C, HW, C // G, self.gn.eps,
                                   BLOCK=1024, num_warps=4)
        return y
