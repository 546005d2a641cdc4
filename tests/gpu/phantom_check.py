#!/usr/bin/env python3
"""Phantom stand-ins (python/kagent_harness/phantom.py) on a GPU: what they cost and that
the compile dry run on them leaves a candidate that computes right.

  1. an arena's 8 GiB phantom: the device's free memory before and after (it should
     cost the arena's chunk), a write through one piece seen through another (the
     pieces share the chunk), then materialize_survivors with the tensor alive: the
     8 GiB become real, and two pieces hold different values;
  2. for each problem (its `_start` kernel): the compile dry run on phantom stand-ins of
     its inputs (the harness's dryrun.compile_dry_run, as a candidate's process runs it),
     the free memory it took at its end, then the kernel on the real inputs against the
     reference (worst error), with the compiled kernels the dry run left.

    PYTHONPATH=python python3 tests/gpu/phantom_check.py [--only 10_,25_] [--out F.json]

Prints one JSON line per check; exits non-zero when one fails.
"""

import argparse
import glob
import json
import os
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from kagent_harness import dryrun, loader as L  # noqa: E402
from kagent_harness.phantom import PhantomArena  # noqa: E402

MIB = 1 << 20


def free():
    torch.cuda.synchronize()
    return torch.cuda.mem_get_info()[0]


def arena_check():
    arena = PhantomArena()
    before = free()
    t = arena.empty_strided([2 << 30], [1], torch.float32)  # 8 GiB
    after = free()
    per_chunk = arena.chunk // 4
    t[0] = 5.0
    aliased = float(t[per_chunk]) == 5.0
    made = arena.materialize_survivors()
    after_real = free()
    t[0], t[per_chunk] = 1.0, 2.0
    distinct = float(t[0]) == 1.0 and float(t[per_chunk]) == 2.0
    t.fill_(3.0)
    full = float(t.sum(dtype=torch.float64)) == 3.0 * t.numel()
    del t
    torch.cuda.empty_cache()  # the float64 sum's temporary, cached by torch
    after_del = free()
    row = {"check": "arena", "phantom_cost_mib": (before - after) // MIB,
           "aliased": aliased, "materialized_mib": made // MIB,
           "real_cost_mib": (before - after_real) // MIB, "distinct_after": distinct,
           "fill_sum_ok": full, "left_after_del_mib": (before - after_del) // MIB}
    row["ok"] = (row["phantom_cost_mib"] <= 256 and aliased and made >= 8 << 30 and
                 distinct and full and row["left_after_del_mib"] <= 256)
    return row


def problem_check(path, directory):
    name = os.path.basename(path)[:-3]
    with open(path, encoding="utf-8") as f:
        mod = L.load_source(f.read(), name, directory)
    with open(path[:-3] + "_start.py", encoding="utf-8") as f:
        smod = L.load_source(f.read(), name + "_start", directory)
    init = L.make_init_inputs(mod, 0)
    model = L.build_model(mod.Model, init, 1, "cuda").eval()
    new = L.build_model(smod.ModelNew, init, 1, "cuda").eval()
    new.load_state_dict(model.state_dict(), strict=False)
    inputs = L.make_inputs(mod.get_inputs, 2, "cuda")
    spec = [{"shape": list(x.shape), "stride": list(x.stride()),
             "dtype": str(x.dtype).replace("torch.", ""), "device": x.device.type}
            if isinstance(x, torch.Tensor) else {"value": x} for x in inputs]
    input_mib = sum(x.numel() * x.element_size() for x in inputs
                    if isinstance(x, torch.Tensor)) // MIB
    before = free()
    t = time.perf_counter()
    res = dryrun.compile_dry_run(new, spec, "cuda", phantom=True)
    dry_s = time.perf_counter() - t
    taken = (before - free()) // MIB
    with torch.no_grad():
        ref = L.flatten_outputs(model(*inputs))
        t = time.perf_counter()
        got = L.flatten_outputs(new(*inputs))
        torch.cuda.synchronize()
        first_call_s = time.perf_counter() - t
    worst = max(float((g.double() - r.double()).abs().max()) for g, r in zip(got, ref))
    row = {"check": name, "inputs_mib": input_mib, "dry_run_s": round(dry_s, 2),
           "clean": res.get("clean"), "error": res.get("error"),
           "phantom": res.get("phantom"), "free_taken_mib": taken,
           "first_real_call_s": round(first_call_s, 3), "worst_abs_error": worst}
    row["ok"] = (res.get("phantom") is not None and not res.get("error") and
                 taken <= 512 + (res["phantom"]["materialized_mb"] or 0) and worst < 1e-2)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="10_,25_,35_")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    rows = [arena_check()]
    print(json.dumps(rows[-1]), flush=True)
    prefixes = [p for p in args.only.split(",") if p]
    with tempfile.TemporaryDirectory() as directory:
        for path in sorted(glob.glob(os.path.join(ROOT, "problems", "*_start.py"))):
            problem = path[:-len("_start.py")] + ".py"
            if not any(os.path.basename(problem).startswith(p) for p in prefixes):
                continue
            try:
                rows.append(problem_check(problem, directory))
            except Exception as e:  # noqa: BLE001 - reported, the next one runs
                rows.append({"check": os.path.basename(problem), "ok": False,
                             "error": f"{type(e).__name__}: {e}"})
            print(json.dumps(rows[-1]), flush=True)
            torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
