"""Compiles every CUDA C++ template of engines/heuristic/templates (JSON "language": "cuda")
for sm_90a with nvcc, without a GPU: the template rendered with its defaults, its CUDA
source taken from the module (the `cuda_source` string and the `cuda_cflags` list) and
compiled as torch.utils.cpp_extension.load_inline compiles it at import (torch/types.h,
cuda.h and cuda_runtime.h prepended; torch's nvcc flags, then the module's; the torch and
CUTLASS include paths), one translation unit per template. The object must hold the
__global__ kernels the harness finds in the module (kagent_harness.kernels, its
own-kernel names). The C++ wrapper (`cpp_source`, plain torch extension
code) is not compiled here.

Exit 0 when every template compiles, 1 on a failure (nvcc's errors on stderr), 77 (CTest's
skip) with the reason when nvcc, torch or the CUTLASS headers (pip package nvidia-cutlass,
scripts/setup.sh) are missing. About 45 s per template on a 2-core machine.

  .venv/bin/python engines/heuristic/tests/compile_cuda_templates.py [--shard K/N]
                                                                  [TEMPLATE[:K=V,...] ...]

A TEMPLATE:K=V,... argument compiles that render (the params given, the rest at their
defaults), e.g. conv_cutlass_fprop:DIMS=3,DTYPE=bfloat16,ALIGN=8; without arguments every
CUDA template with its defaults, plus the renders of EXTRA_RENDERS. --shard K/N compiles
the K-th of N interleaved parts of that list (K from 1): CTest runs the parts as tests of
their own, so no one test holds all the compiles (over 600 s on a 2-core machine).
"""
import ast
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from template_render import REPO, TEMPLATES, render  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "python"))
from kagent_harness.kernels import own_kernel_names  # noqa: E402

SKIP = 77
# What load_inline puts before a module's CUDA sources (torch/utils/cpp_extension.py).
LOAD_INLINE_PREFIX = "#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"


def nvcc_path():
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.path.isfile(os.path.join(home, "bin", "nvcc")):
            return os.path.join(home, "bin", "nvcc")
    return shutil.which("nvcc")


def cutlass_include():
    """The nvidia-cutlass wheel's headers (cutlass_library/source/include), as the
    templates find them; None when the package is not installed."""
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    include = os.path.join(list(spec.submodule_search_locations)[0], "source", "include")
    return include if os.path.isfile(os.path.join(include, "cutlass", "gemm", "device", "gemm.h")) else None


def cuda_template_ids():
    ids = []
    for path in sorted(glob.glob(os.path.join(TEMPLATES, "*.json"))):
        with open(path) as f:
            meta = json.load(f)
        if meta.get("language", "triton") == "cuda":
            ids.append(meta["id"])
    return ids


