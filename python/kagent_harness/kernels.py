"""Which kernels are the candidate's own, and the CUPTI tracer's records.

Own kernel names come from the candidate's *source text*, parsed with ast in the
supervisor (never executed there): functions decorated with triton.jit (possibly under
triton.autotune / triton.heuristics) and `__global__` functions in CUDA C++ strings.

The CUPTI tracer (KAGENT_CUPTI_LIB, another component) writes one JSON object per line:
  {"type":"kernel","name":..,"start_ns":..,"end_ns":..,"stream":..,"device":..,
   "grid":[x,y,z],"block":[x,y,z],"correlation":..}
  {"type":"marker","name":..,"ts_ns":..}
The child emits markers through kagent_cupti_mark(); the windows used here are
gate_begin/gate_end (one pair per gate call), flush_begin/flush_end and
spin_begin/spin_end (probes of the L2 flush and of the timing's spin kernel alone),
timing_begin/timing_end (warm-up plus timed calls) and profile_begin/profile_end (the
profiled forwards).
"""

import ast
import io
import json
import re

from kagent_harness.sandbox import scratch_open

# Kernel-name fragments of library code (cuBLAS, CUTLASS, cuDNN, ATen, inductor, ...).
LIBRARY_PATTERNS = (
    "cublas", "cutlass", "cudnn", "gemv", "gemm", "sgemm", "hgemm", "xmma", "ampere_",
    "sm80_", "sm90_", "sm100_", "at::native", "at_native", "void at::", "elementwise_kernel",
    "vectorized_elementwise", "reduce_kernel", "triton_poi_", "triton_red_", "triton_per_",
    "triton_tem_", "cub::", "thrust::", "nvjet", "cutensor", "flash_fwd", "flash_bwd",
    "splitkreduce", "dot_kernel", "memcpy", "memset",
)

_GLOBAL_RE = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                        r"(?:static\s+)?void\s+([A-Za-z_]\w*)")


def _decorator_name(d):
    if isinstance(d, ast.Call):
        d = d.func
    parts = []
    while isinstance(d, ast.Attribute):
        parts.append(d.attr)
        d = d.value
    if isinstance(d, ast.Name):
        parts.append(d.id)
    return ".".join(reversed(parts))


def own_kernel_names(source):
    """Names of the kernels the candidate source defines (Triton and CUDA)."""
    names = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for d in node.decorator_list:
                dn = _decorator_name(d)
                if dn.endswith("jit") or dn.endswith("autotune") or dn.endswith("heuristics"):
                    names.add(node.name)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and "__global__" in node.value:
            names.update(_GLOBAL_RE.findall(node.value))
    return sorted(names)


def is_own(kernel_name, own_names):
    """True when kernel_name is one of own_names, plain (Triton, extern "C") or
    Itanium-mangled (`_Z<len><name>...`, possibly inside a namespace)."""
    for n in own_names:
        e = re.escape(n)
        if re.search(r"(^|[^A-Za-z0-9_])" + e + r"($|[^A-Za-z0-9_])", kernel_name):
            return True
        if re.search(r"(?<![0-9])" + str(len(n)) + e, kernel_name):
            return True
    return False


def is_library(kernel_name):
    lname = kernel_name.lower()
    return any(p in lname for p in LIBRARY_PATTERNS)


