#!/usr/bin/env python3
"""What a measurement costs on the GPU through the harness server, as a worker drives it
(a benchmark that prints figures; docs/measurement.md has the results).

    python3 tests/gpu/measure_bench.py --out DIR [--parts kb,suite,screen] [--only ...]

Parts:
  kb      KernelBench-sized problems whose get_inputs draws on the host
          (tests/gpu/cases/kb): per problem the first candidate of a job (its trial set
          is built), then a later one prepared before the GPU is taken; GPU-held seconds
          per measurement, the phases, the GPU-busy share of the held time (NVML).
  suite   problems/ of 1-3 ms kernels, each as a job's measurements go: a baseline run
          (eager, torch.compile, the starting kernel), ROUND candidates measured while
          the next one is prepared, a final run; candidates per GPU-minute and the
          GPU-busy fraction over the held time.
  screen  one problem's starting kernel in VARIANTS knob variants, screened in one
          process: seconds per variant.
  old     --old-harness DIR: kb problems (--only, default the GEMM, the cheapest at
          ~30 s) through a one-shot harness from before the server (a copy of an older
          python/ folder), for a before/after in one run.

GPU-held time here is the wall time of a measure (or screen) request: what the worker
holds its GPU slot for. prepare runs beside it, on the CPU.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness_server import ROOT, Server  # noqa: E402

KB = [("kb_scalar_mul", "problem_scalar_mul.py", "cand_scalar_mul.py"),
      ("kb_matvec", "problem_matvec.py", "cand_matvec.py"),
      ("kb_tanh", "problem_tanh.py", "cand_tanh.py"),
      ("kb_gemm_irregular", "problem_gemm_irregular.py", "cand_gemm.py")]
SUITE = ["10_relu_fp32", "11_leaky_relu_fp32", "13_sigmoid_fp32", "15_softplus_fp32",
         "20_sum_dim_fp32", "25_softmax_fp32"]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


DEVICE = "cuda"  # --device cpu: plumbing only (KAGENT_PROBLEM_SCALE, the interpreter)


def base_request(problem_source, kernel_source=None, **extra):
    r = {"problem_source": problem_source, "device": DEVICE, "timeout_s": 600,
         "call_timeout_s": 120}
    if kernel_source:
        r["kernel_source"] = kernel_source
    r.update(extra)
    return r


class Clock:
    """GPU-held and busy seconds over a run's measure/screen requests."""

    def __init__(self, srv):
        self.srv = srv
        self.held = 0.0
        self.busy = 0.0
        self.busy_known = srv.meter is not None and srv.meter.ok
        self.lock = threading.Lock()  # the worker's GPU slot

    def held_call(self, msg):
        with self.lock:
            t0 = time.monotonic()
            r = self.srv.call(msg)
            t1 = time.monotonic()
        b = self.srv.meter.busy_seconds(t0, t1) if self.busy_known else None
        self.held += t1 - t0
        if b is not None:
            self.busy += b
        return r, t1 - t0, b


