"""How busy the tensor cores are while the CUDA GEMM templates run (issue 20: at least 50 %
of the TF32 tensor-core peak in the main loop of the large 3xTF32 products), from ncu's
pipe counters: per kernel, sm__pipe_tensor_op_gmma_cycles_active (wgmma, the SM90
templates) and sm__pipe_tensor_op_hmma_cycles_active (mma.sync, the CUTLASS 2.x one) as a
share of their sustained peak over the kernel's elapsed cycles, with the kernel's time. A
3xTF32 kernel issues TF32 instructions only, so the pipe's share is its share of the TF32
peak. On an H100 with driver 580's ncu the gmma counter reads n/a and the hmma one counts
the wgmma kernels too (2026-12-07: docs/benchmarks.md). ncu locks the clocks at base, so its
kernel times are longer than do_bench's; the shares are of the peak at those clocks.

  python3 tests/gpu/gemm_tensor_pipe.py [--out F.txt] [--only CASE,...] [--build-only]

Each case is rendered and built first (gemm_sweep.build_all: each in a process of its own,
one TORCH_EXTENSIONS_DIR, its import builds it), then run once under `ncu --kernel-name
regex:kagent` in a process of its own (`--run CASE`: fresh seeded operands, one warm-up
call, one profiled call). Needs a CUDA GPU, ncu, nvcc and the nvidia-cutlass headers.
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "engines", "heuristic", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gemm_sweep  # noqa: E402

METRICS = [
    "gpu__time_duration.sum",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
]

# name: (template, params, (L, M, K, N)); L 0 a 2-D product, L > 0 a batch of L. The params
# are what the brain's rules render for the shape on an sm_90 GPU with 132 SMs.
SM90 = {"TILE": "128x256x32", "CLUSTER": "2x1", "SCHEDULE": "cooperative", "EPILOGUE": "tma",
        "SWIZZLE": 1}
CASES = {
    "sm90_square_4096": ("gemm_sm90_tf32x3", SM90, (0, 4096, 4096, 4096)),
    "sm90_tall_skinny_262144x128x1024": ("gemm_sm90_tf32x3", SM90, (0, 262144, 128, 1024)),
    "sm80_square_8192": ("gemm_cutlass_tf32x3", {}, (0, 8192, 8192, 8192)),
    "sm80_split33_256x524288x256": ("gemm_cutlass_tf32x3", {"SPLIT_K": 33},
                                    (0, 256, 524288, 256)),
    "sm80_batched_128x512x1024x512": ("gemm_cutlass_tf32x3", {"num_stages": 4},
                                      (128, 512, 1024, 512)),
}


def run_case(name):
    """In this process: the case's module on fresh operands, a warm-up call, one more."""
    import torch
    from template_render import load_model_new
    template, params, (L, M, K, N) = CASES[name]
    model = load_model_new(template, **params)().cuda()
    g = torch.Generator(device="cuda").manual_seed(1234)
    lead = (L,) if L else ()
    a = torch.randn(*lead, M, K, device="cuda", generator=g)
    b = torch.randn(*lead, K, N, device="cuda", generator=g)
    with torch.no_grad():
        model(a, b)
        torch.cuda.synchronize()
        model(a, b)
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--run", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        run_case(args.run)
        return 0
    only = [o for o in args.only.split(",") if o]
    names = [n for n in CASES if not only or any(n.startswith(o) for o in only)]
    out = open(args.out, "a") if args.out else None

    def say(text):
        print(text, flush=True)
        if out:
            out.write(text + "\n")
            out.flush()

    me = os.path.abspath(__file__)
    t0 = time.time()
    # gemm_sweep's builder: each variant imported (built) in a child process of its own.
    variants = list({gemm_sweep.label(*CASES[n][:2]): CASES[n][:2] for n in names}.values())
    built = gemm_sweep.build_all(variants, len(variants), lambda row: say(f"# {row}"))
    say(f"# built {len(built)} of {len(variants)} in {time.time() - t0:.0f} s")
    if args.build_only:
        return 0
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    for n in names:
        template, params, shape = CASES[n]
        say(f"\n## {n}: {template} {params} (L, M, K, N) = {shape}")
        cmd = [ncu, "--kernel-name", "regex:kagent", "--launch-skip", "0", "--launch-count",
               "4", "--metrics", ",".join(METRICS), "--csv", sys.executable, me, "--run", n]
        t = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        lines = [l for l in r.stdout.splitlines() if l.startswith('"')]
        say(f"# ncu rc {r.returncode}, {time.time() - t:.0f} s")
        for line in lines or r.stdout.splitlines()[-20:] + r.stderr.splitlines()[-20:]:
            say(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
