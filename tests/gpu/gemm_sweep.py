"""GEMMs on the GPU: the CUDA C++ templates' variants against cuBLAS, per shape, with
their error against a float64 product, so the brain's GEMM rules can be set from
measurements (issue 20). --dtype float32 (the default): the 3xTF32 templates against
torch's exact fp32 matmul (TF32 off); --dtype bfloat16: gemm_sm90_bf16 against torch's
bf16 matmul (fp32 accumulation).

  python3 tests/gpu/gemm_sweep.py [--dtype float32|bfloat16] [--out F.jsonl]
                                  [--only SHAPE,...] [--variants N] [--template ID]
                                  [--layout-variants N]
                                  [--build-jobs J] [--compiled] [--build-only]

A variant of gemm_sm90_bf16 or gemm_cutlass_tf32x3 compiles its operands' layouts in
(A_EXPR, B_EXPR), and gemm_cutlass_tf32x3 the triangle it keeps (TRIANGLE, for the
triangular shapes: torch.tril / triu of the product): each is built once per layout and
triangle the chosen shapes need, the transposed layouts and triangles for the first
--layout-variants variants only (default 2).

Every variant is rendered (engines/heuristic/tests/template_render.py) and built first,
J at a time in their own processes (load_inline; one TORCH_EXTENSIONS_DIR), then each shape
gets fresh seeded inputs, the float64 product, torch's matmul in the sweep's dtype (and
torch.compile's with --compiled) and every variant that takes the shape. Per (shape,
variant) one JSON line: the median time of triton.testing.do_bench, the effective TFLOP/s
(2 M N K L over the time), and the error as the largest |C - R| / (atol + rtol |R|) with
the harness's tolerance for the dtype (fp32: atol 1e-4, rtol 1e-4; bf16: 1e-2, 1e-2):
"gate" against torch's result R with the gate's atol (atol times max(1, rms(R)); at most 1
passes, as in the gate), "gate64" the same against the float64 product, and excess64 /
excess32 with the unscaled atol. Not the harness: no sandbox, no L2 flush; figures rank
variants, the harness's are the ones reported.
Needs a CUDA GPU, nvcc and the nvidia-cutlass headers.
"""
import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "engines", "heuristic", "tests"))
sys.path.insert(0, os.path.join(REPO, "python"))

from kagent_harness.protocol import default_tolerance  # noqa: E402

ATOL, RTOL = default_tolerance("float32")  # the float32 sweep's; --dtype sets them

# name: (L, M, K, N, A transposed, B transposed[, triangle]); L 0: a 2-D product, L > 0 a
# batch of L, a negative L a 3-D A (-L, M, K) times a 2-D B; a triangle ("lower" or
# "upper") makes the product torch.tril / torch.triu of A @ B.
SHAPES = {
    "square_4096": (0, 4096, 4096, 4096, False, False),
    "square_2048": (0, 2048, 2048, 2048, False, False),
    "square_8192": (0, 8192, 8192, 8192, False, False),
    "tall_skinny_k128": (0, 262144, 128, 1024, False, False),
    "batched_128x512x1024x512": (128, 512, 1024, 512, False, False),
    "irregular_4099x2949x3001": (0, 4099, 2949, 3001, False, False),
    "irregular_8205x2949x5921": (0, 8205, 2949, 5921, False, False),
    "large_k_256x524288x256": (0, 256, 524288, 256, False, False),
    "small_k_16384x32x16384": (0, 16384, 32, 16384, False, False),
    "a_transposed_4096": (0, 4096, 4096, 4096, True, False),
    "b_transposed_4096": (0, 4096, 4096, 4096, False, True),
    "both_transposed_4096": (0, 4096, 4096, 4096, True, True),
    "tensor3d_16x1024x2048x768": (-16, 1024, 2048, 768, False, False),
    "wide_1024x8192x16384": (0, 1024, 8192, 16384, False, False),
    "square_1024": (0, 1024, 1024, 1024, False, False),
    "square_512": (0, 512, 512, 512, False, False),
    "k256_8192x256x8192": (0, 8192, 256, 8192, False, False),
    "batched_16x2048x2048x2048": (16, 2048, 2048, 2048, False, False),
    "batched_64x256x4096x256": (64, 256, 4096, 256, False, False),
    # Long K over small outputs (split-K's shapes), beside large_k above.
    "large_k_512x262144x256": (0, 512, 262144, 256, False, False),
    "large_k_1024x65536x1024": (0, 1024, 65536, 1024, False, False),
    "large_k_128x1048576x128": (0, 128, 1048576, 128, False, False),
    # Transposed operands with a K past the SM90 kernel's accuracy bound (KernelBench's
    # transposed products), and triangular outputs (its triu / tril of a product).
    "a_transposed_2048x8192x4096": (0, 2048, 8192, 4096, True, False),
    "b_transposed_2048x8192x4096": (0, 2048, 8192, 4096, False, True),
    "both_transposed_2048x8192x4096": (0, 2048, 8192, 4096, True, True),
    "lower_4096": (0, 4096, 4096, 4096, False, False, "lower"),
    "upper_4096": (0, 4096, 4096, 4096, False, False, "upper"),
    "lower_2048x8192x3072": (0, 2048, 8192, 3072, False, False, "lower"),
    "upper_batched_8x1024x1024x1024": (8, 1024, 1024, 1024, False, False, "upper"),
}


