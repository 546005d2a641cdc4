"""The CUTLASS convolution templates' paths that the suite's problems leave out, run for
real on a GPU (conv_cutlass_fprop; conv_sm90_fprop, the cases named sm90_*;
conv_pointwise_gemm, the cases named pw_*: 1-D, 2-D and 3-D pointwise layers, 16-, 8- and
4-byte accesses, a bias, an unbatched input, a batch past a grid's 65535 images):
fp16 with a bias, a batch whose input holds 2 GiB or more (the module runs it in chunks
below CUTLASS's 32-bit offsets), an unbatched 1-D input, odd spatial sizes with stride,
padding and dilation per dim, stems whose few input channels the module pads to a 16-byte
access (PAD_CHANNELS, the fixed-channels iterators), 3-D stems whose depth taps the module
folds into the channels (FOLD_DEPTH, the few-channels iterators; the cases named
*_stem_fold_*). Each case builds its render (in
parallel, one process each), runs it on seeded inputs with the reference nn.Conv*d's
weights and compares with the float64 convolution at the harness's tolerance for the
dtype. One JSON line per case; exit 1 when a case fails.

  python3 tests/gpu/conv_cutlass_check.py [--out F.jsonl] [--build-jobs J]
                                          [--only PREFIX,...]
"""
import argparse
import math
import os
import sys

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "engines", "heuristic", "tests"))
sys.path.insert(0, os.path.join(REPO, "python"))

from conv_sweep import shape_params  # noqa: E402
from gemm_sweep import build_all, emitter, excess, label  # noqa: E402
from kagent_harness.protocol import default_tolerance  # noqa: E402

SM80, SM90, PW = "conv_cutlass_fprop", "conv_sm90_fprop", "conv_pointwise_gemm"
# What a render's build depends on (its CUDA source), per template.
KNOBS = {SM80: ("DTYPE", "DIMS", "ALIGN", "PAD_CHANNELS", "FOLD_DEPTH", "TILE", "num_stages"),
         SM90: ("DTYPE", "DIMS", "BIAS", "TILE", "CLUSTER"),
         PW: ("ALIGN", "TILE", "num_stages")}
# name: (dtype, input shape, out channels, kernel, stride, padding, dilation, bias, tile,
# stages, or the cluster for sm90_*); kernel and the rest per spatial dim.
CASES = {
    # 3-D stems, the depth taps folded into the channels (FOLD_DEPTH, few-channels iterators).
    "fp32_stem_fold_3d": ("float32", (2, 3, 9, 20, 22), 16, (3, 3, 3), (1, 1, 1), (0, 0, 0),
                          (1, 1, 1), False, "128x64x16_64x32x16", 5),
    "fp32_stem_fold_strided_bias_3d": ("float32", (3, 3, 11, 17, 19), 24, (3, 5, 7),
                                       (2, 1, 2), (1, 2, 3), (2, 1, 1), True,
                                       "128x64x16_64x32x16", 5),
    "bf16_stem_fold_3d": ("bfloat16", (2, 3, 8, 16, 16), 32, (5, 3, 3), (1, 1, 1),
                          (2, 1, 1), (1, 1, 1), True, "256x128x32_64x64x32", 3),
    "fp16_bias_2d": ("float16", (4, 64, 57, 91), 96, (3, 5), (2, 1), (1, 2), (1, 2), True,
                     "256x128x32_64x64x32", 3),
    "fp32_chunked_2gib_2d": ("float32", (36, 64, 512, 512), 64, (3, 3), (1, 1), (1, 1),
                             (1, 1), False, "128x64x16_64x32x16", 5),
    "fp32_unbatched_1d": ("float32", (48, 1001), 96, (5,), (2,), (3,), (2,), True,
                          "128x64x16_64x32x16", 5),
    "bf16_3d_odd": ("bfloat16", (2, 32, 9, 17, 23), 64, (3, 2, 5), (1, 2, 3), (1, 0, 2),
                    (2, 1, 1), True, "256x128x32_64x64x32", 3),
    "fp32_stem_2d": ("float32", (6, 3, 67, 91), 64, (7, 5), (2, 3), (3, 1), (1, 2), True,
                     "128x64x16_64x32x16", 5),
    "bf16_stem_1d": ("bfloat16", (5, 2, 301), 24, (9,), (2,), (4,), (1,), False,
                     "128x128x32_64x64x32", 3),
    "sm90_fp16_bias_2d": ("float16", (4, 64, 57, 91), 128, (3, 5), (2, 1), (1, 2), (1, 2),
                          True, "128x128x64", "1x2"),
    "sm90_bf16_chunked_2gib_2d": ("bfloat16", (40, 128, 512, 512), 128, (3, 3), (1, 1),
                                  (1, 1), (1, 1), False, "128x128x64", "1x2"),
    "sm90_bf16_unbatched_1d": ("bfloat16", (64, 1001), 128, (5,), (2,), (3,), (2,), True,
                               "128x128x64", "1x1"),
    "sm90_bf16_3d_odd": ("bfloat16", (2, 32, 9, 17, 23), 64, (3, 2, 5), (1, 2, 3), (1, 0, 2),
                         (2, 1, 1), False, "64x128x64", "1x1"),
    "pw_fp32_2d": ("float32", (8, 64, 96, 96), 128, (1, 1), (1, 1), (0, 0), (1, 1), False,
                   "128x128x16_32x64x16", 4),
    "pw_fp32_bias_3d_odd": ("float32", (3, 12, 5, 7, 9), 20, (1, 1, 1), (1, 1, 1), (0, 0, 0),
                            (1, 1, 1), True, "64x128x16_32x64x16", 4),
    "pw_fp32_unbatched_1d": ("float32", (16, 1002), 24, (1,), (1,), (0,), (1,), False,
                             "128x128x32_32x64x32", 3),
    "pw_fp32_batch_70000_2d": ("float32", (70000, 8, 2, 2), 16, (1, 1), (1, 1), (0, 0),
                               (1, 1), False, "64x128x16_32x64x16", 4),
}


