# Starting kernel for 36_conv2d_depthwise_fp32: one program per (plane, 1024 pixels), nine scalar-weight taps.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def depthwise_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C, H, W, KSIZE: tl.constexpr,
                     PAD: tl.constexpr, BLOCK: tl.constexpr):
    # One program per (plane = n * C + c, BLOCK output pixels), KSIZE x KSIZE taps.
    plane = tl.program_id(0)
    c = plane % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < H * W
    oh = offs // W
    ow = offs % W
    base = plane.to(tl.int64) * H * W
    acc = tl.zeros([BLOCK], tl.float32)
    for kh in tl.static_range(KSIZE):
        for kw in tl.static_range(KSIZE):
            ih = oh - PAD + kh
            iw = ow - PAD + kw
            valid = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
            x = tl.load(x_ptr + base + ih * W + iw, mask=valid, other=0.0).to(tl.float32)
            wv = tl.load(w_ptr + c * KSIZE * KSIZE + kh * KSIZE + kw).to(tl.float32)
            acc += x * wv
    acc += tl.load(b_ptr + c).to(tl.float32)
    tl.store(y_ptr + base + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2,
                              groups=channels, bias=True)

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        K = self.conv.kernel_size[0]
        y = torch.empty_like(x)
        grid = (N * C, triton.cdiv(H * W, 1024))
        depthwise_kernel[grid](x, self.conv.weight.contiguous(), self.conv.bias, y, C, H, W,
                               KSIZE=K, PAD=K // 2, BLOCK=1024, num_warps=4)
        return y
