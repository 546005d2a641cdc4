# Starting kernel for 29_batchnorm_inference_fp32: one program per (plane, 1024 positions), statistics read per program.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def batchnorm_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, y_ptr, C, HW, eps,
                     BLOCK: tl.constexpr):
    # One program per (n * C + c, BLOCK positions); per-channel statistics from the buffers.
    plane = tl.program_id(0)
    c = plane % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    base = plane.to(tl.int64) * HW
    mean = tl.load(mean_ptr + c)
    var = tl.load(var_ptr + c)
    w = tl.load(w_ptr + c)
    b = tl.load(b_ptr + c)
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    y = (x - mean) / tl.sqrt(var + eps) * w + b
    tl.store(y_ptr + base + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(channels))
        self.bias = nn.Parameter(0.1 * torch.randn(channels))
        self.register_buffer("running_mean", 0.1 * torch.randn(channels))
        self.register_buffer("running_var", 0.5 + torch.rand(channels))
        self.eps = 1e-5

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        N, C = x.shape[0], x.shape[1]
        HW = x.numel() // (N * C)
        grid = (N * C, triton.cdiv(HW, 1024))
        batchnorm_kernel[grid](x, self.running_mean, self.running_var, self.weight, self.bias, y,
                               C, HW, self.eps, BLOCK=1024, num_warps=4)
        return y
