#!/usr/bin/env python3
"""Several GPUs on one host: scaling, pinning, stability across GPUs, and a worker killed
mid-run. Builds nothing: runs the binaries in $KAGENT_BIN (default .gpu/bin of a bundle,
else build/tools) from the repository root.

    python3 tests/gpu/multi_gpu.py --out DIR [--phases stability,scaling,fault]

Topology: kagentd with no in-process worker (--gpus none) and one `kagent-benchmark`
process per GPU (--gpu i), registered with the coordinator under the internal token, as
on a cluster. Phases:

  stability  the case study's one-row-per-program kernel measured by the harness on each
             GPU (both at once); the medians must agree within 2%.
  scaling    the same workload (the problems below, KAGENT_PROBLEM_SCALE, rounds) with
             1 GPU worker and then with all of them; GPU tasks (measure + profile) and
             candidates finished per minute inside a fixed window after a warm-up. While
             the all-GPU run goes, nvidia-smi is sampled: every process on GPU i must
             descend from the worker pinned to GPU i, and no GPU may hold processes of two
             measurements at once.
  fault      all GPU workers on a small suite; one worker is SIGKILLed mid-run; every job
             must still finish DONE.

Writes DIR/multi_gpu.json and prints a summary table. Exit 0 when every check passed.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKEN = "multi-gpu-internal-token"
DEFAULT_PROBLEMS = ("10_relu_fp32,20_sum_dim_fp32,25_softmax_fp32,27_layernorm_bf16,"
                    "09_gemv_fp32,37_mse_loss_fp32")


def bin_dir():
    b = os.environ.get("KAGENT_BIN")
    if b:
        return b
    g = os.path.join(REPO, ".gpu", "bin")
    return g if os.path.exists(os.path.join(g, "kagentd")) else os.path.join(REPO, "build", "tools")


def binary(name):
    b = bin_dir()
    for cand in (os.path.join(b, name), os.path.join(REPO, "build", "services", "benchmark", name)):
        if os.path.exists(cand):
            return cand
    raise FileNotFoundError(name)


def gpu_count():
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,pci.bus_id", "--format=csv,noheader"],
                         capture_output=True, text=True)
    rows = [r.split(",") for r in out.stdout.strip().splitlines() if r.strip()]
    return {int(i): b.strip().lower() for i, b in rows}


def read_ports(path, timeout=120):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open(path) as f:
                for line in f:
                    if '"port"' in line:
                        return json.loads(line)
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"no ports line in {path}")


def scrape(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    vals = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r"([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)", line)
        if m:
            vals[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return vals


def total(vals, name, **labels):
    s = 0.0
    for k, v in vals.items():
        if k == name or k.startswith(name + "{"):
            if all(f'{lk}="{lv}"' in k for lk, lv in labels.items()):
                s += v
    return s


class Cluster:
    """kagentd (no in-process workers) plus one kagent-benchmark per GPU in `gpus`."""

    device = "cuda"

    def __init__(self, out, tag, gpus, scale, beam=1, fixes=2):
        self.dir = os.path.join(out, tag)
        os.makedirs(self.dir, exist_ok=True)
        self.procs, self.workers = [], {}
        self.env = dict(os.environ, KAGENT_PROBLEM_SCALE=str(scale), KAGENT_INTERNAL_TOKEN=TOKEN)
        self.env.pop("CUDA_VISIBLE_DEVICES", None)
        d_out = os.path.join(self.dir, "kagentd.out")
        self.daemon = self._spawn([binary("kagentd"), "--listen=127.0.0.1:0",
                                   "--metrics-listen=127.0.0.1:0", "--gpus=none",
                                   f"--db={os.path.join(self.dir, 'jobs.db')}",
                                   f"--default-beam={beam}", f"--default-fixes={fixes}"],
                                  d_out, os.path.join(self.dir, "kagentd.log"))
        ports = read_ports(d_out)
        self.port, self.metrics_port = ports["port"], ports["metrics_port"]
        for g in gpus:
            w_out = os.path.join(self.dir, f"worker{g}.out")
            p = self._spawn([binary("kagent-benchmark"), "--listen=127.0.0.1:0",
                             "--metrics-listen=127.0.0.1:0", f"--gpu={g}", f"--device={self.device}",
                             f"--worker-id=gpu{g}", f"--coordinator=127.0.0.1:{self.port}",
                             "--lease-renew-seconds=2"],
                            w_out, os.path.join(self.dir, f"worker{g}.log"))
            self.workers[g] = p
        end = time.time() + 180
        while time.time() < end:
            alive = total(scrape(self.metrics_port), "kagent_gpu_workers", state="alive")
            if alive >= len(gpus):
                return
            time.sleep(0.5)
        raise RuntimeError(f"{tag}: workers did not register")

    def _spawn(self, argv, out, err):
        p = subprocess.Popen(argv, stdout=open(out, "w"), stderr=open(err, "w"), env=self.env,
                             cwd=REPO, start_new_session=True)
        self.procs.append(p)
        return p

    def bench(self, problems_dir, rounds, concurrency, tag):
        return subprocess.Popen([binary("kagent"), "--server", f"127.0.0.1:{self.port}", "bench",
                                 problems_dir, "--out", os.path.join(self.dir, "bench"),
                                 "--rounds", str(rounds), "--concurrency", str(concurrency),
                                 "--poll-seconds", "2"],
                                stdout=open(os.path.join(self.dir, "bench.txt"), "w"),
                                stderr=subprocess.STDOUT, env=self.env, cwd=REPO,
                                start_new_session=True)

    def counts(self):
        v = scrape(self.metrics_port)
        return {"tasks": total(v, "kagent_gpu_tasks_total", outcome="ok"),
                "measure": total(v, "kagent_gpu_tasks_total", kind="measure", outcome="ok"),
                "candidates": total(v, "kagent_candidates_total"),
                "task_errors": total(v, "kagent_gpu_tasks_total", outcome="error"),
                "busy_s": {g: total(v, "kagent_gpu_worker_busy_seconds_total", worker=f"gpu{g}")
                           for g in self.workers}}

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass


def problems_dir(out, names):
    d = os.path.join(out, "problems")
    os.makedirs(d, exist_ok=True)
    for n in names:
        for suffix in (".py", "_start.py"):
            shutil.copy(os.path.join(REPO, "problems", n + suffix), d)
    return d


class PinSampler(threading.Thread):
    """Samples nvidia-smi's compute processes; maps each to the worker it descends from."""

    def __init__(self, cluster, bus_of):
        super().__init__(daemon=True)
        self.cluster, self.bus_of = cluster, bus_of
        self.gpu_of_bus = {b: i for i, b in bus_of.items()}
        self.stop_flag = threading.Event()
        self.samples = 0
        self.busy_samples = {}
        self.violations = []

    @staticmethod
    def ancestry(pid):
        chain = []
        while pid > 1 and len(chain) < 32:
            chain.append(pid)
            try:
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                break
        return chain

    def run(self):
        worker_pids = {p.pid: g for g, p in self.cluster.workers.items()}
        while not self.stop_flag.is_set():
            out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_bus_id",
                                  "--format=csv,noheader"], capture_output=True, text=True)
            per_gpu = {}
            for row in out.stdout.strip().splitlines():
                parts = [x.strip() for x in row.split(",")]
                if len(parts) < 2 or not parts[0].isdigit():
                    continue
                pid, bus = int(parts[0]), parts[1].lower()
                gpu = self.gpu_of_bus.get(bus)
                chain = self.ancestry(pid)
                owner, measurement = None, None
                for i, a in enumerate(chain):
                    if a in worker_pids:
                        owner = worker_pids[a]
                        measurement = chain[i - 1] if i > 0 else a
                        break
                if owner is None:
                    continue  # not ours (or already gone)
                if owner != gpu:
                    self.violations.append(f"pid {pid} of worker gpu{owner} on GPU {gpu}")
                per_gpu.setdefault(gpu, set()).add(measurement)
            self.samples += 1
            for gpu, ms in per_gpu.items():
                self.busy_samples[gpu] = self.busy_samples.get(gpu, 0) + 1
                if len(ms) > 1:
                    self.violations.append(f"GPU {gpu}: {len(ms)} measurements at once")
            time.sleep(0.5)