def module_literals(source):
    """The module-level `cuda_source` (str) and `cuda_cflags` (list of str) of a rendered
    CUDA template, read without running it (its import would build the extension)."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and \
                node.targets[0].id in ("cuda_source", "cuda_cflags"):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    missing = {"cuda_source", "cuda_cflags"} - set(found)
    if missing:
        raise ValueError(f"the module has no literal {', '.join(sorted(missing))}")
    return found["cuda_source"], found["cuda_cflags"]


# Renders compiled besides the defaults when no template is named: code paths a default
# render leaves out (the CUTLASS convolutions' 3-D kernels, conv_cutlass_fprop's 16-bit
# types, conv_sm90_fprop's bias epilogue).
EXTRA_RENDERS = ("conv_cutlass_fprop:DIMS=3,DTYPE=bfloat16,ALIGN=8",
                 "conv_cutlass_fprop:PAD_CHANNELS=True,IN_CHANNELS=3,BIAS=True",
                 "conv_cutlass_fprop:DIMS=3,FOLD_DEPTH=True,IN_CHANNELS=3,KERNEL_D=3",
                 "conv_sm90_fprop:DIMS=3,BIAS=True",
                 "gemm_cutlass_tf32x3:A_EXPR=A.mT,B_EXPR=B.mT,TRIANGLE=lower,DIAGONAL=-1")


def parse_render(arg):
    """'ID' or 'ID:K=V,K=V' -> (ID, {K: V})."""
    tid, _, rest = arg.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"{arg!r}: a param is K=V, got {item!r}")
        params[key] = value
    return tid, params


def nvcc_command(nvcc, cu, obj, cflags, cutlass):
    from torch.utils import cpp_extension
    try:
        torch_includes = cpp_extension.include_paths(device_type="cuda")
    except TypeError:  # older torch: include_paths(cuda=True)
        torch_includes = cpp_extension.include_paths(cuda=True)
    util = os.path.normpath(os.path.join(cutlass, "..", "tools", "util", "include"))
    cmd = [nvcc, "-DTORCH_EXTENSION_NAME=kagent_compile_test", "-DTORCH_API_INCLUDE_EXTENSION_H",
           "-I", cutlass, "-I", util]
    for path in torch_includes + [sysconfig.get_paths()["include"]]:
        cmd += ["-isystem", path]
    cmd += list(cpp_extension.COMMON_NVCC_FLAGS) + ["--compiler-options", "-fPIC"] + list(cflags)
    return cmd + ["-c", cu, "-o", obj]


def main(argv):
    nvcc = nvcc_path()
    if nvcc is None:
        print("skipped: no nvcc (CUDA_HOME, /usr/local/cuda or PATH)", file=sys.stderr)
        return SKIP
    if importlib.util.find_spec("torch") is None:
        print("skipped: torch is not installed in this Python", file=sys.stderr)
        return SKIP
    cutlass = cutlass_include()
    if cutlass is None:
        print("skipped: no CUTLASS headers (pip install nvidia-cutlass==4.2.0.0; "
              "scripts/setup.sh does)", file=sys.stderr)
        return SKIP
    shard = None
    if argv[:1] == ["--shard"] and len(argv) >= 2:
        k, _, n = argv[1].partition("/")
        if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
            print(f"--shard K/N with 1 <= K <= N, got {argv[1]!r}", file=sys.stderr)
            return 2
        shard, argv = (int(k), int(n)), argv[2:]
    ids = argv or cuda_template_ids() + list(EXTRA_RENDERS)
    if shard is not None:
        ids = ids[shard[0] - 1::shard[1]]
        if not ids:
            print(f"shard {shard[0]}/{shard[1]}: nothing to compile")
            return 0
    if not ids:
        print("no CUDA templates", file=sys.stderr)
        return 1
    failed = 0
    with tempfile.TemporaryDirectory(prefix="kagent_cuda_templates_") as tmp:
        for n, arg in enumerate(ids):
            tid, params = parse_render(arg)
            rendered = render(tid, **params)
            source, cflags = module_literals(rendered)
            cu = os.path.join(tmp, f"{tid}_{n}.cu")
            obj = os.path.join(tmp, f"{tid}_{n}.o")
            with open(cu, "w") as f:
                f.write(LOAD_INLINE_PREFIX + source)
            start = time.monotonic()
            r = subprocess.run(nvcc_command(nvcc, cu, obj, cflags, cutlass),
                               capture_output=True, text=True)
            took = time.monotonic() - start
            if r.returncode != 0:
                print(f"{arg}: nvcc failed after {took:.1f} s:\n{r.stderr[-6000:]}", file=sys.stderr)
                failed += 1
                continue
            with open(obj, "rb") as f:
                blob = f.read()
            own = own_kernel_names(rendered)
            missing = [n for n in own if n.encode() not in blob]
            if not own or missing:
                print(f"{arg}: the harness finds the kernels {own} in the module, the object "
                      f"lacks {missing}", file=sys.stderr)
                failed += 1
                continue
            print(json.dumps({"template": arg, "seconds": round(took, 1), "bytes": len(blob),
                              "flags": cflags}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
