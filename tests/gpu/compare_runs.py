"""Two runs of the suite through kagentd, task by task for the problems both ran: where
the held seconds went in each (a before/after or an A/B on one machine, e.g. the
supervisor with and without torch.compile compiled ahead). No GPU needed.

    python3 tests/gpu/compare_runs.py LOG_A LOG_B [--phases 12] [--per-problem PHASE]

LOG_A and LOG_B are kagentd logs (kagentd.log.gz as bench_suite.sh brings them back).
Tasks are matched by problem (the worker's "job submitted: NAME" line) and kind
(slot_timeline.task_kind); per kind, over the (problem, kind) pairs both runs have, it
prints the pairs, the held and busy seconds per task in A and in B, and the --phases
longest harness phases (either run's) per task in A and in B. --per-problem PHASE adds
one line per problem and kind: held in A and B and PHASE's seconds in A and B.
"""

import argparse
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import slot_timeline as st  # noqa: E402


def _open(path):
    return gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else \
        open(path, encoding="utf-8")


def problems_of_jobs(lines):
    """{job_id: problem name} from the worker's "job submitted: NAME" lines."""
    out = {}
    for line in lines:
        try:
            d = json.loads(line)
        except ValueError:
            continue
        msg = str(d.get("msg", "")) if isinstance(d, dict) else ""
        if msg.startswith("job submitted: ") and d.get("job_id"):
            out[str(d["job_id"])] = msg.split(": ", 1)[1].strip()
    return out


def by_problem(lines):
    """{(problem, kind): [task, ...]} of one log's lines (a list)."""
    names = problems_of_jobs(lines)
    out = {}
    for t in st.read_tasks(lines):
        name = names.get(t["job"])
        if name:
            out.setdefault((name, t["kind"]), []).append(t)
    return out


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else 0.0


def compare(a, b, top=12):
    """{kind: {"pairs", "held", "busy", "phases"}} over the (problem, kind) pairs in both
    `a` and `b` (by_problem's), each figure an [A, B] of seconds per task; "phases" lists
    [name, A, B] for the `top` longest phases of either run."""
    out = {}
    for kind in st.KINDS:
        keys = sorted(k for k in set(a) & set(b) if k[1] == kind)
        if not keys:
            continue
        ta = [t for k in keys for t in a[k]]
        tb = [t for k in keys for t in b[k]]
        names = {}
        for ts in (ta, tb):
            for t in ts:
                for n, v in t["phases"].items():
                    names[n] = names.get(n, 0.0) + v / len(ts)
        longest = sorted(names, key=lambda n: -names[n])[:top]
        out[kind] = {
            "pairs": len(keys),
            "held": [round(_mean(t["held"] for t in ta), 3), round(_mean(t["held"] for t in tb), 3)],
            "busy": [round(_mean(t["busy"] for t in ta), 3), round(_mean(t["busy"] for t in tb), 3)],
            "phases": [[n, round(_mean(t["phases"].get(n, 0.0) for t in ta), 3),
                        round(_mean(t["phases"].get(n, 0.0) for t in tb), 3)] for n in longest],
        }
    return out


def per_problem(a, b, phase):
    """[(problem, kind, held A, held B, phase A, phase B)] for the pairs in both."""
    rows = []
    for key in sorted(set(a) & set(b)):
        ta, tb = a[key], b[key]
        rows.append((key[0], key[1], _mean(t["held"] for t in ta), _mean(t["held"] for t in tb),
                     _mean(t["phases"].get(phase, 0.0) for t in ta),
                     _mean(t["phases"].get(phase, 0.0) for t in tb)))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("log_a")
    ap.add_argument("log_b")
    ap.add_argument("--phases", type=int, default=12)
    ap.add_argument("--per-problem", default="")
    args = ap.parse_args(argv)
    with _open(args.log_a) as f:
        a = by_problem(list(f))
    with _open(args.log_b) as f:
        b = by_problem(list(f))
    res = compare(a, b, args.phases)
    if not res:
        print("no problem ran in both logs")
        return 1
    for kind, r in res.items():
        print(f"{kind}: {r['pairs']} problems in both; held {r['held'][0]:.2f} s -> "
              f"{r['held'][1]:.2f} s a task, GPU busy {r['busy'][0]:.2f} s -> {r['busy'][1]:.2f} s")
        for name, va, vb in r["phases"]:
            print(f"    {va:8.3f} -> {vb:8.3f}  {name}")
    if args.per_problem:
        print(f"\nper problem: held A, held B, '{args.per_problem}' A, B")
        for name, kind, ha, hb, pa, pb in per_problem(a, b, args.per_problem):
            print(f"  {name[:40]:40s} {kind:9s} {ha:6.2f} {hb:6.2f}   {pa:7.3f} {pb:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
