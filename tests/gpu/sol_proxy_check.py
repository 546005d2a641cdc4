"""Can the CUPTI backend's compute SOL come from cheaper counters? (GPU machine only.)

`sm__throughput.avg.pct_of_peak_sustained_elapsed`, the compute speed of light the judge
classifies by, needs 8 of the 12 range-profiler passes of the backend's metric set on
GH100 (CUDA 13's host API; without it the set needs 6), and every pass replays the
forward with the GPU held. ncu defines it as the largest of the SM's unit throughputs;
this collects it beside single-pass unit throughputs (issue, pipes, LSU, shared memory,
MIO write-back) on kernels of different kinds (DRAM-bound elementwise, FMA-bound fp32
GEMM, tensor-core bf16 GEMM, transcendental, reduction, scan, softmax, convolution, a
launch-bound tiny kernel) and prints, per kernel, sm__throughput, the largest component
and which one it was, and the passes each metric set needs.

    python3 tests/gpu/sol_proxy_check.py --lib .gpu/bin/libkagent_cupti.so [--out F.json]
                                         [--passes-only]

Builds nothing; one process, user replay, as the backend runs it.
"""

import argparse
import ctypes
import json
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

from kagent_harness import cupti_counters as C  # noqa: E402

SOL = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
COMPONENTS = [f"{m}.avg.pct_of_peak_sustained_elapsed" for m in (
    "sm__inst_executed", "sm__issue_active", "sm__pipe_fma_cycles_active",
    "sm__pipe_fmaheavy_cycles_active", "sm__pipe_alu_cycles_active",
    "sm__inst_executed_pipe_lsu", "sm__pipe_shared_cycles_active",
    "sm__inst_executed_pipe_xu", "sm__mio2rf_writeback_active",
    "sm__pipe_tensor_op_hmma_cycles_active", "sm__inst_executed_pipe_uniform",
    "sm__pipe_fp64_cycles_active", "sm__inst_executed_pipe_adu",
    "sm__inst_executed_pipe_cbu")]


def workloads(torch):
    """(name, forward) pairs; each forward launches its kernels on the current stream."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    big = torch.randn(1 << 28, device=dev)
    out = torch.empty_like(big)
    a32 = torch.randn(4096, 4096, device=dev)
    b32 = torch.randn(4096, 4096, device=dev)
    a16, b16 = a32.bfloat16(), b32.bfloat16()
    sm = torch.randn(8192, 8192, device=dev)
    img = torch.randn(32, 64, 112, 112, device=dev)
    w = torch.randn(128, 64, 3, 3, device=dev)
    small = torch.randn(4096, device=dev)
    seq = torch.randn(4096, 4096, device=dev)
    a64 = torch.randn(1024, 1024, device=dev, dtype=torch.float64)
    return [
        ("mul 1 GiB (DRAM)", lambda: torch.mul(big, 2.0, out=out)),
        ("fp32 GEMM 4096 (FMA)", lambda: torch.mm(a32, b32)),
        ("bf16 GEMM 4096 (tensor)", lambda: torch.mm(a16, b16)),
        ("tanh 1 GiB (XU)", lambda: torch.tanh(big, out=out)),
        ("sum rows 8192^2", lambda: sm.sum(dim=1)),
        ("softmax 8192^2", lambda: torch.softmax(sm, dim=1)),
        ("cumsum 4096^2", lambda: torch.cumsum(seq, dim=1)),
        ("argmax 8192^2", lambda: sm.argmax(dim=1)),
        ("conv2d 3x3 fp32 (cuDNN)", lambda: torch.nn.functional.conv2d(img, w, padding=1)),
        ("relu 4096 (launch-bound)", lambda: torch.relu(small)),
        ("fp64 GEMM 1024", lambda: torch.mm(a64, a64)),
    ]


def backend_set(cc):
    """The CUPTI backend's counter set for compute capability `cc` (services/profiler's
    CuptiCounterMetrics over kernel_model/ncu_metrics.tsv): launch__, the duration and
    smsp__sass_ metrics left out."""
    names = []
    for line in open(os.path.join(REPO, "kernel_model", "ncu_metrics.tsv"), encoding="utf-8"):
        if not line.strip() or line.startswith("#"):
            continue
        name, _, arch = line.split("\t")[:3]
        lo, _, hi = arch.partition("-")
        ok = arch == "all" or (int(arch) == cc if not _ else
                               int(lo) <= cc and (not hi or cc <= int(hi)))
        if ok and not name.startswith(("launch__", "smsp__sass_")) and \
                name != "gpu__time_duration.sum":
            names.append(name)
    return names


def collect(lib, torch, metrics, forward):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        res = C.collect(lib, metrics, forward, torch.cuda.synchronize, f.name, 64)
        ranges = []
        for line in open(f.name, encoding="utf-8"):
            rec = json.loads(line)
            if rec.get("type") == "counters":
                ranges.append(rec)
    return res, ranges


def _values(rec):
    vals = rec.get("values") or rec.get("metrics") or {}
    return {k: float(v) for k, v in vals.items() if isinstance(v, (int, float))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--out", default="")
    ap.add_argument("--passes-only", action="store_true",
                    help="only the passes of each metric set, no workloads")
    args = ap.parse_args()
    import torch
    lib = ctypes.CDLL(os.path.abspath(args.lib))
    C.declare(lib)
    torch.zeros(1, device="cuda")
    rows = []
    for name, forward in ([] if args.passes_only else workloads(torch)):
        for _ in range(3):
            forward()
        torch.cuda.synchronize()
        res, ranges = collect(lib, torch, [SOL] + COMPONENTS, forward)
        if not res["ok"]:
            print(f"{name}: FAILED {res['error']}", flush=True)
            rows.append({"workload": name, "error": res["error"]})
            continue
        for k, rec in enumerate(ranges):
            v = _values(rec)
            comps = {m: v[m] for m in COMPONENTS if m in v}
            top = max(comps, key=comps.get) if comps else ""
            row = {"workload": name, "range": k, "kernel": rec.get("name", ""),
                   "passes": res["passes"], "sm_throughput": v.get(SOL),
                   "max_component": comps.get(top), "max_component_name": top,
                   "components": comps}
            rows.append(row)
            sol, mx = row["sm_throughput"], row["max_component"]
            print(f"{name:28s} r{k} sm__throughput {sol if sol is None else round(sol, 2)!s:>7} "
                  f"max component {mx if mx is None else round(mx, 2)!s:>7} "
                  f"({top.split('.')[0]}) passes {res['passes']}", flush=True)
    # The passes of each set, as CUPTI plans them on this machine; with the CUPTI backend's
    # own set (kernel_model/ncu_metrics.tsv as CuptiCounterMetrics filters it for sm_90),
    # without sm__throughput, and with the components in its place.
    backend = backend_set(90)
    for label, metrics in (("sm__throughput alone", [SOL]),
                           ("components", COMPONENTS), ("both", [SOL] + COMPONENTS),
                           ("the backend's set", backend),
                           ("the backend's set without sm__throughput",
                            [m for m in backend if m != SOL]),
                           ("the backend's set, the components for sm__throughput",
                            [m for m in backend if m != SOL] +
                            [c for c in COMPONENTS if c not in backend])):
        res, _ = collect(lib, torch, metrics, lambda: torch.relu(torch.ones(8, device="cuda")))
        print(f"passes, {label}: {res['passes']}")
        rows.append({"passes_of": label, "passes": res["passes"], "ok": res["ok"]})
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