# The bf16 sweep's shapes, the same tuple: problems/02, 04 and 07's and their neighbours.
BF16_SHAPES = {
    "square_8192": (0, 8192, 8192, 8192, False, False),
    "square_4096": (0, 4096, 4096, 4096, False, False),
    "square_2048": (0, 2048, 2048, 2048, False, False),
    "square_1024": (0, 1024, 1024, 1024, False, False),
    "small_k_32768x64x32768": (0, 32768, 64, 32768, False, False),
    "small_k_16384x32x16384": (0, 16384, 32, 16384, False, False),
    "a_transposed_8192": (0, 8192, 8192, 8192, True, False),
    "b_transposed_4096": (0, 4096, 4096, 4096, False, True),
    "both_transposed_4096": (0, 4096, 4096, 4096, True, True),
    "tall_skinny_k128": (0, 262144, 128, 1024, False, False),
    "irregular_4099x2949x3001": (0, 4099, 2949, 3001, False, False),
    "irregular_8205x2949x5921": (0, 8205, 2949, 5921, False, False),
    "batched_128x512x1024x512": (128, 512, 1024, 512, False, False),
    "tensor3d_16x1024x2048x768": (-16, 1024, 2048, 768, False, False),
    "large_k_256x524288x256": (0, 256, 524288, 256, False, False),
    "wide_1024x8192x16384": (0, 1024, 8192, 16384, False, False),
}


def sm90(template, tile, cluster, schedule="cooperative", epilogue="tma", swizzle=1):
    """A variant of one of the SM90 templates (their knobs are the same)."""
    return (template, {"TILE": tile, "CLUSTER": cluster, "SCHEDULE": schedule,
                       "EPILOGUE": epilogue, "SWIZZLE": swizzle})


def v(tile, cluster="1x1", **knobs):
    return sm90("gemm_sm90_tf32x3", tile, cluster, **knobs)


def v16(tile, cluster="2x1", **knobs):
    return sm90("gemm_sm90_bf16", tile, cluster, **knobs)


