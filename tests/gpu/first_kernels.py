#!/usr/bin/env python3
"""The embedded brain's first kernels for a folder of problems, checked and timed beside
eager PyTorch and torch.compile: the cheapest measurement of the templates and their
sizing rules over a whole suite (a benchmark that prints figures, not a test).

    python3 tests/gpu/first_kernels.py --render build/engines/heuristic/kagent-template-render \\
        [--folder problems] [--only REGEX] [--out DIR] [--sms N] [--arch sm_XY] [--no-compile]
        [--problem-timeout 240]

For each problem (NAME.py with `class Model`, `_start.py` files skipped): the reference is
built under a seed and its op signature recorded by the harness's recorder on one forward;
`kagent-template-render --first-kernel SMS --arch ARCH` renders the brain's first kernel
for this GPU (or says why it refuses); the kernel is built under the same seed with the
reference's state_dict loaded when the keys match (as the harness does) and compared with the harness's rule
(kagent_harness.compare, tolerances by dtype); then the kernel, eager and torch.compile
are timed with triton.testing.do_bench (median; on a machine without CUDA, the median of
three wall-clock calls under Triton's interpreter and no torch.compile).

Not the harness: no sandbox, no fresh trial inputs, no L2 flush between calls. The figures
rank templates and rules against PyTorch; `kagent bench` gives the verdicts.

Each problem runs in a worker process that takes problems in order; a worker that dies,
hits a CUDA error (which poisons its context) or goes silent for --problem-timeout seconds
is replaced and the problem recorded as such. Writes DIR/first_kernels.jsonl (one JSON
object per problem) and prints a table per template and the suite's geometric means.
"""
import argparse
import copy
import importlib.util
import json
import math
import os
import queue
import re
import subprocess
import sys
import threading
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SEED = 1234


def problems_in(folder, only):
    names = []
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".py") or f.endswith("_start.py") or f.startswith("test_"):
            continue
        with open(os.path.join(folder, f)) as fh:
            if not re.search(r"^class Model\b", fh.read(), re.M):
                continue
        if only and not re.search(only, f[:-3]):
            continue
        names.append(f[:-3])
    return names


# ---- the worker: one process, problems in order, one JSON line each ---------------------

def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timer(torch, cuda):
    if cuda:
        import triton.testing
        return lambda fn: triton.testing.do_bench(fn, return_mode="median")

    def wall(fn):
        times = []
        for _ in range(3):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
        return sorted(times)[1]
    return wall


def measure_one(args, name, torch, compare, record, exec_source):
    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"
    row = {"problem": name}
    prob = _load(os.path.join(args.folder, name + ".py"), f"p_{name}")
    init = list(prob.get_init_inputs())
    torch.manual_seed(SEED)
    ref = prob.Model(*init).to(dev)
    torch.manual_seed(SEED + 1)
    inputs = [x.to(dev) if torch.is_tensor(x) else x for x in prob.get_inputs()]
    sig = record(copy.deepcopy(ref), inputs)
    arch = ["--arch", args.arch] if args.arch else []
    r = subprocess.run([args.render, "--first-kernel", str(args.sms)] + arch,
                       input=json.dumps(sig), capture_output=True, text=True)
    if r.returncode != 0:
        row.update(status="refused", reason=(r.stderr.strip().splitlines() or [""])[-1])
        return row
    source = r.stdout
    m = re.match(r"# kagent-template: (\S+)", source)
    row["template"] = m.group(1) if m else "?"
    torch.manual_seed(SEED)
    cand = exec_source(source, f"first_{name}").ModelNew(*init).to(dev)
    own, theirs = cand.state_dict(), ref.state_dict()
    if own and set(own) == set(theirs) and all(own[k].shape == theirs[k].shape for k in own):
        cand.load_state_dict(theirs)
    with torch.no_grad():
        expected = ref(*inputs)
        got = cand(*[x.clone() if torch.is_tensor(x) else x for x in inputs])
        if cuda:
            torch.cuda.synchronize()
        expected_list = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        got_list = list(got) if isinstance(got, (tuple, list)) else [got]
        atol, rtol = compare.tolerances(expected_list)
        rms = max((e.double().pow(2).mean().sqrt().item() for e in expected_list
                   if torch.is_tensor(e) and e.numel()), default=0.0)
        verdict = compare.compare(expected_list, got_list, atol * max(1.0, rms), rtol)
        row["correct"] = bool(verdict["ok"])
        if not verdict["ok"]:
            row.update(status="incorrect", reason=verdict["reason"])
            return row
        bench = _timer(torch, cuda)
        row["kernel_ms"] = bench(lambda: cand(*inputs))
        row["eager_ms"] = bench(lambda: ref(*inputs))
        if cuda and not args.no_compile:
            compiled = torch.compile(ref)
            compiled(*inputs)
            row["compile_ms"] = bench(lambda: compiled(*inputs))
    row["status"] = "ok"
    return row


