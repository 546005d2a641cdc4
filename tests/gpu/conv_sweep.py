"""Convolutions on the GPU: the CUDA C++ conv templates' variants (conv_cutlass_fprop,
CUTLASS 2.x; conv_sm90_fprop, CUTLASS 3.x on Hopper, 16-bit) against cuDNN (eager PyTorch,
TF32 off as the problems set it), per problem of problems/ (the standard convolutions: groups 1, not transposed), with each
variant's error against the problem's own reference, so the brain's conv rules can be set
from measurements (issue 21).

  python3 tests/gpu/conv_sweep.py [--out F.jsonl] [--only PREFIX,...] [--build-jobs J]
                                  [--build-only] [--templates ID,...] [--all-variants]
                                  [--brain ID,...] [--problems DIR]

Every problem of problems/ (or DIR, e.g. tests/gpu/level1_conv) whose model holds exactly one nn.Conv1d/2d/3d with groups 1 is
taken (KAGENT_PROBLEM_SCALE shrinks them, as everywhere). The variants (knobs per dtype,
the shape params from the problem) are rendered (engines/heuristic/tests/template_render.py)
and built first, J at a time in their own processes (gemm_sweep.build_all; one
TORCH_EXTENSIONS_DIR); a render's CUDA source depends only on its knobs and a few shape
params (SOURCE_PARAMS), so problems share builds. Then
each problem gets its seeded inputs, the reference's output and eager time, and each
variant (the reference's weights copied in) one JSON line: the median of
triton.testing.do_bench, the effective TFLOP/s and "gate", the largest |y - ref| / (atol
+ rtol |ref|) with the harness's tolerance for the dtype (atol scaled by max(1, rms(ref))
as the gate does; at most 1 passes). Not the harness: no sandbox, no L2 flush; figures
rank variants, the harness's are the ones reported. Needs a CUDA GPU, nvcc and the
nvidia-cutlass headers.

--all-variants times every listed variant of the dtype even where fewer than three problems
share a build. --brain ID,... also times template ID as the brain renders it for the
problem's recorded op signature (`kagent-template-render --first-kernel 132 --arch sm_90
--template ID --batch`: what a template switch gives; $KAGENT_TEMPLATE_RENDER or a
build's binary), e.g. the Triton implicit GEMMs beside CUTLASS's; its row is
{"variant": "brain:ID"}. The candidate is built under the reference's seed and takes the
reference's state_dict where the keys match, as the harness builds it.
"""
import argparse
import glob
import importlib.util
import os
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "engines", "heuristic", "tests"))
sys.path.insert(0, os.path.join(REPO, "python"))

from gemm_sweep import build_all, emitter, excess, label  # noqa: E402
from kagent_harness.protocol import default_tolerance  # noqa: E402

# (template, knobs) per dtype class. conv_cutlass_fprop (CUTLASS 2.x, Sm80 mma.sync): the
# tiles of CUTLASS's generator for SM80 3xTF32 (GenerateSM80_TensorOp_1688_fast_fp32_math)
# and 16-bit (GenerateSM80_TensorOp_16816) convolutions that won the first sweeps;
# conv_sm90_fprop (CUTLASS 3.x, TMA im2col and wgmma) for 16-bit.
SM80 = "conv_cutlass_fprop"
SM90 = "conv_sm90_fprop"
FP32_VARIANTS = [(SM80, {"TILE": "128x64x16_64x32x16", "num_stages": 5}),
                 (SM80, {"TILE": "128x64x32_64x32x32", "num_stages": 4}),
                 (SM80, {"TILE": "256x64x32_64x32x32", "num_stages": 3}),
                 (SM80, {"TILE": "128x64x32_64x32x32", "num_stages": 3}),
                 (SM80, {"TILE": "64x128x32_32x64x32", "num_stages": 4}),
                 (SM80, {"TILE": "64x64x32_32x32x32", "num_stages": 5})]
HALF_VARIANTS = [(SM90, {"TILE": "128x128x64", "CLUSTER": "1x1"}),
                 (SM90, {"TILE": "64x128x64", "CLUSTER": "1x1"}),
                 (SM80, {"TILE": "128x256x64_64x64x64", "num_stages": 3}),
                 (SM90, {"TILE": "128x128x64", "CLUSTER": "1x2"}),
                 (SM90, {"TILE": "64x256x64", "CLUSTER": "1x1"}),
                 (SM90, {"TILE": "128x64x64", "CLUSTER": "1x1"}),
                 (SM80, {"TILE": "256x128x32_64x64x32", "num_stages": 3})]