VARIANTS = [
    # The first seven: the fastest of the first sweep (H100, 2026-12-06) and the CUTLASS 2.x
    # SM80 template; the rest were slower everywhere there.
    v("128x256x32", "2x1"), v("256x128x32", "1x2"), v("128x256x32"), v("128x128x32", "2x1"),
    v("128x256x32", "2x1", epilogue="direct"), v("128x128x32", epilogue="direct"),
    ("gemm_cutlass_tf32x3", {}),
    v("128x128x32"), v("256x128x32"),
    v("64x128x32", schedule="pingpong"), v("128x128x32", schedule="pingpong"),
    v("64x256x32", schedule="pingpong"), v("128x128x64"),
    v("128x256x32", "2x1", swizzle=4),
    # The SM80 template's other stages and tiles (the first two, with the plain variant
    # above, are the ones --template gemm_cutlass_tf32x3 --layout-variants 3 builds in every
    # layout and triangle), then its serial split-K (long K over few output tiles).
    ("gemm_cutlass_tf32x3", {"num_stages": 4}),
    ("gemm_cutlass_tf32x3", {"TILE": "128x64x32_64x32x32", "num_stages": 4}),
    ("gemm_cutlass_tf32x3", {"SPLIT_K": 16}), ("gemm_cutlass_tf32x3", {"SPLIT_K": 33}),
    ("gemm_cutlass_tf32x3", {"SPLIT_K": 66}), ("gemm_cutlass_tf32x3", {"SPLIT_K": 132}),
    ("gemm_cutlass_tf32x3", {"TILE": "64x64x32_32x32x32", "SPLIT_K": 16, "num_stages": 4}),
    ("gemm_cutlass_tf32x3", {"TILE": "64x64x32_32x32x32", "num_stages": 4}),
]

BF16_VARIANTS = [
    v16("128x256x64"), v16("256x128x64", "1x2"), v16("128x256x64", "1x1"),
    v16("128x128x64"), v16("64x256x64", schedule="pingpong"),
    v16("128x256x64", epilogue="direct"), v16("128x128x128"),
    v16("64x128x64", "1x1", schedule="pingpong"), v16("128x256x64", swizzle=4),
]

# An operand layout: the forward's A_EXPR and B_EXPR (a transposed shape's operand is
# passed as its storage, and the forward takes the view).
PLAIN = ("A", "B")


def layout_of(shape):
    return ("A.mT" if shape[4] else "A", "B.mT" if shape[5] else "B")


def triangle_of(shape):
    return shape[6] if len(shape) > 6 else "none"


# The templates whose variants compile the operands' layouts (and, the last, a triangle).
LAYOUT_TEMPLATES = ("gemm_sm90_bf16", "gemm_cutlass_tf32x3")


def label(template, params):
    if template in ("gemm_sm90_tf32x3", "gemm_sm90_bf16"):
        name = (f"{'sm90' if template == 'gemm_sm90_tf32x3' else 'sm90bf16'} {params['TILE']} "
                f"c{params['CLUSTER']} {params['SCHEDULE'][:4]} {params['EPILOGUE']} "
                f"sw{params['SWIZZLE']}")
        layout = (params.get("A_EXPR", "A"), params.get("B_EXPR", "B"))
        return name if layout == PLAIN else f"{name} {layout[0]},{layout[1]}"
    return template + "".join(f" {k}={val}" for k, val in sorted(params.items())
                              if (k, val) not in (("A_EXPR", "A"), ("B_EXPR", "B")))


def builds(variants, shapes, dtype, layout_variants):
    """(template, params) to build: a variant of a template that compiles no layout as
    given; one of LAYOUT_TEMPLATES with the plain layout (and, for bfloat16, DTYPE), and the
    first `layout_variants` of the list with every transposed layout (gemm_cutlass_tf32x3:
    every layout and triangle) the shapes need too."""
    needs = sorted({layout_of(s) + (triangle_of(s),) for s in shapes},
                   key=lambda x: x != PLAIN + ("none",))
    out = []
    for i, (template, params) in enumerate(variants):
        if template not in LAYOUT_TEMPLATES:
            out.append((template, dict(params)))
            continue
        extra = {"DTYPE": dtype} if dtype != "float32" else {}
        for a_expr, b_expr, triangle in needs:
            if triangle != "none" and template != "gemm_cutlass_tf32x3":
                continue
            if (a_expr, b_expr, triangle) != PLAIN + ("none",) and i >= layout_variants:
                continue
            tri = {"TRIANGLE": triangle} if triangle != "none" else {}
            out.append((template, dict(params, A_EXPR=a_expr, B_EXPR=b_expr, **extra, **tri)))
    return out


def emitter(path):
    """emit(row): prints the row as a JSON line and appends it to `path` (when given)."""
    out = open(path, "a") if path else None

    def emit(row):
        line = json.dumps(row)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
    return emit


def build_one(template, params):
    """Renders and imports the variant in this process (its import builds it)."""
    from template_render import load_model_new
    load_model_new(template, **params)


