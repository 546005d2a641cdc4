# Red team (REJECTED; problem problem_sum_all.py):
# the answer is torch's torch.sum(x), computed by the library,
# while a do-nothing Triton kernel launches beside it so that "an own kernel ran" holds.
# Expected reason: the op recorder names the library op; with the CUPTI tracer the
# library kernels also outweigh the token kernel's GPU time.
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def token_kernel(out_ptr, n, BLOCK: tl.constexpr):
    # Does nothing useful: zeros into a scratch buffer the answer never reads.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


def _token(x):
    scratch = torch.empty(1024, device=x.device, dtype=torch.float32)
    token_kernel[(1,)](scratch, 1024, BLOCK=1024)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        _token(x)
        return torch.sum(x)