# What a render's CUDA source depends on besides the knobs, per template.
SOURCE_PARAMS = {SM80: ("DTYPE", "DIMS", "ALIGN", "PAD_CHANNELS", "FOLD_DEPTH"),
                 SM90: ("DTYPE", "DIMS", "BIAS")}


def conv_layer(model, nn):
    """The model's one nn.Conv1d/2d/3d with groups 1, else None."""
    convs = [m for m in model.modules() if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d))]
    if len(convs) != 1 or convs[0].groups != 1 or convs[0].padding_mode != "zeros" or \
            isinstance(convs[0].padding, str):
        return None
    return convs[0]


def shape_params(conv, dtype_name):
    """conv_cutlass_fprop's shape params for this layer (the brain's rule gives the same)."""
    dims = conv.weight.dim() - 2
    cin, cout = conv.in_channels, conv.out_channels
    aligns = (4, 2, 1) if dtype_name == "float32" else (8, 4, 2)
    # Fewer input channels than a 16-byte access (a stem): padded to it, 1-D and 2-D; a 3-D
    # one folds its depth taps into the channels (FOLD_DEPTH).
    stem = cin < aligns[0] and cout % aligns[0] == 0
    pad, fold = stem and dims <= 2, stem and dims == 3
    align = aligns[0] if stem else next((a for a in aligns if cin % a == 0 and cout % a == 0),
                                        None)
    if align is None or (dims == 3 and align != aligns[0]) or max(conv.kernel_size) > 32:
        return None
    lead = 3 - dims
    p = {"DTYPE": dtype_name, "DIMS": str(dims), "ALIGN": str(align), "PAD_CHANNELS": str(pad),
         "FOLD_DEPTH": str(fold), "IN_CHANNELS": cin, "OUT_CHANNELS": cout, "BIAS": str(conv.bias is not None)}
    for name, values, unit in (("KERNEL", conv.kernel_size, 1), ("STRIDE", conv.stride, 1),
                               ("PADDING", conv.padding, 0), ("DILATION", conv.dilation, 1)):
        full = (unit,) * lead + tuple(values)
        for d, v in zip("DHW", full):
            p[f"{name}_{d}"] = v
    return p