def template_of(name):
    return SM90 if name.startswith("sm90_") else PW if name.startswith("pw_") else SM80


def reference_layer(case, torch):
    """The case's nn.Conv1d/2d/3d (fp32 weights, as the problems build theirs)."""
    dtype, shape, cout, kernel, stride, padding, dilation, bias = case[:8]
    dims = len(kernel)
    module = {1: torch.nn.Conv1d, 2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[dims]
    return module(shape[-dims - 1], cout, kernel, stride=stride, padding=padding,
                  dilation=dilation, bias=bias)


def params_of(name, case, torch):
    """The render's params: the brain's shape params for the case's layer
    (conv_sweep.shape_params) and the case's knobs."""
    with torch.device("meta"):
        p = shape_params(reference_layer(case, torch), case[0])
    p["TILE"] = case[8]
    if template_of(name) == SM90:
        del p["ALIGN"], p["PAD_CHANNELS"], p["FOLD_DEPTH"]
        p["CLUSTER"] = case[9]
    else:
        p["num_stages"] = case[9]
    if template_of(name) == PW:  # 16-, 8- or 4-byte accesses of channels and pixels
        del p["PAD_CHANNELS"], p["FOLD_DEPTH"]
        dims, shape = len(case[3]), case[1]
        channels, pixels = shape[-dims - 1], math.prod(shape[-dims:])
        p["ALIGN"] = str(next(a for a in (4, 2, 1) if channels % a == 0 and pixels % a == 0))
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="")
    ap.add_argument("--build-jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--only", default="",
                    help="only the cases whose name starts with one of these (comma-separated)")
    args = ap.parse_args()
    only = args.only.split(",")
    cases = {n: c for n, c in CASES.items() if any(n.startswith(o) for o in only)}
    emit = emitter(args.out)

    import torch
    from kagent_harness.trials import rms
    from template_render import load_model_new
    torch.backends.cudnn.allow_tf32 = False
    renders = {name: params_of(name, case, torch) for name, case in cases.items()}

    def build_of(name):
        template = template_of(name)
        key = {k: renders[name][k] for k in KNOBS[template]}
        return label(template, key), (template, key)
    builds = dict(build_of(name) for name in cases)
    built = build_all(list(builds.values()), args.build_jobs, emit)
    failed = 0
    for name, case in cases.items():
        p = renders[name]
        row = {"case": name}
        try:
            dtype = getattr(torch, p["DTYPE"])
            dims = int(p["DIMS"])
            if build_of(name)[0] not in built:
                raise RuntimeError("the render did not build")
            torch.manual_seed(7)
            new = load_model_new(template_of(name), **p)().cuda()
            ref_layer = reference_layer(case, torch).cuda()
            with torch.no_grad():
                new.conv.weight.copy_(ref_layer.weight)
                if case[7]:
                    new.conv.bias.copy_(ref_layer.bias)
                x = torch.randn(*case[1], device="cuda").to(dtype)
                y = new(x)
                torch.cuda.synchronize()
                w64 = ref_layer.weight.to(dtype).double()
                b64 = ref_layer.bias.to(dtype).double() if case[7] else None
                ref = torch.nn.functional.__dict__[f"conv{dims}d"](
                    x.double(), w64, b64, case[4], case[5], case[6])
                atol, rtol = default_tolerance(p["DTYPE"])
                atol *= max(1.0, rms([ref.float()]))
                err = excess(y, ref, atol, rtol)
            row.update(shape=list(y.shape), ref_shape=list(ref.shape), dtype=str(y.dtype),
                       gate64=err, input_gib=x.numel() * x.element_size() / 2 ** 30)
            row["ok"] = list(y.shape) == list(ref.shape) and y.dtype == dtype and err <= 1.0
            del x, y, ref
            torch.cuda.empty_cache()
        except Exception as e:  # noqa: BLE001 - per case
            row.update(ok=False, error=f"{type(e).__name__}: {str(e)[:400]}")
        failed += not row["ok"]
        emit(row)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
