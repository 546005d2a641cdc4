# Starting kernel for 67_batchnorm2d_training_fp32: one program per channel, three passes
# over its N * H * W elements (mean, variance, normalize), then the running statistics
# updated in place as nn.BatchNorm2d does (momentum, unbiased variance). In eval mode the
# same kernel normalizes with the running statistics.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bn_kernel(x_ptr, y_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, N, C, HW, eps, momentum,
              TRAINING: tl.constexpr, BLOCK: tl.constexpr):
    c = tl.program_id(0)
    M = N * HW
    offs = tl.arange(0, BLOCK)
    if TRAINING:
        acc = tl.zeros([BLOCK], tl.float32)
        for j0 in range(0, M, BLOCK):
            j = j0 + offs
            n = j // HW
            addr = n.to(tl.int64) * C * HW + c * HW + (j - n * HW)
            acc += tl.load(x_ptr + addr, mask=j < M, other=0.0)
        mean = tl.sum(acc, axis=0) / M
        acc = tl.zeros([BLOCK], tl.float32)
        for j0 in range(0, M, BLOCK):
            j = j0 + offs
            n = j // HW
            addr = n.to(tl.int64) * C * HW + c * HW + (j - n * HW)
            x = tl.load(x_ptr + addr, mask=j < M, other=0.0)
            acc += tl.where(j < M, (x - mean) * (x - mean), 0.0)
        var = tl.sum(acc, axis=0) / M
        rm = tl.load(rm_ptr + c)
        rv = tl.load(rv_ptr + c)
        tl.store(rm_ptr + c, (1.0 - momentum) * rm + momentum * mean)
        tl.store(rv_ptr + c, (1.0 - momentum) * rv + momentum * var * M / (M - 1))
    else:
        mean = tl.load(rm_ptr + c)
        var = tl.load(rv_ptr + c)
    scale = tl.load(w_ptr + c) / tl.sqrt(var + eps)
    shift = tl.load(b_ptr + c) - mean * scale
    for j0 in range(0, M, BLOCK):
        j = j0 + offs
        n = j // HW
        addr = n.to(tl.int64) * C * HW + c * HW + (j - n * HW)
        x = tl.load(x_ptr + addr, mask=j < M, other=0.0)
        tl.store(y_ptr + addr, x * scale + shift, mask=j < M)


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x):
        bn = self.bn
        x = x.contiguous()
        y = torch.empty_like(x)
        n, c = x.shape[0], x.shape[1]
        hw = x.numel() // (n * c)
        momentum = 0.0
        if bn.training:
            if n * hw <= 1:
                raise ValueError("Expected more than 1 value per channel when training")
            bn.num_batches_tracked.add_(1)
            momentum = bn.momentum if bn.momentum is not None else 1.0 / float(bn.num_batches_tracked)
        bn_kernel[(c,)](x, y, bn.weight, bn.bias, bn.running_mean, bn.running_var, n, c, hw,
                        bn.eps, momentum, TRAINING=bn.training, BLOCK=1024, num_warps=4)
        return y
