#!/usr/bin/env python3
"""Where a measurement's time goes: runs the harness (`python -m kagent_harness measure`)
once per problem of problems/ -- its starting kernel as the candidate and as the
reference kernel, eager and torch.compile timed, exactly what a job's baseline task
asks for -- and prints each run's wall time split into the harness's phases
(result.harness.phases_ms).

    python3 tests/gpu/phases.py --only 10_relu,08_matvec --json OUT.json
    python3 tests/gpu/phases.py --no-baselines ...   # what a round's candidate task costs

Builds nothing; run from the repository root on a GPU machine (on the CPU it runs too,
with KAGENT_PROBLEM_SCALE and TRITON_INTERPRET=1, for plumbing).
"""

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def problems(only):
    names = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "problems"))
                   if f[:2].isdigit() and f.endswith(".py") and not f.endswith("_start.py"))
    pats = [p for p in only.split(",") if p]
    return [n for n in names if not pats or any(p in n for p in pats)]


def read(name):
    with open(os.path.join(ROOT, "problems", name + ".py"), encoding="utf-8") as f:
        return f.read()


def measure(name, baselines, python, cupti_lib):
    start = read(name + "_start")
    req = {"problem_source": read(name), "kernel_source": start, "baselines": baselines,
           "timeout_s": 300}
    if baselines:
        req["reference_kernel_source"] = start
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    if cupti_lib:
        env["KAGENT_CUPTI_LIB"] = cupti_lib
    t = time.monotonic()
    p = subprocess.run([python, "-m", "kagent_harness", "measure"], input=json.dumps(req),
                       capture_output=True, text=True, env=env, timeout=600)
    wall = time.monotonic() - t
    try:
        res = json.loads(p.stdout)
    except ValueError:
        res = {"verdict": "NO_ANSWER", "correctness": {"reason": p.stderr[-400:]}}
    h = res.get("harness") or {}
    return {"problem": name, "wall_s": round(wall, 2), "verdict": res.get("verdict"),
            "reason": (res.get("correctness") or {}).get("reason", ""),
            "phases_ms": h.get("phases_ms", {}),
            "median_ms": {k: (res.get(k) or {}).get("median_ms")
                          for k in ("candidate", "reference_kernel", "eager", "compiled")},
            "warnings": h.get("warnings", [])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated substrings of problem names")
    ap.add_argument("--no-baselines", action="store_true",
                    help="candidate only (a round's task), no eager/compile/starting kernel")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--cupti-lib", default="", help="trace the candidate with this tracer")
    ap.add_argument("--json", default="", help="write the rows here")
    args = ap.parse_args()
    rows = []
    for name in problems(args.only):
        r = measure(name, not args.no_baselines, args.python, args.cupti_lib)
        rows.append(r)
        print(f"== {name}: {r['wall_s']:.1f} s, {r['verdict']} {r['reason'][:120]}")
        print("   medians (ms): " + ", ".join(f"{k} {v:.4f}" for k, v in r["median_ms"].items()
                                              if v is not None))
        for k, v in sorted(r["phases_ms"].items(), key=lambda kv: -kv[1]):
            if v >= 50:
                print(f"   {v / 1e3:8.2f} s  {k}")
        sys.stdout.flush()
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(rows, f, indent=1)
    bad = [r for r in rows if r["verdict"] != "CORRECT"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
