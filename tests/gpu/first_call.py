"""The first call of a CUDA C++ template's extension, condition by condition (issue 25):
why a CUDA C++ candidate's first gate forward held the GPU for 4.5-7.2 s in session 30's
jobs while a Triton candidate's took 8-29 ms (docs/measurement.md, "CUDA C++ candidates'
first forward in the slot").

  python3 tests/gpu/first_call.py [--variants sm90,sm80] [--conditions C,...]
                                  [--out F.jsonl] [--build-only]

Builds each variant once (gemm_sweep.build_all; TORCH_EXTENSIONS_DIR as set), lists the
built extension's ELF and PTX images (cuobjdump, where the machine has it), then, for
each condition, starts a fresh process that creates CUDA's context, imports the
extension (the build is found, not redone) and calls the product twice on 2048^3 fp32
operands, a sync after each; one JSON line per (variant, condition) with the seconds of
the context, the import, the first and the second call. Conditions (joined with '+'):

  plain      nothing else
  eager      CUDA_MODULE_LOADING=EAGER (every module loaded when the context is made)
  cupti      the harness's CUPTI tracer injected (KAGENT_CUPTI_LIB), as in a candidate
  seccomp    the harness's seccomp filter installed after the context, as in a candidate
  recorder   the calls inside the harness's op recorder (ownwork), as the gate makes them
  home       HOME and the CUDA JIT cache in a directory of its own, kept for the next
             condition that says `home` (a JIT cache that a second process reuses shows)
  nocache    CUDA_CACHE_DISABLE=1
  warm       the harness's warm-up of the op recorder (ownwork.warm_up) after the import,
             as a candidate's process does before the slot, on GPU tensors (warmcpu: on
             CPU tensors)
  cprofile   the first call under cProfile (its 25 largest cumulative entries in the line)

While a first call runs longer than a second, the threads' current system calls and
wait channels (/proc/PID/task/*/syscall, wchan) are sampled every 0.5 s: where the time
goes when no Python frame shows it. Not the harness: no sandbox, no gate.
Needs a CUDA GPU, nvcc and the nvidia-cutlass headers.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

VARIANTS = {
    "sm90": ("gemm_sm90_tf32x3", {"TILE": "128x256x32", "CLUSTER": "2x1",
                                  "SCHEDULE": "cooperative", "EPILOGUE": "tma", "SWIZZLE": 1}),
    "sm80": ("gemm_cutlass_tf32x3", {}),
}

KNOWN_PARTS = {"plain", "eager", "cupti", "seccomp", "recorder", "warm", "warmcpu",
               "cprofile", "home", "nocache"}

CONDITIONS = ["plain", "eager", "cupti", "seccomp", "recorder", "recorder+cprofile",
              "recorder+warm", "recorder+warmcpu", "cupti+seccomp+recorder",
              "cupti+seccomp+recorder+warmcpu",
              "home", "home", "nocache"]

# The process of one condition: argv template, params (JSON), condition. Prints
# "FIRST_CALL <pid>" on stderr just before the first call, then one JSON line.
CHILD = r"""
import json, os, sys, time
template, params, cond = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3].split("+")
sys.path.insert(0, %(here)r)
sys.path.insert(0, os.path.join(%(repo)r, "engines", "heuristic", "tests"))
sys.path.insert(0, os.path.join(%(repo)r, "python"))
t0 = time.perf_counter()
import torch
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
t_ctx = time.perf_counter()
if "seccomp" in cond:
    from kagent_harness.bwrap import install_seccomp
    install_seccomp()
from template_render import load_model_new
model = load_model_new(template, **params)()
t_import = time.perf_counter()
if "warm" in cond or "warmcpu" in cond:
    from kagent_harness import ownwork
    ownwork.warm_up(torch, "cpu" if "warmcpu" in cond else "cuda")
torch.cuda.synchronize()
t_warm = time.perf_counter()
g = torch.Generator(device="cuda").manual_seed(0)
A = torch.randn(2048, 2048, device="cuda", generator=g)
B = torch.randn(2048, 2048, device="cuda", generator=g)
torch.cuda.synchronize()
rec = None
if "recorder" in cond:
    from kagent_harness import ownwork
    rec = ownwork.make_recorder()
    rec.__enter__()
sys.stderr.write("FIRST_CALL %%d\n" %% os.getpid())
sys.stderr.flush()
prof = None
if "cprofile" in cond:
    import cProfile, io, pstats
    pr = cProfile.Profile()
    pr.enable()
t = time.perf_counter()
out = model(A, B)
torch.cuda.synchronize()
first = time.perf_counter() - t
if "cprofile" in cond:
    pr.disable()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("cumulative").print_stats(25)
    prof = buf.getvalue()[-6000:]
t = time.perf_counter()
out = model(A, B)
torch.cuda.synchronize()
second = time.perf_counter() - t
if rec is not None:
    rec.__exit__(None, None, None)
