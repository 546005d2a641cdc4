"""What the CUPTI backend's counter collection costs, and where (GPU machine only).

The range profiler (libkagent_cupti.so, services/profiler/cupti/range_counters.h) over a
plain torch workload, in this process: for each setting, the passes CUPTI plans and the
collection's time split by cupti_counters.STEPS (setup, passes, the forwards inside them,
decode), so a pass's own cost is (passes - forwards in passes) / passes. Settings: the
profiler's metric set (python: CuptiCounterMetrics's list, from the chip) or a subset,
user replay (the backend's mode) or kernel replay, `max_ranges` 1024, 64 (the backend's
first bound, cupti_counters.FIRST_MAX_RANGES) or 4, and two workload sizes. One JSON line per setting, then a table.

    python3 tests/gpu/cupti_pass_cost.py --lib .gpu/bin/libkagent_cupti.so [--out F]

Builds nothing. The metric set is kernel_model/ncu_metrics.tsv's, as the backend
filters it (no launch__, no SASS counts, no gpu__time_duration).
"""

import argparse
import ctypes
import json
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

from kagent_harness import cupti_counters as C  # noqa: E402


def metric_set():
    """The backend's CUPTI metrics for compute capability 9.0 (cupti_backend.cc's
    CuptiCounterMetrics over ncu_metrics.tsv)."""
    names = []
    with open(os.path.join(REPO, "kernel_model", "ncu_metrics.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            name, arch = cols[0], cols[2] if len(cols) > 2 else "all"
            if not _arch_has(arch, 90):
                continue
            if name.startswith(("launch__", "smsp__sass_")) or name == "gpu__time_duration.sum":
                continue
            names.append(name)
    return names


def _arch_has(arch, cc):
    if arch == "all":
        return True
    if arch.endswith("-"):
        return cc >= int(arch[:-1])
    if "-" in arch:
        lo, hi = arch.split("-")
        return int(lo) <= cc <= int(hi)
    return cc == int(arch)


class Replay:
    """The library with begin bound to one replay mode and max_ranges (collect's `lib`)."""

    def __init__(self, lib, kernel_replay):
        self.lib, self.kernel_replay = lib, kernel_replay

    def kagent_cupti_counters_begin(self, metrics, max_ranges):
        return self.lib.kagent_cupti_counters_begin_replay(metrics, max_ranges,
                                                           1 if self.kernel_replay else 0)

    def __getattr__(self, name):
        return getattr(self.lib, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    import torch
    lib = ctypes.CDLL(os.path.abspath(args.lib))
    C.declare(lib)
    lib.kagent_cupti_counters_begin_replay.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                                      ctypes.c_int]
    lib.kagent_cupti_counters_begin_replay.restype = ctypes.c_int
    torch.zeros(1, device="cuda")  # the context the profiler attaches to
    full = metric_set()
    sol = ["sm__throughput.avg.pct_of_peak_sustained_elapsed",
           "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
           "dram__bytes_read.sum", "dram__bytes_write.sum"]
    sizes = {"2GiB": 1 << 29, "4MiB": 1 << 20}
    rows = []
    out = open(args.out, "w") if args.out else None
    for size_name, n in sizes.items():
        x = torch.randn(n, device="cuda")
        y = torch.empty_like(x)

        def forward():
            torch.mul(x, 2.0, out=y)

        for _ in range(3):
            forward()
        torch.cuda.synchronize()
        t = time.monotonic()
        for _ in range(20):
            forward()
        torch.cuda.synchronize()
        fwd_ms = (time.monotonic() - t) * 1e3 / 20
        settings = [("full", full, False, C.MAX_RANGES),
                    ("full", full, False, C.FIRST_MAX_RANGES), ("full", full, False, 4),
                    ("full", full, True, 4), ("sol+dram", sol, False, 4)]
        for set_name, metrics, kernel_replay, max_ranges in settings:
            for rep in range(args.repeat):
                with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
                    res = C.collect(Replay(lib, kernel_replay), metrics, forward,
                                    torch.cuda.synchronize, f.name, max_ranges)
                    lines = open(f.name, encoding="utf-8").read().splitlines()
                ranges = sum(1 for ln in lines if '"type":"counters"' in ln.replace(" ", ""))
                steps = res.get("steps_ms", {})
                own = ((steps.get("passes", 0) - steps.get("forwards in passes", 0)) /
                       max(1, res["passes"]))
                row = {"size": size_name, "forward_ms": round(fwd_ms, 3), "set": set_name,
                       "metrics": len(metrics), "replay": "kernel" if kernel_replay else "user",
                       "max_ranges": max_ranges, "rep": rep, "ok": res["ok"],
                       "error": res["error"], "passes": res["passes"], "ms": res["ms"],
                       "steps_ms": steps, "cupti_ms_per_pass": round(own, 2),
                       "ranges_written": ranges}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if out:
                    out.write(json.dumps(row) + "\n")
        x = y = None  # noqa: F841 - the tensors go before the next size
        torch.cuda.empty_cache()
    print("\nsize  set       replay max_ranges passes  ms      setup  passes fwd   decode  "
          "cupti/pass")
    for r in rows:
        s = r["steps_ms"]
        print(f"{r['size']:5} {r['set']:9} {r['replay']:6} {r['max_ranges']:10} "
              f"{r['passes']:6} {r['ms']:7.1f} {s.get('setup', 0):6.1f} "
              f"{s.get('passes', 0):6.1f} {s.get('forwards in passes', 0):5.1f} "
              f"{s.get('decode', 0):6.1f} {r['cupti_ms_per_pass']:7.2f}"
              f"{'' if r['ok'] else '  FAILED: ' + r['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