def load_problem(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def variants_for(params, templates, problems=3):
    """The (template, knobs) variants for a problem whose build configuration `problems`
    problems share: all listed for three or more, the first three otherwise (fewer
    builds); only `templates` when given."""
    listed = FP32_VARIANTS if params["DTYPE"] == "float32" else HALF_VARIANTS
    listed = [v for v in listed if (not templates or v[0] in templates) and
              (v[0] != SM90 or (params["ALIGN"] == "8" and params["PAD_CHANNELS"] == "False"
                                and params["FOLD_DEPTH"] == "False"))]
    return listed if problems >= 3 else listed[:3]


def build_key(template, knobs, params):
    """The render's build: the template, its knobs and the params its CUDA source reads."""
    return dict({k: params[k] for k in SOURCE_PARAMS[template]}, **knobs)


def config(params):
    """The problem's build configuration (the params any template's CUDA source reads)."""
    return tuple(params[k] for k in ("DTYPE", "DIMS", "ALIGN", "PAD_CHANNELS", "FOLD_DEPTH",
                                     "BIAS"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--problems", default=os.path.join(REPO, "problems"),
                    help="the folder of problems (e.g. tests/gpu/level1_conv)")
    ap.add_argument("--templates", default="", help="only these templates' variants")
    ap.add_argument("--build-jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--all-variants", action="store_true")
    ap.add_argument("--brain", default="", help="also the brain's render of these templates")
    args = ap.parse_args()
    emit = emitter(args.out)

    import torch
    import torch.nn as nn
    import triton
    from kagent_harness.trials import rms
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    only = [s for s in args.only.split(",") if s]
    templates = [s for s in args.templates.split(",") if s]
    problems = []
    for path in sorted(glob.glob(os.path.join(args.problems, "*conv*.py"))):
        name = os.path.basename(path)[:-3]
        if name.endswith("_start") or (only and not any(name.startswith(o) for o in only)):
            continue
        mod = load_problem(path)
        torch.manual_seed(0)
        with torch.device("meta"):
            model = mod.Model(*mod.get_init_inputs())
        conv = conv_layer(model, nn)
        params = None
        if conv is not None:
            params = shape_params(conv, str(conv.weight.dtype).replace("torch.", ""))
        if params is None:
            emit({"problem": name, "skipped": "not a standard groups-1 convolution CUTLASS's "
                  "fprop takes (or its channels are misaligned)"})
            continue
        problems.append((name, path, params))
    users = {}
    for _, _, params in problems:
        users[config(params)] = users.get(config(params), 0) + (3 if args.all_variants else 1)
    variants = {}
    for name, path, params in problems:
        for template, knobs in variants_for(params, templates, users[config(params)]):
            key = build_key(template, knobs, params)
            variants[label(template, key)] = (template, key)
    t0 = time.time()
    built = build_all(list(variants.values()), args.build_jobs, emit)
    emit({"built": len(built), "of": len(variants), "seconds": round(time.time() - t0, 1)})
    if args.build_only:
        return 0 if built else 1
    from template_render import load_model_new
    for name, path, params in problems:
        mod = load_problem(path)
        try:
            torch.manual_seed(1234)
            model = mod.Model(*mod.get_init_inputs()).cuda()
            torch.manual_seed(4321)
            inputs = [t.cuda() if torch.is_tensor(t) else t for t in mod.get_inputs()]
            conv = conv_layer(model, nn)
            with torch.no_grad():
                ref = model(*inputs)
                eager = triton.testing.do_bench(lambda: model(*inputs), return_mode="median")
            atol, rtol = default_tolerance(str(ref.dtype).replace("torch.", ""))
            atol *= max(1.0, rms([ref.float()]))
            taps = 1
            for k in conv.kernel_size:
                taps *= k
            flop = 2.0 * ref.numel() * conv.in_channels * taps
            emit({"problem": name, "eager_ms": eager, "eager_tflops": flop / eager / 1e9,
                  "params": params, "input": list(inputs[0].shape)})
        except Exception as e:  # noqa: BLE001 - one problem's failure is reported, not fatal
            emit({"problem": name, "error": f"{type(e).__name__}: {str(e)[:300]}"})
            continue
        for template, knobs in variants_for(params, templates, users[config(params)]):
            render = dict(params, **knobs)
            if template == SM90:
                del render["ALIGN"], render["PAD_CHANNELS"], render["FOLD_DEPTH"]
            if label(template, build_key(template, knobs, params)) not in built:
                continue
            row = {"problem": name, "variant": label(template, knobs)}
            try:
                new = load_model_new(template, **render)().cuda()
                with torch.no_grad():
                    new.conv.weight.copy_(conv.weight)
                    if conv.bias is not None:
                        new.conv.bias.copy_(conv.bias)
                time_against(row, new, inputs, ref, eager, flop, atol, rtol)
            except Exception as e:  # noqa: BLE001 - per variant
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            emit(row)
        for template in filter(None, args.brain.split(",")):
            emit(time_brain_render(template, name, mod, model, inputs, ref, eager, flop,
                                   atol, rtol))
        model = inputs = ref = None
        torch.cuda.empty_cache()
    return 0


def time_against(row, new, inputs, ref, eager, flop, atol, rtol):
    """Fills `row` with `new`'s error measure against `ref` (the gate's, at most 1
    passes), whether its shape is the reference's, its median time (do_bench), TFLOP/s
    and speedup over eager."""
    import torch
    import triton
    with torch.no_grad():
        y = new(*inputs)
        torch.cuda.synchronize()
        row["gate"] = excess(y, ref, atol, rtol)
        row["shape_ok"] = list(y.shape) == list(ref.shape)
        del y
        row["ms"] = triton.testing.do_bench(lambda: new(*inputs), return_mode="median")
    row["tflops"] = flop / row["ms"] / 1e9
    row["vs_eager"] = eager / row["ms"]


def time_brain_render(template, name, mod, model, inputs, ref, eager, flop, atol, rtol):
    """Template `template` as the brain renders it for the problem's recorded signature,
    timed as the variants are: one JSON row."""
    import json
    import subprocess

    import torch
    from kagent_harness.signature import record
    from template_render import cli_binary, exec_source
    row = {"problem": name, "variant": f"brain:{template}"}
    try:
        sig = record(model, inputs)
        done = subprocess.run([cli_binary(), "--first-kernel", "132", "--arch", "sm_90",
                               "--template", template, "--batch"], input=json.dumps([sig]),
                              capture_output=True, text=True, timeout=60)
        answer = json.loads(done.stdout or "[{}]")[0]
        if "source" not in answer:
            row["error"] = f"render: {answer.get('error') or done.stderr[-300:]}"
            return row
        torch.manual_seed(1234)
        new = exec_source(answer["source"], f"brain_{template}").ModelNew(
            *mod.get_init_inputs()).cuda()
        own, theirs = new.state_dict(), model.state_dict()
        if own and set(own) == set(theirs) and all(own[k].shape == theirs[k].shape
                                                   for k in own):
            new.load_state_dict(theirs)
        time_against(row, new, inputs, ref, eager, flop, atol, rtol)
    except Exception as e:  # noqa: BLE001 - per render
        row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    return row


if __name__ == "__main__":
    sys.exit(main())