def fmt_phases(r, top=6):
    ph = (r.get("harness") or {}).get("phases_ms") or {}
    items = sorted(((k, v) for k, v in ph.items() if ":" not in k), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {v / 1e3:.2f}s" for k, v in items[:top])


def part_kb(srv, clock, only, out):
    rows = []
    print("\n== kb: KernelBench-sized problems (get_inputs on the host) ==", flush=True)
    for name, prob, cand in KB:
        if only and not any(o in name for o in only):
            continue
        p = read(os.path.join(HERE, "cases", "kb", prob))
        k = read(os.path.join(HERE, "cases", "kb", cand))
        job = "bench-" + name
        r1, held1, busy1 = clock.held_call(dict(base_request(p, k), op="measure", job_id=job))
        t = time.monotonic()
        prep = srv.call(dict(base_request(p, k + "\n# a later candidate\n"), op="prepare",
                             job_id=job))
        prep_s = time.monotonic() - t
        r2, held2, busy2 = clock.held_call(dict(base_request(p, k + "\n# a later candidate\n"),
                                                op="measure", job_id=job,
                                                prepared=prep.get("prepared")))
        srv.call({"op": "release_job", "job_id": job})
        row = {"problem": name, "first_held_s": round(held1, 2), "later_held_s": round(held2, 2),
               "prepare_s": round(prep_s, 2), "verdicts": [r1.get("verdict"), r2.get("verdict")],
               "median_ms": (r2.get("candidate") or {}).get("median_ms"),
               "busy_first_s": busy1, "busy_later_s": busy2,
               "prepared": (r2.get("harness") or {}).get("prepared"),
               "compiled": prep.get("compiled"),
               "phases_first": (r1.get("harness") or {}).get("phases_ms"),
               "phases_later": (r2.get("harness") or {}).get("phases_ms"),
               "reasons": [(r1.get("correctness") or {}).get("reason"),
                           (r2.get("correctness") or {}).get("reason")]}
        rows.append(row)
        print(f"{name:20} first {held1:6.2f} s [{fmt_phases(r1)}]", flush=True)
        print(f"{'':20} later {held2:6.2f} s held (+{prep_s:.2f} s prepare, not held) "
              f"[{fmt_phases(r2)}] verdicts {row['verdicts']} median {row['median_ms']} ms "
              f"busy {busy2}", flush=True)
        for rr in (r1, r2):
            if rr.get("verdict") != "CORRECT":
                print("   ", (rr.get("correctness") or {}).get("reason"), rr.get("log", "")[-1500:],
                      flush=True)
    out["kb"] = rows


def part_old(old_dir, only, out):
    rows = []
    print(f"\n== old: the one-shot harness in {old_dir} ==", flush=True)
    for name, prob, cand in KB:
        if not any(o in name for o in (only or ["gemm"])):
            continue
        req = base_request(read(os.path.join(HERE, "cases", "kb", prob)),
                           read(os.path.join(HERE, "cases", "kb", cand)))
        env = dict(os.environ, PYTHONPATH=old_dir)
        t = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "kagent_harness", "measure"],
                           input=json.dumps(req), capture_output=True, text=True, env=env,
                           timeout=900)
        wall = time.monotonic() - t
        try:
            r = json.loads(p.stdout)
        except ValueError:
            r = {"verdict": "NO_JSON", "correctness": {"reason": p.stderr[-500:]}}
        rows.append({"problem": name, "wall_s": round(wall, 2), "verdict": r.get("verdict"),
                     "phases": (r.get("harness") or {}).get("phases_ms")})
        print(f"{name:20} {wall:7.2f} s {r.get('verdict')} [{fmt_phases(r)}]", flush=True)
    out["old"] = rows


def distinct(source, i):
    return source + f"\n# candidate {i}\n"


def part_suite(srv, clock, only, rounds, out):
    print("\n== suite: problems/ of 1-3 ms kernels, a job's measurements each ==", flush=True)
    names = [n for n in SUITE if not only or any(o in n for o in only)]
    rows = []
    cand_held = cand_busy = 0.0
    n_cands = 0
    all_held0, all_busy0 = clock.held, clock.busy
    t_suite = time.monotonic()
    for name in names:
        p = read(os.path.join(ROOT, "problems", name + ".py"))
        start = read(os.path.join(ROOT, "problems", name + "_start.py"))
        job = "suite-" + name
        base, held_b, _ = clock.held_call(dict(base_request(p, start, baselines=True,
                                                            reference_kernel_source=start),
                                               op="measure", job_id=job))
        # Round candidates: the next is prepared while the current one holds the GPU.
        sources = [distinct(start, i) for i in range(rounds)]
        preps = {}

        def prepare(i):
            preps[i] = srv.call(dict(base_request(p, sources[i]), op="prepare", job_id=job))

        threads = [threading.Thread(target=prepare, args=(0,))]
        threads[0].start()
        helds, verdicts = [], []
        for i in range(rounds):
            threads[i].join()
            if i + 1 < rounds:
                threads.append(threading.Thread(target=prepare, args=(i + 1,)))
                threads[-1].start()
            r, held, busy = clock.held_call(dict(base_request(p, sources[i]), op="measure",
                                                 job_id=job,
                                                 prepared=(preps.get(i) or {}).get("prepared")))
            helds.append(held)
            verdicts.append(r.get("verdict"))
            cand_held += held
            cand_busy += busy or 0.0
            n_cands += 1
        final, held_f, _ = clock.held_call(dict(base_request(p, sources[0], baselines=True,
                                                             reference_kernel_source=start),
                                                op="measure", job_id=job))
        srv.call({"op": "release_job", "job_id": job})
        med = (final.get("candidate") or {}).get("median_ms")
        rows.append({"problem": name, "baseline_held_s": round(held_b, 2),
                     "candidate_held_s": [round(h, 2) for h in helds],
                     "final_held_s": round(held_f, 2), "verdicts": verdicts,
                     "baseline_verdict": base.get("verdict"), "median_ms": med,
                     "eager_ms": (final.get("eager") or {}).get("median_ms"),
                     "compiled_ms": (final.get("compiled") or {}).get("median_ms")})
        print(f"{name:22} baseline {held_b:5.2f} s, candidates "
              f"{' '.join(f'{h:.2f}' for h in helds)} s, final {held_f:5.2f} s; "
              f"{verdicts} median {med} ms", flush=True)
    wall = time.monotonic() - t_suite
    held_all = clock.held - all_held0
    busy_all = clock.busy - all_busy0
    summary = {
        "problems": len(rows), "round_candidates": n_cands,
        "round_candidate_held_s": round(cand_held, 2),
        "round_candidates_per_gpu_minute": round(n_cands / (cand_held / 60.0), 1) if cand_held else None,
        "all_measurements": len(rows) * (rounds + 2),
        "all_held_s": round(held_all, 2),
        "measurements_per_gpu_minute": round(len(rows) * (rounds + 2) / (held_all / 60.0), 1)
        if held_all else None,
        "busy_fraction_of_held": round(busy_all / held_all, 3) if clock.busy_known and held_all else None,
        "busy_fraction_round_candidates": round(cand_busy / cand_held, 3)
        if clock.busy_known and cand_held else None,
        "wall_s": round(wall, 1)}
    print(json.dumps(summary), flush=True)
    out["suite"] = {"rows": rows, "summary": summary}


