# kagent-template: gemm_diag
# diag(d) @ B (SIDE left: row i of B scaled by d[i]) or B @ diag(d) (SIDE right: column j
# by d[j]) without forming the N x N diagonal matrix or multiplying by its zeros: one pass
# over B, BLOCK_R x BLOCK_C tiles, products in fp32, output in the promoted dtype.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def diag_scale_kernel(d_ptr, b_ptr, c_ptr, R, C, stride_d, stride_br, stride_bc,
                      BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, LEFT: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows[:, None] < R) & (cols[None, :] < C)
    b = tl.load(b_ptr + rows[:, None].to(tl.int64) * stride_br + cols[None, :] * stride_bc,
                mask=mask, other=0.0).to(tl.float32)
    if LEFT:
        d = tl.load(d_ptr + rows * stride_d, mask=rows < R, other=0.0).to(tl.float32)
        c = b * d[:, None]
    else:
        d = tl.load(d_ptr + cols * stride_d, mask=cols < C, other=0.0).to(tl.float32)
        c = b * d[None, :]
    tl.store(c_ptr + rows[:, None].to(tl.int64) * C + cols[None, :],
             c.to(c_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *inputs):
        # The diagonal is the 1-D input, the matrix the 2-D one, whatever their order.
        tensors = [t for t in inputs if torch.is_tensor(t)]
        d = next(t for t in tensors if t.dim() == 1)
        B = next(t for t in tensors if t.dim() == 2)
        out_dtype = torch.promote_types(d.dtype, B.dtype)
        R, C = B.shape
        if d.shape[0] != (R if "{{SIDE}}" == "left" else C):
            raise ValueError(f"diag of {d.shape[0]} elements does not match {tuple(B.shape)}")
        c = torch.empty((R, C), device=B.device, dtype=out_dtype)
        if c.numel() == 0:
            return c
        BLOCK_R = {{BLOCK_R}}
        BLOCK_C = {{BLOCK_C}}
        grid = (triton.cdiv(R, BLOCK_R), triton.cdiv(C, BLOCK_C))
        diag_scale_kernel[grid](d, B, c, R, C, d.stride(0), B.stride(0), B.stride(1),
                                BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, LEFT="{{SIDE}}" == "left",
                                num_warps={{num_warps}})
        return c