def phase_stability(out, gpus):
    procs = {}
    for g in gpus:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(g))
        procs[g] = subprocess.Popen(
            [sys.executable, os.path.join(REPO, "tests", "gpu", "run_suite.py"), "--only",
             "case_study_row", "--json", os.path.join(out, f"stability_gpu{g}.json")],
            stdout=open(os.path.join(out, f"stability_gpu{g}.txt"), "w"),
            stderr=subprocess.STDOUT, env=env)
    meds = {}
    for g, p in procs.items():
        p.wait(timeout=400)
        try:
            with open(os.path.join(out, f"stability_gpu{g}.json")) as f:
                meds[g] = json.load(f)["case_study_row"]["candidate"]["median_ms"]
        except (OSError, KeyError, TypeError, ValueError):
            meds[g] = None
    got = [m for m in meds.values() if m]
    spread = (max(got) - min(got)) / min(got) * 100 if len(got) == len(gpus) else None
    return {"median_ms_by_gpu": meds, "spread_pct": spread,
            "ok": spread is not None and spread <= 2.0}


def phase_scaling(out, gpus, args, bus_of):
    names = args.problems.split(",")
    pdir = problems_dir(out, names)
    res = {}
    for n in (1, len(gpus)):
        tag = f"scaling_{n}gpu"
        c = Cluster(out, tag, gpus[:n], args.scale)
        sampler = None
        try:
            if n > 1 and Cluster.device == "cuda":
                sampler = PinSampler(c, bus_of)
                sampler.start()
            b = c.bench(pdir, args.rounds, len(names), tag)
            time.sleep(args.warmup)
            c0, t0 = c.counts(), time.time()
            time.sleep(args.window)
            c1, t1 = c.counts(), time.time()
            minutes = (t1 - t0) / 60
            res[tag] = {"gpus": n, "window_s": round(t1 - t0, 1),
                        "tasks_per_min": (c1["tasks"] - c0["tasks"]) / minutes,
                        "measures_per_min": (c1["measure"] - c0["measure"]) / minutes,
                        "candidates_per_min": (c1["candidates"] - c0["candidates"]) / minutes,
                        "task_errors": c1["task_errors"],
                        "busy_fraction_by_gpu": {
                            g: round((c1["busy_s"][g] - c0["busy_s"][g]) / (t1 - t0), 3)
                            for g in c1["busy_s"]}}
            if sampler:
                sampler.stop_flag.set()
                sampler.join(timeout=10)
                res[tag]["pin_samples"] = sampler.samples
                res[tag]["busy_samples_by_gpu"] = sampler.busy_samples
                res[tag]["pin_violations"] = sampler.violations[:20]
            b.kill()
        finally:
            c.stop()
    one = res["scaling_1gpu"]["tasks_per_min"]
    many = res[f"scaling_{len(gpus)}gpu"]["tasks_per_min"]
    res["speedup"] = many / one if one else None
    res["target"] = 0.85 * len(gpus)
    pins = res[f"scaling_{len(gpus)}gpu"]
    res["pinning_ok"] = (Cluster.device != "cuda" or
                         (pins.get("pin_samples", 0) > 0 and not pins.get("pin_violations")))
    return res