def part_screen(srv, clock, variants, out):
    print("\n== screen: knob variants of one starting kernel in one process ==", flush=True)
    name = "10_relu_fp32"
    p = read(os.path.join(ROOT, "problems", name + ".py"))
    start = read(os.path.join(ROOT, "problems", name + "_start.py"))
    kernels = []
    for nw in (1, 2, 4, 8, 16, 32):
        for stages in (1, 2, 3, 4):
            src = re.sub(r"num_warps\s*=\s*\d+", f"num_warps={nw}", start)
            src += f"\n# num_stages {stages} (a distinct source)\n"
            if src not in [k["source"] for k in kernels]:
                kernels.append({"source": src})
    kernels = kernels[:variants]
    r, held, busy = clock.held_call(dict(base_request(p), op="screen", job_id="screen-" + name,
                                         kernels=kernels, timing_reps=20))
    srv.call({"op": "release_job", "job_id": "screen-" + name})
    res = r.get("results") or []
    good = [x for x in res if x.get("ok")]
    print(f"{len(kernels)} variants screened in {held:.2f} s held ({held / max(1, len(kernels)):.2f} "
          f"s per variant; busy {busy}); {len(good)} correct; medians "
          f"{[round(x['median_ms'], 4) for x in good]}", flush=True)
    if not r.get("ok"):
        print("  screen failed:", r.get("error"), r.get("log", "")[-2000:], flush=True)
    out["screen"] = {"variants": len(kernels), "held_s": round(held, 2), "busy_s": busy,
                     "results": res, "phases_ms": r.get("phases_ms")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="")
    ap.add_argument("--parts", default="kb,suite,screen")
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int, default=4, help="round candidates per suite job")
    ap.add_argument("--variants", type=int, default=12)
    ap.add_argument("--old-harness", default="")
    ap.add_argument("--pool", type=int, default=2)
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device
    only = [o for o in args.only.split(",") if o]
    parts = set(args.parts.split(","))
    out = {}
    if args.old_harness and "old" in parts:
        part_old(os.path.abspath(args.old_harness), only, out)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    srv = Server(pool=args.pool, device=args.device,
                 log_path=os.path.join(args.out, "server.log") if args.out else None)
    print(f"harness server ready in {srv.start_s:.1f} s", flush=True)
    out["server_start_s"] = round(srv.start_s, 2)
    clock = Clock(srv)
    try:
        if "kb" in parts:
            part_kb(srv, clock, only, out)
        if "suite" in parts:
            part_suite(srv, clock, only, args.rounds, out)
        if "screen" in parts:
            part_screen(srv, clock, args.variants, out)
    finally:
        out["held_s"] = round(clock.held, 2)
        out["busy_s"] = round(clock.busy, 2) if clock.busy_known else None
        print(f"\nheld {clock.held:.1f} s in all; busy "
              f"{clock.busy:.1f} s ({clock.busy / clock.held * 100:.0f} %)" if clock.held and
              clock.busy_known else f"\nheld {clock.held:.1f} s", flush=True)
        srv.close()
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "measure_bench.json"), "w") as f:
                json.dump(out, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