def worker(args, names):
    sys.path.insert(0, os.path.join(REPO, "python"))
    sys.path.insert(0, os.path.join(REPO, "engines", "heuristic", "tests"))
    import torch
    from kagent_harness import compare
    from kagent_harness.signature import record
    from template_render import exec_source
    for name in names:
        print(json.dumps({"start": name}), flush=True)
        try:
            row = measure_one(args, name, torch, compare, record, exec_source)
        except Exception as e:  # the problem's failure, recorded; a CUDA error ends the worker
            msg = f"{type(e).__name__}: {e}".strip().splitlines()[0][:400]
            row = {"problem": name, "status": "error", "reason": msg}
            if "CUDA" in msg or "cuda" in msg:
                print(json.dumps(row), flush=True)
                sys.exit(3)
        print(json.dumps(row), flush=True)


# ---- the parent: workers, timeouts, the table -------------------------------------------

def run_all(args, names):
    rows = {}
    todo = list(names)
    while todo:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(todo)]
        for flag in ("render", "folder", "sms", "arch"):
            cmd += [f"--{flag}", str(getattr(args, flag))]
        if args.no_compile:
            cmd.append("--no-compile")
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, bufsize=1)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in child.stdout] + [lines.put(None)],
                         daemon=True).start()
        current, started = None, time.time()
        while True:
            try:
                line = lines.get(timeout=5)
            except queue.Empty:
                if current and time.time() - started > args.problem_timeout:
                    child.kill()
                    rows[current] = {"problem": current, "status": "timeout",
                                     "reason": f"no result in {args.problem_timeout} s"}
                    emit(args, rows[current])
                    break
                continue
            if line is None:
                child.wait()
                if current and current not in rows:
                    rows[current] = {"problem": current, "status": "error",
                                     "reason": f"the worker exited ({child.returncode})"}
                    emit(args, rows[current])
                break
            obj = json.loads(line)
            if "start" in obj:
                current, started = obj["start"], time.time()
                continue
            rows[obj["problem"]] = obj
            emit(args, obj)
        todo = [n for n in names if n not in rows]
    return [rows[n] for n in names]


def emit(args, row):
    print(json.dumps(row), flush=True)
    if args.out:
        with open(os.path.join(args.out, "first_kernels.jsonl"), "a") as fh:
            fh.write(json.dumps(row) + "\n")


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def table(rows):
    def fmt(x):
        return "-" if x is None else f"{x:.2f}x"
    by = {}
    for r in rows:
        by.setdefault(r.get("template", "(" + r["status"] + ")"), []).append(r)
    out = ["| template | problems | correct | vs eager | vs torch.compile | vs best |",
           "|---|---:|---:|---:|---:|---:|"]

    def ratios(rs, key):
        return [r[key] / r["kernel_ms"] for r in rs if r.get(key) and r.get("kernel_ms")]

    def best(rs):
        return [min(r["eager_ms"], r.get("compile_ms") or r["eager_ms"]) / r["kernel_ms"]
                for r in rs if r.get("kernel_ms")]
    for t in sorted(by):
        rs = by[t]
        out.append(f"| {t} | {len(rs)} | {sum(1 for r in rs if r.get('status') == 'ok')} | "
                   f"{fmt(geomean(ratios(rs, 'eager_ms')))} | "
                   f"{fmt(geomean(ratios(rs, 'compile_ms')))} | {fmt(geomean(best(rs)))} |")
    ok = [r for r in rows if r.get("status") == "ok"]
    out.append(f"\n{len(ok)} of {len(rows)} problems have a correct first kernel; geometric "
               f"mean {fmt(geomean(ratios(ok, 'eager_ms')))} vs eager, "
               f"{fmt(geomean(ratios(ok, 'compile_ms')))} vs torch.compile, "
               f"{fmt(geomean(best(ok)))} vs the faster of the two; faster than "
               f"torch.compile on {sum(1 for x in ratios(ok, 'compile_ms') if x > 1)}.")
    for r in rows:
        if r.get("status") != "ok":
            out.append(f"- {r['problem']}: {r['status']}: {r.get('reason', '')}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--render", required=True, help="kagent-template-render")
    ap.add_argument("--folder", default=os.path.join(REPO, "problems"))
    ap.add_argument("--only", default="", help="regex on the problem names")
    ap.add_argument("--out", default="", help="folder for first_kernels.jsonl and table.md")
    ap.add_argument("--sms", type=int, default=0,
                    help="SM count given to the brain (default: this GPU's, else 132)")
    ap.add_argument("--arch", default=None,
                    help="arch given to the brain, e.g. sm_90 (default: this GPU's, else none: "
                         "the rules then take no arch-specific template)")
    ap.add_argument("--no-compile", action="store_true", help="do not time torch.compile")
    ap.add_argument("--problem-timeout", type=float, default=240)
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args, json.loads(args.worker))
        return
    # The brain picks templates by arch and sizes grids by SM count: this GPU's by default
    # (without an arch no Hopper rule applies, as for a job on an unknown GPU).
    import torch
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        args.sms = args.sms or props.multi_processor_count
        if args.arch is None:
            args.arch = f"sm_{props.major}{props.minor}"
    args.sms = args.sms or 132
    args.arch = args.arch or ""
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    names = problems_in(args.folder, args.only)
    if not names:
        sys.exit(f"no problems in {args.folder}" + (f" matching {args.only}" if args.only else ""))
    rows = run_all(args, names)
    text = table(rows)
    print(text)
    if args.out:
        with open(os.path.join(args.out, "table.md"), "w") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