def read_trace(path):
    """Parses a tracer file; malformed lines are skipped and counted."""
    kernels, markers, bad = [], [], 0
    try:
        # In the candidate's directory: never through a link or FIFO it planted there.
        with io.TextIOWrapper(scratch_open(path, write=False), encoding="utf-8",
                              errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                if not isinstance(rec, dict):
                    bad += 1
                    continue
                if rec.get("type") == "kernel":
                    try:
                        kernels.append({"name": str(rec.get("name", "")),
                                        "start_ns": int(rec["start_ns"]),
                                        "end_ns": int(rec["end_ns"]),
                                        "stream": int(rec.get("stream", 0)),
                                        "grid": rec.get("grid"), "block": rec.get("block")})
                    except (KeyError, TypeError, ValueError):
                        bad += 1
                elif rec.get("type") == "marker":
                    try:
                        markers.append({"name": str(rec["name"]), "ts_ns": int(rec["ts_ns"])})
                    except (KeyError, TypeError, ValueError):
                        bad += 1
    except OSError:
        return None
    kernels.sort(key=lambda k: k["start_ns"])
    markers.sort(key=lambda m: m["ts_ns"])
    return {"kernels": kernels, "markers": markers, "bad_lines": bad}


def windows(trace, prefix):
    """[(begin_ns, end_ns)] for each prefix_begin / prefix_end marker pair, in order."""
    out, begin = [], None
    for m in trace["markers"]:
        if m["name"] == prefix + "_begin":
            begin = m["ts_ns"]
        elif m["name"] == prefix + "_end" and begin is not None:
            out.append((begin, m["ts_ns"]))
            begin = None
    return out


def kernels_in(trace, window):
    b, e = window
    return [k for k in trace["kernels"] if k["start_ns"] >= b and k["end_ns"] <= e]


def analyze_gate(trace, own_names):
    """Per gate call: kernels, own kernels, GPU busy time (ms: all kernels, own ones,
    library ones, i.e. every kernel not the candidate's, and per kernel name)."""
    calls = []
    for w in windows(trace, "gate"):
        ks = kernels_in(trace, w)
        own = [k for k in ks if is_own(k["name"], own_names)]
        by_name = {}
        for k in ks:
            by_name[k["name"]] = by_name.get(k["name"], 0.0) + (k["end_ns"] - k["start_ns"]) / 1e6
        busy = sum(by_name.values())
        own_busy = sum(k["end_ns"] - k["start_ns"] for k in own) / 1e6
        calls.append({"kernels": len(ks), "own": len(own),
                      "own_busy_ms": own_busy, "busy_ms": busy,
                      "library_busy_ms": max(0.0, busy - own_busy),
                      "busy_by_name": by_name,
                      "names": sorted(by_name),
                      "streams": sorted({k["stream"] for k in ks})})
    return calls


def analyze_timing(trace, own_names, reps):
    """Splits the timing window into per-call segments at the L2-flush kernels (their
    names come from the flush probe window) and returns per-call GPU spans and own-kernel
    counts for the last `reps` calls, or None when the trace does not allow it."""
    tw = windows(trace, "timing")
    fw = windows(trace, "flush")
    if not tw or not fw:
        return None
    flush_names = {k["name"] for k in kernels_in(trace, fw[-1])}
    if not flush_names:
        return None
    sw = windows(trace, "spin")
    spin_names = {k["name"] for k in kernels_in(trace, sw[-1])} if sw else set()
    ks = [k for k in kernels_in(trace, tw[-1])
          if k["name"] not in spin_names or is_own(k["name"], own_names)]
    segments, cur = [], None
    for k in ks:
        if k["name"] in flush_names and not is_own(k["name"], own_names):
            cur = []
            segments.append(cur)
        elif cur is not None:
            cur.append(k)
    segments = segments[-reps:] if reps else segments
    spans, busy, own_counts, own_busy = [], [], [], []
    for seg in segments:
        if not seg:
            spans.append(0.0)
            busy.append(0.0)
            own_counts.append(0)
            own_busy.append(0.0)
            continue
        spans.append((max(k["end_ns"] for k in seg) - min(k["start_ns"] for k in seg)) / 1e6)
        busy.append(sum(k["end_ns"] - k["start_ns"] for k in seg) / 1e6)
        own_counts.append(sum(1 for k in seg if is_own(k["name"], own_names)))
        own_busy.append(sum(k["end_ns"] - k["start_ns"] for k in seg
                            if is_own(k["name"], own_names)) / 1e6)
    return {"calls": len(segments), "span_ms": spans, "busy_ms": busy, "own": own_counts,
            "own_busy_ms": own_busy,
            "names": sorted({k["name"] for seg in segments for k in seg})}
