"""Where a GPU worker's slot went, from kagentd's (or kagent-benchmark's) JSON log.

Reads the worker's `measured:`, `screened` and `profiled:` lines (each ends when its task
gave the slot back and carries `gpu_seconds`, `prepare_seconds`, `gpu_busy_seconds` and,
from session 19 on, `slot_wait_seconds`) and prints:
  - the slot's occupancy: held seconds over the span from the first grant to the last
    release, and per window of WINDOW seconds (approximate: the lines' times lag);
  - the GPU busy share of the held seconds (NVML's busy seconds the tasks logged);
  - per kind of task (baseline, profile, round candidate, screen, final run): count, held
    mean and median, NVML busy share, preparation and slot wait means;
  - with slot_wait_seconds, the tasks in flight at the worker (from the start of their
    preparation to their release) sampled once a second: how often the slot was free
    while tasks were still preparing;
  - per kind, the --phases longest of the harness's phases (the lines' "phases", all of
    them from session 25 on, six before), as seconds per task, and the held seconds
    outside the harness's own account of the slot (its "supervisor: the whole request",
    a profile's "profile: the GPU held, in the harness"): the worker's and the RPC's;
    a profile's held time as the worker's gate split it (from session 31 on) shows as
    the phases "worker: ...".

    python3 tests/gpu/slot_timeline.py KAGENTD_LOG [--window 30] [--phases 8] [--json OUT]

A log gzipped by bench_suite.sh (kagentd.log.gz) is read as is. No GPU needed.
"""

import argparse
import datetime
import gzip
import json
import re
import statistics
import sys

KINDS = ("baseline", "profile", "candidate", "screen", "final")
# The harness's own account of the held span, by kind of line.
HARNESS_HELD = ("supervisor: the whole request", "profile: the GPU held, in the harness")
_PHASE = re.compile(r"^(.*) (\d+(?:\.\d+)?) ms$")


def parse_phases(text):
    """A line's "phases" ("name 612 ms; name 401 ms") as {name: seconds}; {} when absent."""
    out = {}
    for part in str(text or "").split("; "):
        m = _PHASE.match(part.strip())
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2)) / 1e3
    return out


def task_kind(msg, task):
    if msg.startswith("profiled"):
        return "profile"
    if msg.startswith("screened"):
        return "screen"
    if "/final/" in task:
        return "final"
    if task.endswith("/baseline"):
        return "baseline"
    return "candidate"


