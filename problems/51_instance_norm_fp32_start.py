# Starting kernel for 51_instance_norm_fp32: one program per (sample, channel) plane, three passes over the plane.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def instnorm_kernel(x_ptr, y_ptr, HW, eps, BLOCK: tl.constexpr):
    # One program per plane (n * C + c): the mean, then the biased variance, then the
    # normalized values, each a pass over the plane's HW elements.
    plane = tl.program_id(0).to(tl.int64)
    base = plane * HW
    offs = tl.arange(0, BLOCK)
    s = tl.zeros([BLOCK], tl.float32)
    for i in range(0, HW, BLOCK):
        s += tl.load(x_ptr + base + i + offs, mask=i + offs < HW, other=0.0).to(tl.float32)
    mean = tl.sum(s, axis=0) / HW
    v = tl.zeros([BLOCK], tl.float32)
    for i in range(0, HW, BLOCK):
        mask = i + offs < HW
        x = tl.load(x_ptr + base + i + offs, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        v += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(v, axis=0) / HW + eps)
    for i in range(0, HW, BLOCK):
        mask = i + offs < HW
        x = tl.load(x_ptr + base + i + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + i + offs, ((x - mean) * rstd).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        N, C = x.shape[0], x.shape[1]
        HW = x.numel() // (N * C)
        instnorm_kernel[(N * C,)](x, y, HW, self.inorm.eps, BLOCK=1024, num_warps=4)
        return y
