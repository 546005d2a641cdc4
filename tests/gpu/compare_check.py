"""The gate's fused comparison kernel (python/kagent_harness/compare_fused.py) on the GPU:
its statistics against the torch path's over NaN/Inf patterns, block edges and failing
outputs, then both timed on a large fp32 output (the median of 5 calls each, synchronized).

    python3 tests/gpu/compare_check.py [--elements N]   (default 512 Mi: 2 GiB per tensor)

Prints one line per case and the timings; exits 1 on any disagreement."""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import torch  # noqa: E402

from kagent_harness import compare as C  # noqa: E402
from kagent_harness import compare_fused as F  # noqa: E402


def cases(g):
    def pair(n, dtype, noise):
        r = torch.randn(n, generator=g, device="cuda").to(dtype)
        c = (r.float() + noise * torch.randn(n, generator=g, device="cuda")).to(dtype)
        return r, c
    for n in (1, F.BLOCK - 1, F.BLOCK, 3 * F.BLOCK + 5, 10_000_019):
        for dtype in F.DTYPES:
            yield f"n={n} {dtype}", pair(n, dtype, 1e-6)
    yield "failing", pair(2 * F.BLOCK + 9, torch.float32, 1e-3)
    r, c = pair(F.BLOCK + 100, torch.float32, 0.0)
    c[F.BLOCK + 3] = float("nan")
    c[7] = float("inf")
    yield "nan/inf in the candidate", (r, c)
    r, c = pair(F.BLOCK + 100, torch.float16, 0.0)
    r[50], c[50] = float("nan"), float("nan")
    r[F.BLOCK + 1], c[F.BLOCK + 1] = float("-inf"), 2.0
    yield "non-finite reference", (r, c)


def timed(fn, reps=5):
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return sorted(times)[reps // 2] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=512 << 20)
    a = ap.parse_args()
    g = torch.Generator(device="cuda").manual_seed(11)
    bad = 0
    for name, (r, c) in cases(g):
        want = C._float_stats_torch(r, c, 1e-4, 1e-4)
        got = F.float_stats(r, c, 1e-4, 1e-4)
        diff = {k: (got[k], w) for k, w in want.items()
                if not (got[k] == w or (isinstance(w, float) and
                        math.isclose(got[k], w, rel_tol=1e-6, abs_tol=1e-12)))}
        bad += bool(diff)
        print(f"{name}: {'same' if not diff else diff}")
    r = torch.randn(a.elements, device="cuda")
    c = r + 1e-6
    t_torch = timed(lambda: C._float_stats_torch(r, c, 1e-4, 1e-4))
    t_fused = timed(lambda: F.float_stats(r, c, 1e-4, 1e-4))
    gib = a.elements * 4 / 2**30
    print(f"{a.elements} fp32 elements ({gib:.1f} GiB per tensor): torch path {t_torch:.1f} ms, "
          f"fused {t_fused:.2f} ms ({2 * gib / (t_fused / 1e3):.0f} GiB/s read)")
    print("compare_check:", "OK" if not bad else f"{bad} cases differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