def _seconds(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def read_tasks(lines):
    """The slot's tasks in the log, each {kind, start, end, held, busy, prepare, wait,
    phases, job}, by start (seconds since the epoch); lines that are not a task's are
    skipped."""
    tasks = []
    for line in lines:
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if not isinstance(d, dict) or "gpu_seconds" not in d or "ts" not in d:
            continue
        msg = str(d.get("msg", ""))
        if not msg.startswith(("measured", "screened", "profiled")):
            continue
        end = datetime.datetime.fromisoformat(str(d["ts"]).replace("Z", "+00:00")).timestamp()
        held = _seconds(d.get("gpu_seconds"))
        if held <= 0:  # answered at prepare, or never granted: no slot time
            continue
        phases = parse_phases(d.get("phases"))
        # A profile's held time as the worker's gate saw it (from session 31 on).
        for key, name in WORKER_GATE_FIELDS:
            if key in d:
                phases[name] = _seconds(d.get(key))
        tasks.append({"kind": task_kind(msg, str(d.get("task") or "")), "start": end - held,
                      "end": end, "held": held, "busy": _seconds(d.get("gpu_busy_seconds")),
                      "prepare": _seconds(d.get("prepare_seconds")),
                      "wait": _seconds(d.get("slot_wait_seconds"))
                      if "slot_wait_seconds" in d else None,
                      "phases": phases,
                      "job": str(d.get("job_id") or "")})
    tasks.sort(key=lambda t: t["start"])
    return tasks


# A profile's "profiled:" line: its held seconds split by the worker's gate
# (services/profiler/profile_gate.h, GatedRunInfo), as phases of these names.
WORKER_GATE_FIELDS = (("grant_to_go_seconds", "worker: slot granted to go written"),
                      ("gpu_part_seconds", "worker: go written to done seen"),
                      ("slot_release_seconds", "worker: the slot's release"))


def phase_means(ts, top):
    """The `top` longest phases of tasks `ts` as [name, seconds per task], longest first,
    and the held seconds per task outside the harness's account (None when no task
    carries HARNESS_HELD)."""
    total = {}
    for t in ts:
        for name, sec in t["phases"].items():
            total[name] = total.get(name, 0.0) + sec
    means = sorted(((n, v / len(ts)) for n, v in total.items()), key=lambda x: -x[1])
    outside = [t["held"] - next(t["phases"][n] for n in HARNESS_HELD if n in t["phases"])
               for t in ts if any(n in t["phases"] for n in HARNESS_HELD)]
    return ([[n, round(v, 3)] for n, v in means[:top]],
            round(statistics.mean(outside), 3) if outside else None)


def summarize(tasks, window=30.0, top_phases=8):
    """The figures the module comment lists, as a dict."""
    if not tasks:
        return {"tasks": 0}
    t0, t1 = tasks[0]["start"], max(t["end"] for t in tasks)
    span = t1 - t0
    held = sum(t["held"] for t in tasks)
    # The slot is exclusive, so the held seconds add up; but a line is logged a little
    # after its task let the slot go (a profile's after its trace is read), so the
    # intervals rebuilt from the lines can overlap and a window's share is capped at 1.
    windows = []
    a = t0
    while a < t1:
        b = min(a + window, t1)
        h = sum(max(0.0, min(b, t["end"]) - max(a, t["start"])) for t in tasks)
        windows.append(round(min(1.0, h / (b - a)), 2) if b > a else 0.0)
        a = b
    kinds = {}
    for k in KINDS:
        ts = [t for t in tasks if t["kind"] == k]
        if not ts:
            continue
        h = [t["held"] for t in ts]
        waits = [t["wait"] for t in ts if t["wait"] is not None]
        phases, outside = phase_means(ts, top_phases)
        kinds[k] = {"count": len(ts), "held_mean": round(statistics.mean(h), 2),
                    "phases_s": phases, "outside_harness_s": outside,
                    "held_median": round(statistics.median(h), 2),
                    "busy_share": round(sum(t["busy"] for t in ts) / sum(h), 2),
                    "prepare_mean": round(statistics.mean(t["prepare"] for t in ts), 1),
                    "wait_mean": round(statistics.mean(waits), 2) if waits else None}
    busy = sum(t["busy"] for t in tasks)
    out = {"tasks": len(tasks), "span_s": round(span, 1), "held_s": round(held, 1),
           "busy_s": round(busy, 1), "busy_share": round(busy / held, 2) if held > 0 else 0.0,
           "occupancy": round(min(1.0, held / span), 2) if span > 0 else 0.0,
           "windows": windows, "window_s": window, "kinds": kinds}
    if all(t["wait"] is not None for t in tasks):
        # A task is at the worker from its preparation's start to its release.
        free_while_preparing = samples = 0
        in_flight = []
        s = t0
        while s < t1:
            here = [t for t in tasks if t["start"] - t["wait"] - t["prepare"] <= s < t["end"]]
            holding = any(t["start"] <= s < t["end"] for t in here)
            in_flight.append(len(here))
            samples += 1
            if not holding and here:
                free_while_preparing += 1
            s += 1.0
        out["in_flight_mean"] = round(statistics.mean(in_flight), 1)
        out["slot_free_while_tasks_prepared"] = round(free_while_preparing / samples, 2)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--window", type=float, default=30.0)
    ap.add_argument("--phases", type=int, default=8)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    opener = gzip.open if args.log.endswith(".gz") else open
    with opener(args.log, "rt", encoding="utf-8", errors="replace") as f:
        s = summarize(read_tasks(f), args.window, args.phases)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(s, f, indent=1)
    if not s["tasks"]:
        print("no slot tasks in the log")
        return 1
    print(f"{s['tasks']} tasks: held {s['held_s']} s of {s['span_s']} s "
          f"(occupancy {s['occupancy']:.0%}); per {s['window_s']:g} s: "
          + " ".join(f"{w:.0%}" for w in s["windows"]))
    print(f"GPU busy {s['busy_s']} s of the {s['held_s']} s held ({s['busy_share']:.0%})")
    print(f"{'kind':10} {'count':>5} {'held mean':>9} {'median':>7} {'busy':>5} "
          f"{'prepare':>8} {'slot wait':>9}")
    for k, v in s["kinds"].items():
        wait = "-" if v["wait_mean"] is None else f"{v['wait_mean']:.2f}"
        print(f"{k:10} {v['count']:5} {v['held_mean']:9.2f} {v['held_median']:7.2f} "
              f"{v['busy_share']:5.0%} {v['prepare_mean']:8.1f} {wait:>9}")
    if "in_flight_mean" in s:
        print(f"tasks at the worker: {s['in_flight_mean']} on average; the slot was free "
              f"while some prepared {s['slot_free_while_tasks_prepared']:.0%} of the time")
    else:
        print("(slot_wait_seconds missing from some tasks: a worker from before session 21 logs none for profiles)")
    if args.phases > 0:
        print("phases, seconds per task (a task's phases nest and overlap; prepare phases "
              "are before the slot):")
        for k, v in s["kinds"].items():
            outside = "" if v["outside_harness_s"] is None else \
                f"; held outside the harness's account {v['outside_harness_s']:.3f} s"
            print(f"  {k} (held {v['held_mean']:.2f} s{outside})")
            for name, sec in v["phases_s"]:
                print(f"    {sec:7.3f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