ref = A.double() @ B.double()
print(json.dumps({"context_s": round(t_ctx - t0, 3), "import_s": round(t_import - t_ctx, 3),
                  "first_s": round(first, 4), "second_s": round(second, 5),
                  "max_abs_err": float((out.double() - ref).abs().max()),
                  "module_loading": os.environ.get("CUDA_MODULE_LOADING", "(default)"),
                  "warm_s": round(t_warm - t_import, 3), "profile": prof}))
"""


def sample_threads(pid):
    """{tid: "syscall/wchan/name/cpuTICKS"} of a process's threads, now (the syscall's
    number and arguments' first field; the CPU ticks the thread used so far)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        parts = []
        for name in ("syscall", "wchan", "comm"):
            try:
                with open(os.path.join(base, name)) as f:
                    parts.append(f.read().strip().split(" ")[0])
            except OSError:
                parts.append("?")
        try:
            with open(os.path.join(base, "stat")) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parts.append(f"cpu{int(fields[11]) + int(fields[12])}")  # utime + stime, ticks
        except (OSError, IndexError, ValueError):
            pass
        out[tid] = "/".join(parts)
    return out


def run_condition(template, params, cond, env, timeout_s=300):
    code = CHILD % {"here": HERE, "repo": REPO}
    p = subprocess.Popen([sys.executable, "-c", code, template, json.dumps(params), cond],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    samples = []
    started = None
    deadline = time.monotonic() + timeout_s
    err_lines = []
    os.set_blocking(p.stderr.fileno(), False)
    while p.poll() is None and time.monotonic() < deadline:
        try:
            chunk = p.stderr.read()
        except (OSError, TypeError):
            chunk = None
        if chunk:
            err_lines.append(chunk)
            if started is None and "FIRST_CALL" in chunk:
                started = time.monotonic()
        if started is not None and len(samples) < 40:
            samples.append({"t": round(time.monotonic() - started, 2),
                            "threads": sample_threads(p.pid)})
        time.sleep(0.5 if started is not None else 0.1)
    if p.poll() is None:
        p.kill()
    out, rest = p.communicate()
    err = "".join(err_lines) + (rest or "")
    row = {"condition": cond}
    try:
        row.update(json.loads(out.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        row["error"] = err[-2000:]
    # Only the samples taken while the first call ran (it ends before the second starts).
    if "first_s" in row:
        row["samples"] = [s for s in samples if s["t"] <= row["first_s"]]
    return row


def condition_env(cond, base, home):
    """The environment of a condition's process (the parts of `cond` joined with '+'),
    or why it cannot run. Unknown parts are refused, so a typo does not pass for a run."""
    parts = cond.split("+")
    unknown = [p for p in parts if p not in KNOWN_PARTS]
    if unknown:
        return f"unknown condition part(s) {unknown}; known: {sorted(KNOWN_PARTS)}"
    env = dict(base)
    if "eager" in parts:
        env["CUDA_MODULE_LOADING"] = "EAGER"
    if "nocache" in parts:
        env["CUDA_CACHE_DISABLE"] = "1"
    if "home" in parts:
        env["HOME"] = home
        env["CUDA_CACHE_PATH"] = os.path.join(home, "ComputeCache")
    if "cupti" in parts:
        lib = base.get("KAGENT_CUPTI_LIB", "")
        if not lib:
            return "KAGENT_CUPTI_LIB is not set"
        env.update({"CUDA_INJECTION64_PATH": lib,
                    "KAGENT_CUPTI_OUT": os.path.join(home, "trace.jsonl")})
    return env


def cuobjdump(ext_dir):
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not os.path.exists(tool):
        return "no cuobjdump"
    lines = []
    for root, _dirs, files in os.walk(ext_dir):
        for f in files:
            if f.endswith(".so"):
                path = os.path.join(root, f)
                r = subprocess.run([tool, "--list-elf", "--list-ptx", path],
                                   capture_output=True, text=True, timeout=120)
                lines.append(f"{path} ({os.path.getsize(path)} bytes): "
                             f"{(r.stdout + r.stderr).strip()}")
    return "\n".join(lines) or "no built extension found"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", default="sm90,sm80")
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--out", default="")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--build-jobs", type=int, default=2)
    args = ap.parse_args()
    out = open(args.out, "a") if args.out else None

    def emit(row):
        line = json.dumps(row)
        print(line if "samples" not in row else json.dumps(
            {k: v for k, v in row.items() if k != "samples"}), flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    import gemm_sweep
    chosen = [VARIANTS[v] for v in args.variants.split(",") if v]
    gemm_sweep.build_all(chosen, args.build_jobs, emit)
    ext_dir = os.environ.get("TORCH_EXTENSIONS_DIR", "")
    if ext_dir:
        emit({"cuobjdump": cuobjdump(ext_dir)})
    if args.build_only:
        return 0
    home = tempfile.mkdtemp(prefix="kagent-first-call-home-")
    for template, params in chosen:
        for cond in args.conditions.split(","):
            env = condition_env(cond, os.environ, home)
            if isinstance(env, str):
                emit({"template": template, "condition": cond, "error": env})
                continue
            row = run_condition(template, params, cond, env)
            row["template"] = template
            emit(row)
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