def build_all(variants, jobs, emit):
    """Builds every variant, `jobs` at a time, each in a child process of its own."""
    pending = list(variants)
    running = []
    ok = set()
    while pending or running:
        while pending and len(running) < jobs:
            template, params = pending.pop(0)
            code = ("import sys, json; sys.path.insert(0, %r); import gemm_sweep; "
                    "gemm_sweep.build_one(%r, json.loads(%r))" %
                    (os.path.dirname(os.path.abspath(__file__)), template, json.dumps(params)))
            proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            running.append((proc, template, params, time.time()))
        time.sleep(0.5)
        for item in list(running):
            proc, template, params, t0 = item
            if proc.poll() is None:
                continue
            running.remove(item)
            out = proc.stdout.read()
            row = {"build": label(template, params), "rc": proc.returncode,
                   "seconds": round(time.time() - t0, 1)}
            if proc.returncode == 0:
                ok.add(label(template, params))
            else:
                row["error"] = out[-3000:]
            emit(row)
    return ok


def make_inputs(torch, shape, seed, dtype="float32"):
    """(a, b, A, B): the operands' storage, and the product's operands (a.mT where the
    shape transposes A, the same for B)."""
    L, M, K, N, at, bt = shape[:6]
    g = torch.Generator(device="cuda").manual_seed(seed)
    lead = (abs(L),) if L else ()
    dt = getattr(torch, dtype)
    a = torch.randn(*lead, *((K, M) if at else (M, K)), device="cuda", generator=g).to(dt)
    b_lead = lead if L > 0 else ()
    b = torch.randn(*b_lead, *((N, K) if bt else (K, N)), device="cuda", generator=g).to(dt)
    A = a.mT if at else a
    B = b.mT if bt else b
    return a, b, A, B


def excess(c, ref, atol=None, rtol=None):
    """Largest |c - ref| / (atol + rtol |ref|), in float64; atol and rtol default to the
    sweep's dtype's (read when called: main() sets them for --dtype)."""
    atol = ATOL if atol is None else atol
    rtol = RTOL if rtol is None else rtol
    c64, r64 = c.double(), ref.double()
    return ((c64 - r64).abs() / (atol + rtol * r64.abs())).max().item()


def gate_atol(ref32):
    """The gate's atol for this reference: ATOL times max(1, rms(reference)), with the
    harness's own rms (measure.py)."""
    from kagent_harness.trials import rms
    return ATOL * max(1.0, rms([ref32]))


