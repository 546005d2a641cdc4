# Starting kernel for 94_layernorm_multidim_fp32: one program per sample (the normalized dims flattened), three passes: mean, variance, normalize; fp32 math.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, N, stride, eps, BLOCK: tl.constexpr):
    # One program per row, three passes: mean, variance, normalize; fp32 math.
    row = tl.program_id(0).to(tl.int64)
    xr = x_ptr + row * stride
    yr = y_ptr + row * stride
    offs = tl.arange(0, BLOCK)
    s = tl.zeros([BLOCK], tl.float32)
    for c in range(0, N, BLOCK):
        s += tl.load(xr + c + offs, mask=c + offs < N, other=0.0).to(tl.float32)
    mean = tl.sum(s, axis=0) / N
    v = tl.zeros([BLOCK], tl.float32)
    for c in range(0, N, BLOCK):
        mask = c + offs < N
        x = tl.load(xr + c + offs, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        v += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(v, axis=0) / N + eps)
    for c in range(0, N, BLOCK):
        mask = c + offs < N
        x = tl.load(xr + c + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c + offs, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(yr + c + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
        nn.init.normal_(self.ln.weight, 1.0, 0.1)
        nn.init.normal_(self.ln.bias, 0.0, 0.1)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = self.ln.weight.numel()
        rows = x.numel() // n
        layernorm_kernel[(rows,)](x, self.ln.weight, self.ln.bias, y, n, n, self.ln.eps,
                                  BLOCK=1024, num_warps=4)
        return y