def phase_fault(out, gpus, args):
    names = args.fault_problems.split(",")
    pdir = problems_dir(os.path.join(out, "fault_problems"), names)
    c = Cluster(out, "fault", gpus, args.scale)
    try:
        t0 = time.time()
        b = c.bench(pdir, 1, len(names), "fault")
        time.sleep(args.kill_after)
        victim = gpus[-1]
        before = c.counts()
        os.killpg(c.workers[victim].pid, signal.SIGKILL)
        killed_at = time.time() - t0
        try:
            rc = b.wait(timeout=args.fault_timeout)
        except subprocess.TimeoutExpired:
            b.kill()
            rc = None
        wall = time.time() - t0
        after = c.counts()
        with open(os.path.join(c.dir, "bench.txt")) as f:
            bench_txt = f.read()
        return {"killed_worker": f"gpu{victim}", "killed_at_s": round(killed_at, 1),
                "tasks_done_before_kill": before["tasks"], "tasks_done": after["tasks"],
                "task_errors": after["task_errors"], "bench_exit": rc, "wall_s": round(wall, 1),
                "ok": rc == 0, "bench_tail": bench_txt[-1500:]}
    finally:
        c.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--phases", default="stability,scaling,fault")
    ap.add_argument("--problems", default=DEFAULT_PROBLEMS)
    ap.add_argument("--fault-problems", default="10_relu_fp32,25_softmax_fp32,37_mse_loss_fp32")
    ap.add_argument("--scale", type=int, default=4, help="KAGENT_PROBLEM_SCALE for the jobs")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=25.0, help="seconds before the window")
    ap.add_argument("--window", type=float, default=100.0, help="throughput window, seconds")
    ap.add_argument("--kill-after", type=float, default=40.0)
    ap.add_argument("--fault-timeout", type=float, default=240.0)
    ap.add_argument("--cpu-dry-run", type=int, default=0,
                    help="check this script without GPUs: N CPU workers under Triton's "
                         "interpreter, no stability phase, no nvidia-smi sampling")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.cpu_dry_run:
        Cluster.device = "cpu"
        bus_of = {i: f"cpu{i}" for i in range(args.cpu_dry_run)}
    else:
        bus_of = gpu_count()
    gpus = sorted(bus_of)
    print(f"GPUs: {bus_of}", flush=True)
    result = {"gpus": len(gpus)}
    phases = args.phases.split(",")
    ok = True
    if len(gpus) < 2:
        print("multi_gpu: needs at least 2 GPUs")
        return 2
    if "stability" in phases:
        result["stability"] = phase_stability(args.out, gpus)
        print("stability:", json.dumps(result["stability"]), flush=True)
        ok &= result["stability"]["ok"]
    if "scaling" in phases:
        result["scaling"] = phase_scaling(args.out, gpus, args, bus_of)
        print("scaling:", json.dumps(result["scaling"]), flush=True)
        ok &= bool(result["scaling"]["pinning_ok"])
    if "fault" in phases:
        result["fault"] = phase_fault(args.out, gpus, args)
        print("fault:", json.dumps({k: v for k, v in result["fault"].items()
                                    if k != "bench_tail"}), flush=True)
        ok &= result["fault"]["ok"]
    with open(os.path.join(args.out, "multi_gpu.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
