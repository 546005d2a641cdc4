# Adversarial (TIMEOUT within seconds): one row per program, right in the gate; past the
# gate's trials it stops time.perf_counter in its own process, so the timing loop's
# warm-up (at least 100 ms) would never end and it would hold the GPU until the
# request's whole timeout.
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matvec_row_kernel(a_ptr, x_ptr, c_ptr, K, stride_am, BLOCK_K: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    a_row = a_ptr + row * stride_am
    acc = tl.zeros([BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs = k0 + tl.arange(0, BLOCK_K)
        mask = offs < K
        a = tl.load(a_row + offs, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        acc += a * x
    tl.store(c_ptr + row, tl.sum(acc, axis=0).to(c_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, A, x):
        self.calls += 1
        if self.calls > 11:
            frozen = time.perf_counter()
            time.perf_counter = lambda: frozen  # the clock stops here
        A = A.contiguous()
        x = x.contiguous()
        M, K = A.shape
        c = torch.empty((M, 1), dtype=A.dtype, device=A.device)
        matvec_row_kernel[(M,)](A, x, c, K, A.stride(0), BLOCK_K=4096)
        return c
