#!/usr/bin/env python3
"""How far each fp32 problem's PyTorch reference, and its starting kernel, are from the
same forward in float64: a diagnosis for starting kernels that fail the fp32 gate.

On the H100 (2026-12-06) the starting kernels of 60_conv_transpose1d_fp32 and
62_conv_transpose2d_grouped_fp32 (direct fp32 sums, no TF32) failed the gate at 1e-4 on
74-70 % of their elements with errors near 1e-3 relative, the size of TF32 rounding,
although the problems set torch.backends.cudnn.allow_tf32 = False. This script tells
which side is off: it runs the reference Model in fp32 (as the harness does) and in
float64, and the problem's starting kernel (problems/NAME_start.py) on the same weights
and inputs, and prints each one's worst error against float64 and the share of elements
outside the harness's fp32 tolerance (atol = rtol = 1e-4), with the cuDNN precision
settings the problem left behind.

    python3 tests/gpu/reference_accuracy.py [--only 60_conv,62_conv] [--wide] [--out F.json]

With --wide, also on each of the gate's wide trials of the same inputs (-x, 10x, standard
normal, 0.75 everywhere): 63_sdpa_fp32's starting kernel failed the gate on `scale10`.

Run from the repository root on a GPU machine (on the CPU it runs too, with
KAGENT_PROBLEM_SCALE=64 and TRITON_INTERPRET=1, to check the script itself).
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
from kagent_harness import loader as L  # noqa: E402 - the harness's own loading and seeding
from kagent_harness import trials as T  # noqa: E402 - the gate's wide trials
from kagent_harness.trials import rms  # noqa: E402

ATOL = RTOL = 1e-4  # the harness's fp32 default (python/kagent_harness/protocol.py)


def load(path, name, directory):
    with open(path, encoding="utf-8") as f:
        return L.load_source(f.read(), name, directory)


def error_vs(exact, got):
    """(worst |got - exact| / (atol + rtol |exact|), share of elements outside the
    tolerance) over the floating outputs, atol in units of the exact outputs' RMS where
    that exceeds 1, as the gate scales it (measure.py)."""
    worst, outside, n = 0.0, 0, 0
    atol = ATOL * max(1.0, rms(exact))
    for e, g in zip(exact, got):
        if not e.is_floating_point():
            continue
        e64, g64 = e.double(), g.double()
        ratio = (g64 - e64).abs() / (atol + RTOL * e64.abs())
        worst = max(worst, float(ratio.max()))
        outside += int((ratio > 1).sum())
        n += e.numel()
    return worst, (outside / n if n else 0.0)


def cudnn_settings():
    s = {"cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
         "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32)}
    try:
        s["cudnn.conv.fp32_precision"] = torch.backends.cudnn.conv.fp32_precision
    except AttributeError:
        pass
    return s


def check(path, device, directory, trial="seeded"):
    """One problem on one trial: "seeded" (get_inputs as the harness seeds it) or one of
    the gate's wide variants of those inputs (trials.WIDE_VARIANTS: neg, scale10, randn,
    const)."""
    name = os.path.basename(path)[:-3]
    mod = load(path, name, directory)
    settings = cudnn_settings()
    init = L.make_init_inputs(mod, 0)
    model = L.build_model(mod.Model, init, 1, device).eval()
    inputs = L.make_inputs(mod.get_inputs, 2, device)
    if trial != "seeded":
        inputs = T.variant(inputs, trial, 3)
    row = {"problem": name, "trial": trial, "settings": settings}
    with torch.no_grad():
        t = time.perf_counter()
        ref = L.flatten_outputs(model(*inputs))
        model64 = L.build_model(mod.Model, init, 1, device)
        model64.load_state_dict(model.state_dict())
        model64 = model64.double().eval()
        exact = L.flatten_outputs(model64(*[x.double() if isinstance(x, torch.Tensor)
                                            and x.is_floating_point() else x
                                            for x in inputs]))
        row["reference_vs_fp64"] = error_vs(exact, ref)
        start = os.path.join(os.path.dirname(path), name + "_start.py")
        if os.path.exists(start):
            smod = load(start, name + "_start", directory)
            new = L.build_model(smod.ModelNew, init, 1, device).eval()
            new.load_state_dict(model.state_dict(), strict=False)
            got = L.flatten_outputs(new(*inputs))
            row["start_vs_fp64"] = error_vs(exact, got)
            row["start_vs_reference"] = error_vs(ref, got)
        row["seconds"] = round(time.perf_counter() - t, 2)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated name prefixes")
    ap.add_argument("--out", default="", help="write the rows as JSON here")
    ap.add_argument("--wide", action="store_true",
                    help="also each of the gate's wide trials (neg, scale10, randn, const)")
    args = ap.parse_args()
    trials = ("seeded",) + (T.WIDE_VARIANTS if args.wide else ())
    device = "cuda" if torch.cuda.is_available() else "cpu"
    prefixes = [p for p in args.only.split(",") if p]
    paths = sorted(p for p in glob.glob(os.path.join(ROOT, "problems", "*_fp32.py")))
    if prefixes:
        paths = [p for p in paths if any(os.path.basename(p).startswith(x) for x in prefixes)]
    rows = []
    directory = tempfile.mkdtemp(prefix="kagent-refacc-")
    print(f"{'problem (trial)':44} {'ref/fp64 worst':>14} {'outside':>8} {'start/fp64 worst':>16} "
          f"{'outside':>8} {'start/ref outside':>17}  cuDNN conv precision")
    for p, trial in [(p, t) for p in paths for t in trials]:
        label = f"{os.path.basename(p)[:-3]} ({trial})" if len(trials) > 1 else \
            os.path.basename(p)[:-3]
        try:
            r = check(p, device, directory, trial)
        except Exception as e:  # noqa: BLE001 - one problem's failure is its row
            r = {"problem": os.path.basename(p)[:-3], "trial": trial,
                 "error": f"{type(e).__name__}: {e}"}
            print(f"{label:44} error: {r['error'][:120]}")
            rows.append(r)
            continue
        rows.append(r)
        rw, ro = r["reference_vs_fp64"]
        sw, so = r.get("start_vs_fp64", (float("nan"), float("nan")))
        _, sr = r.get("start_vs_reference", (float("nan"), float("nan")))
        prec = r["settings"].get("cudnn.conv.fp32_precision",
                                 "tf32" if r["settings"]["cudnn.allow_tf32"] else "ieee")
        print(f"{label:44} {rw:14.3g} {ro:8.2%} {sw:16.3g} {so:8.2%} {sr:17.2%}  "
              f"{prec} (allow_tf32 {r['settings']['cudnn.allow_tf32']})", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
                       "torch": torch.__version__, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
