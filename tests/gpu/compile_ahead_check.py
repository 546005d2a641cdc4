"""torch.compile compiled ahead on a thread (kagent_harness/compile_ahead.py) on this
machine's torch and GPU: per problem of problems/ (default: three of different op
classes), a cold torch.compile's first call (compilation, autotuning, the run), then, for
the same model loaded again (code objects of its own: Dynamo's cache of the first load
does not serve it), the compilation ahead on phantom stand-ins and the
first real call after it (what the slot still holds), with whether that call compiled
again (it must not) and that its output matches eager.

    python3 tests/gpu/compile_ahead_check.py [--only PREFIX,...] [--out F.json]

Prints one line per problem and writes the figures as JSON. Needs a GPU; on the CPU it
runs the same steps with empty stand-ins (KAGENT_PROBLEM_SCALE shrinks the problems).
"""

import argparse
import glob
import json
import os
import sys
import tempfile
import time

# Inductor's caches off: the second load's compilation is made, not found (Triton's own
# cache of kernel binaries stays: the thread's seconds are not held ones anyway).
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

import torch  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from kagent_harness import compile_ahead as ca  # noqa: E402
from kagent_harness import loader  # noqa: E402

DEFAULT = ("10_", "23_", "40_", "35_")


def _problem(path, device, workdir, tag):
    """The problem loaded as a module of its own (its own code objects, so Dynamo's cache
    of another load does not serve it): (a maker of its model, its inputs)."""
    with open(path) as f:
        source = f.read()
    name = f"problem_{tag}_" + os.path.basename(path)[:-3]
    mod = loader.load_source(source, name, workdir)
    loader.check_problem(mod)
    init = loader.make_init_inputs(mod, 1)
    inputs = loader.make_inputs(mod.get_inputs, 2, device)

    def model():
        return loader.build_model(mod.Model, init, 3, device).eval()
    return model, inputs


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def check(path, device, workdir):
    out = {"problem": os.path.basename(path)}
    make, inputs = _problem(path, device, workdir, "cold")
    cold = ca.compiled_module(make())
    t = time.monotonic()
    cold(*inputs)
    _sync(device)
    out["cold_first_call_s"] = round(time.monotonic() - t, 3)
    make, inputs = _problem(path, device, workdir, "ahead")
    model = make()
    expected = loader.flatten_outputs(model(*inputs))
    _sync(device)
    before = ca.compiles()
    t = time.monotonic()
    ahead = ca.CompileAhead(model, inputs, device)
    ahead.join()
    out["ahead_s"] = round(time.monotonic() - t, 3)
    out["ahead_error"] = ahead.error
    out["graphs_compiled_ahead"] = ca.compiles() - before
    before = ca.compiles()
    t = time.monotonic()
    got = loader.flatten_outputs(ca.compiled_module(model)(*inputs))
    _sync(device)
    out["first_call_after_ahead_s"] = round(time.monotonic() - t, 3)
    out["compiled_again"] = ca.compiles() > before
    out["matches_eager"] = all(torch.allclose(a, b, atol=1e-4, rtol=1e-4)
                               for a, b in zip(expected, got))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(DEFAULT))
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_grad_enabled(False)
    rows, bad = [], 0
    workdir = tempfile.mkdtemp(prefix="kagent-compile-ahead-")
    for prefix in [p for p in args.only.split(",") if p]:
        for path in sorted(glob.glob(os.path.join(ROOT, "problems", prefix + "*.py"))):
            if path.endswith("_start.py"):
                continue
            try:
                r = check(path, device, workdir)
            except Exception as e:  # noqa: BLE001 - reported, the others go on
                r = {"problem": os.path.basename(path), "error": f"{type(e).__name__}: {e}"}
            ok = not r.get("error") and not r.get("ahead_error") and \
                r.get("graphs_compiled_ahead", 0) > 0 and not r.get("compiled_again") and \
                r.get("matches_eager")
            bad += not ok
            rows.append(r)
            print(("ok  " if ok else "BAD ") + json.dumps(r), flush=True)
    print(f"torch {torch.__version__} on {device}: {len(rows) - bad} of {len(rows)} ok")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"torch": torch.__version__, "device": device, "rows": rows}, f,
                      indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
