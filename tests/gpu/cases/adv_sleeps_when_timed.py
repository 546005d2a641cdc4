# Adversarial: one row per program, right and quick in the gate; past the gate's trials
# it sleeps 200 ms a call. With the timing budget (default) it is timed as slow as it is
# (CORRECT, median >= 150 ms, in 3 warm-up and 10 timed calls: the spin before each call,
# up to 20 ms, hides part of a host-side sleep; 181.7 ms on the H100); without one
# (timing_budget_ms 0: 125 calls and the burst) the timing phase's deadline, sized from
# the gate's pace, stops it within seconds (TIMEOUT).
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
            time.sleep(0.2)
        A = A.contiguous()
        x = x.contiguous()
        M, K = A.shape
        c = torch.empty((M, 1), dtype=A.dtype, device=A.device)
        matvec_row_kernel[(M,)](A, x, c, K, A.stride(0), BLOCK_K=4096)
        return c