def takes(template, params, A, B):
    """Whether the variant's module takes these operands (the SM90 one's TMA epilogue: N a
    multiple of 4; the SM80 one: 2-D or both 3-D, each contiguous in its compiled layout,
    its contiguous dim and N multiples of 4). A call that a
    module refuses (TORCH_CHECK) crashed the process on the H100 and the H200 with torch
    2.11: the sweep never makes one. The SM80 one takes batches (3-D A and B) too, where
    its SPLIT_K does nothing: split variants are only timed on 2-D products."""
    if template == "gemm_sm90_bf16":
        return True  # it stages what its compiled layouts cannot read
    if template != "gemm_cutlass_tf32x3":
        return params.get("EPILOGUE") != "tma" or B.shape[-1] % 4 == 0
    if params.get("SPLIT_K", 1) > 1 and not (A.dim() == 2 and B.dim() == 2):
        return False  # a batch ignores SPLIT_K: the same kernel as SPLIT_K 1
    a_col, b_col = params.get("A_EXPR", "A") != "A", params.get("B_EXPR", "B") != "B"
    a_store, b_store = (A.mT if a_col else A), (B.mT if b_col else B)
    return (A.dim() == B.dim() and A.dim() in (2, 3) and a_store.is_contiguous()
            and b_store.is_contiguous() and a_store.shape[-1] % 4 == 0
            and b_store.shape[-1] % 4 == 0 and B.shape[-1] % 4 == 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--out", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--variants", type=int, default=0, help="the first N (default all)")
    ap.add_argument("--template", default="",
                    help="only this template's variants (after --variants)")
    ap.add_argument("--layout-variants", type=int, default=2)
    ap.add_argument("--build-jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--compiled", action="store_true")
    ap.add_argument("--build-only", action="store_true",
                    help="build the variants and stop (a later run finds them built)")
    args = ap.parse_args()
    emit = emitter(args.out)

    global ATOL, RTOL
    ATOL, RTOL = default_tolerance(args.dtype)
    import torch
    import triton
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    only = [s for s in args.only.split(",") if s]
    shapes = {name: shape for name, shape in
              (SHAPES if args.dtype == "float32" else BF16_SHAPES).items()
              if not only or any(name.startswith(o) for o in only)}
    listed = VARIANTS if args.dtype == "float32" else BF16_VARIANTS
    listed = [x for x in listed[:args.variants or len(listed)]
              if not args.template or x[0] == args.template]
    variants = builds(listed, shapes.values(), args.dtype, args.layout_variants)
    t0 = time.time()
    built = build_all(variants, args.build_jobs, emit)
    emit({"built": len(built), "of": len(variants), "seconds": round(time.time() - t0, 1)})
    if args.build_only:
        return 0 if built else 1
    from template_render import load_model_new
    models = [(template, params, label(template, params),
               load_model_new(template, **params)().cuda())
              for template, params in variants if label(template, params) in built]
    for sname, shape in shapes.items():
        L, M, K, N = abs(shape[0]) or 1, shape[1], shape[2], shape[3]
        # A triangle's FLOP are the full product's: the figure compares with cuBLAS's.
        flop = 2.0 * L * M * N * K
        triangle = triangle_of(shape)
        keep = {"none": lambda c: c, "lower": torch.tril, "upper": torch.triu}[triangle]
        try:
            a, b, A, B = make_inputs(torch, shape, 1234, args.dtype)
            with torch.no_grad():
                ref64 = keep(torch.matmul(A.double(), B.double()))
                ref32 = keep(torch.matmul(A, B))
                eager = triton.testing.do_bench(lambda: keep(torch.matmul(A, B)),
                                                return_mode="median")
                atol = gate_atol(ref32)
                row = {"shape": sname, "L": L, "M": M, "K": K, "N": N, "triangle": triangle,
                       "torch_ms": eager,
                       "torch_tflops": flop / eager / 1e9, "gate_atol": atol,
                       "torch_excess64": excess(ref32, ref64),
                       "torch_gate64": excess(ref32, ref64, atol=atol)}
                if args.compiled:
                    mm = torch.compile(lambda a, b: keep(torch.matmul(a, b)))
                    mm(A, B)
                    row["compiled_ms"] = triton.testing.do_bench(lambda: mm(A, B),
                                                                 return_mode="median")
            emit(row)
        except Exception as e:  # noqa: BLE001 - one shape's failure is reported, not fatal
            emit({"shape": sname, "error": f"{type(e).__name__}: {str(e)[:300]}"})
            continue
        for template, params, name, model in models:
            if not takes(template, params, A, B) or \
                    params.get("TRIANGLE", "none") != triangle:
                continue
            # A model with the layouts compiled in takes the storage and makes the views.
            x, y = (a, b) if "A_EXPR" in params else (A, B)
            if "A_EXPR" in params and (params["A_EXPR"], params["B_EXPR"]) != layout_of(shape):
                continue
            row = {"shape": sname, "variant": name}
            try:
                with torch.no_grad():
                    c = model(x, y)
                    torch.cuda.synchronize()
                    row["excess64"] = excess(c, ref64)
                    row["excess32"] = excess(c, ref32)
                    # What the gate decides on: against the fp32 reference, atol scaled.
                    row["gate"] = excess(c, ref32, atol=atol)
                    row["gate64"] = excess(c, ref64, atol=atol)
                    row["ms"] = triton.testing.do_bench(lambda: model(x, y), return_mode="median")
                row["tflops"] = flop / row["ms"] / 1e9
                row["vs_torch"] = eager / row["ms"]
                del c
            except Exception as e:  # noqa: BLE001 - per variant
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            emit(row)
        a = b = A = B = x = y = ref64 = ref32 = c = None
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
