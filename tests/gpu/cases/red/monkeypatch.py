# Patches what it can reach inside its own process so that a wrong answer looks right:
# torch's comparisons, the timers and Triton's benchmark. Its answer is zeros; the
# supervisor compares in its own process, so the verdict must be INCORRECT.
import time

import torch

ANSWER = "zeros"


def attack():
    torch.allclose = lambda *a, **k: True
    torch.equal = lambda *a, **k: True
    torch.testing.assert_close = lambda *a, **k: None
    time.perf_counter = lambda: 0.0
    try:
        import triton.testing
        triton.testing.do_bench = lambda *a, **k: 1e-6
    except ImportError:
        pass
