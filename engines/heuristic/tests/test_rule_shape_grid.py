"""The sizing rules against a grid of shapes, render only: no kernel runs.

For every op class a generated grid of KernelBench-style models (tiny, odd, non-power-of-two,
huge, size-1 dims, aspect ratios from 1:1000 to 1000:1, every dtype the class's templates
serve) is recorded by the harness on the meta device (shapes only, no memory), given to the
C++ brain (`kagent-template-render --first-kernel`) and the rendered first kernel is checked
without running it: the candidate is built and its forward runs on meta tensors with every
Triton kernel replaced by a recorder of its launches. A launch fails the test when it
breaks what the templates assume:
  - an argument is None (a param or shape that did not reach the host code);
  - a BLOCK_* constexpr is not a power of two (tl.arange), or below 16 in a kernel that
    calls tl.dot (its minimum);
  - num_warps is not a power of two in [1, 32];
  - a grid dim is below 1 or over CUDA's limits (2**31 - 1 on axis 0, 65535 on axes 1, 2);
and the forward must return the reference's output shape and dtype (a param larger or
smaller than the shape allows shows there). A CUDA C++ template (built with nvcc at import)
is not built: the inputs it is rendered for must be ones its module takes. Every model of the grid is an op the brain
serves: a refusal fails too, with the brain's reason. Seconds on the CPU: one render per
model, no interpretation.
"""
import inspect
import json
import math
import re
import subprocess

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from template_render import exec_source, load_meta
from test_problems_first_kernel import BINARY, record

pytestmark = pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")

META = torch.device("meta")
FP = (torch.float32, torch.bfloat16, torch.float16)
# Aspect ratios from 1:1000 to 1000:1, odd sizes, powers of two, size-1 dims, and a tensor
# of 2**31 elements or more (64-bit offsets).
MATRICES = [(1, 1), (1, 1000), (1000, 1), (7, 13), (33, 65), (127, 4096), (4096, 127),
            (1024, 1024), (3, 3000), (3000, 3), (65536, 32768)]


def Fn(fn):
    """A model class whose forward is fn (no parameters, no constructor arguments)."""
    class Model(nn.Module):
        def forward(self, *xs):
            return fn(*xs)
    return Model


class BatchNormEval(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels).eval()

    def forward(self, x):
        return self.bn(x)


class Separable(nn.Module):  # KernelBench level 1's depthwise-separable conv
    def __init__(self, channels, out_channels, dtype):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, dtype=dtype)
        self.pointwise = nn.Conv2d(channels, out_channels, 1, dtype=dtype)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


def _x(shape, dtype=torch.float32):
    return torch.empty(shape, dtype=dtype, device=META)


def _hw(v):
    return (v, v) if isinstance(v, int) else v


def _cases():
    """name -> (model class, constructor arguments, input factory)."""
    c = {}
    # GEMM (every dtype), batched, transposed; matvec.
    for m, k in MATRICES:
        for n in (1, 17, 4096):
            if m * n > 2 ** 33:
                continue
            for dt in FP:
                c[f"mm_{m}x{k}x{n}_{dt}"] = (Fn(torch.matmul), [], lambda m=m, k=k, n=n, dt=dt: [
                    _x((m, k), dt), _x((k, n), dt)])
        c[f"mm_ta_{m}x{k}"] = (Fn(lambda a, b: a.T @ b), [],
                               lambda m=m, k=k: [_x((k, m)), _x((k, 64))])
        c[f"bmm_3x{m}x{k}"] = (Fn(torch.bmm), [], lambda m=m, k=k: [_x((3, m, k)), _x((3, k, 33))])
        c[f"mm_tb_{m}x{k}"] = (Fn(lambda a, b: a @ b.T), [],
                               lambda m=m, k=k: [_x((m, k)), _x((30, k))])
        # Both transposed, a wide output and K past 4096 (the CUTLASS 2.x module's layouts).
        c[f"mm_tab_{m}x{k}"] = (Fn(lambda a, b: a.T @ b.T), [],
                                lambda m=m, k=k: [_x((8192, m)), _x((k, 8192))])
        c[f"tensor3d_2x{m}x{k}"] = (Fn(torch.matmul), [],
                                    lambda m=m, k=k: [_x((2, m, k)), _x((k, 12))])
        # KernelBench's 4-D tensor-matrix product (einsum over the last dim), N wide. Not
        # at K = 1, where einsum multiplies by broadcast (no product; an elementwise op of
        # two shapes that no template serves yet).
        if k > 1:
            c[f"tensor4d_2x3x{m}x{k}"] = (
                Fn(lambda a, b: torch.einsum("bijl,lk->bijk", a, b)), [],
                lambda m=m, k=k: [_x((2, 3, m, k)), _x((k, 768))])
        c[f"matvec_{m}x{k}"] = (Fn(torch.matmul), [], lambda m=m, k=k: [_x((m, k)), _x((k, 1))])
    # Elementwise, reductions, softmax, scans, row norms over the grid and 3-D shapes.
    shapes = MATRICES + [(5,), (2, 1, 3), (16, 4096, 4096), (1, 1, 100003), (100003, 1, 1)]
    for s in shapes:
        for dt in FP:
            c[f"relu_{s}_{dt}"] = (Fn(torch.relu), [], lambda s=s, dt=dt: [_x(s, dt)])
        c[f"gelu_{s}"] = (Fn(F.gelu), [], lambda s=s: [_x(s)])
        c[f"leaky_{s}_bf16"] = (Fn(lambda x: F.leaky_relu(x, 0.1)), [],
                                lambda s=s: [_x(s, torch.bfloat16)])
        for d in range(len(s)):
            c[f"sum_{s}_d{d}"] = (Fn(lambda x, d=d: torch.sum(x, dim=d)), [], lambda s=s: [_x(s)])
            c[f"argmax_{s}_d{d}"] = (Fn(lambda x, d=d: torch.argmax(x, dim=d)), [],
                                     lambda s=s: [_x(s)])
            c[f"mean_{s}_d{d}_bf16"] = (Fn(lambda x, d=d: torch.mean(x, dim=d)), [],
                                        lambda s=s: [_x(s, torch.bfloat16)])
            c[f"softmax_{s}_d{d}"] = (Fn(lambda x, d=d: torch.softmax(x, dim=d)), [],
                                      lambda s=s: [_x(s)])
            c[f"log_softmax_{s}_d{d}_bf16"] = (Fn(lambda x, d=d: torch.log_softmax(x, dim=d)), [],
                                               lambda s=s: [_x(s, torch.bfloat16)])
            c[f"cumsum_{s}_d{d}"] = (Fn(lambda x, d=d: torch.cumsum(x, dim=d)), [],
                                     lambda s=s: [_x(s)])
        if len(s) >= 2:
            c[f"layernorm_{s}"] = (nn.LayerNorm, [s[-1]], lambda s=s: [_x(s)])
            c[f"l2_normalize_{s}"] = (Fn(lambda x: x / torch.norm(x, p=2, dim=1, keepdim=True)),
                                      [], lambda s=s: [_x(s)])
            c[f"mse_{s}"] = (Fn(lambda a, b: torch.mean((a - b) ** 2)), [],
                             lambda s=s: [_x(s), _x(s)])
    for rows, cls in ((1, 1), (7, 1000), (1000, 3), (4096, 32768), (65536, 32768)):
        c[f"cross_entropy_{rows}x{cls}"] = (Fn(F.cross_entropy), [], lambda r=rows, k=cls: [
            _x((r, k)), torch.empty((r,), dtype=torch.long, device=META)])
        c[f"cosine_loss_{rows}x{cls}"] = (
            Fn(lambda a, b: torch.mean(1 - F.cosine_similarity(a, b))), [],
            lambda r=rows, k=cls: [_x((r, k)), _x((r, k))])
    # The rest of the families: diagonal and triangular products, Frobenius and RMS
    # normalization, instance norm, other losses.
    for m, k in MATRICES:
        if m * k > 2 ** 31:
            continue
        c[f"diag_left_{m}x{k}"] = (Fn(lambda d, b: torch.diag(d) @ b), [],
                                   lambda m=m, k=k: [_x((m,)), _x((m, k))])
        c[f"triu_{m}x{k}"] = (Fn(lambda a, b: torch.triu(a @ b)), [],
                              lambda m=m, k=k: [_x((m, k)), _x((k, m))])
        c[f"tril_tb_{m}x{k}"] = (Fn(lambda a, b: torch.tril(a @ b.T, diagonal=-1)), [],
                                 lambda m=m, k=k: [_x((m, k)), _x((m, k))])
        c[f"frobenius_{m}x{k}"] = (Fn(lambda x: x / torch.norm(x, p="fro")), [],
                                   lambda m=m, k=k: [_x((m, k))])
        c[f"rmsnorm_{m}x{k}"] = (
            Fn(lambda x: x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)), [],
            lambda m=m, k=k: [_x((m, k))])
        c[f"hinge_{m}x{k}"] = (Fn(lambda p, t: torch.mean(torch.clamp(1 - p * t, min=0))), [],
                               lambda m=m, k=k: [_x((m, k)), _x((m, k))])
        c[f"kl_div_{m}x{k}"] = (
            Fn(lambda p, t: F.kl_div(torch.log(p), t, reduction="batchmean")), [],
            lambda m=m, k=k: [_x((m, k)), _x((m, k))])
    # Channel norms, pooling and convolutions on NC(D)HW shapes.
    images = [(1, 1, 1, 1), (1, 3, 7, 5), (2, 16, 1, 1000), (2, 16, 1000, 1), (16, 64, 256, 256),
              (128, 64, 512, 512), (1, 3, 224, 224)]
    for s in images:
        n, ch, h, w = s
        c[f"batchnorm_eval_{s}"] = (BatchNormEval, [ch], lambda s=s: [_x(s)])
        if h * w > 1:
            c[f"instancenorm_{s}"] = (nn.InstanceNorm2d, [ch], lambda s=s: [_x(s)])
        if ch * h * w > 1 and (ch < 4 or h * w > 1):  # statistics of more than one value
            c[f"groupnorm_{s}"] = (nn.GroupNorm, [1 if ch < 4 else 4, ch], lambda s=s: [_x(s)])
        for k, st, p in ((1, 1, 0), (2, 2, 0), (3, 2, 1)):
            if h + 2 * p >= k and w + 2 * p >= k:
                c[f"maxpool2d_{s}_k{k}s{st}p{p}"] = (nn.MaxPool2d, [k, st, p], lambda s=s: [_x(s)])
                c[f"avgpool2d_{s}_k{k}s{st}p{p}_bf16"] = (nn.AvgPool2d, [k, st, p],
                                                          lambda s=s: [_x(s, torch.bfloat16)])
        for dt in (torch.float32, torch.bfloat16):
            for co, k, st, p, d in ((1, 1, 1, 0, 1), (7, 3, 1, 1, 1),
                                    (128, (5, 3), (2, 1), (2, 0), 1),
                                    (64, 3, 1, (1, 2), (1, 2))):
                (kh, kw), (ph, pw), (dh, dw) = _hw(k), _hw(p), _hw(d)
                if h + 2 * ph < dh * (kh - 1) + 1 or w + 2 * pw < dw * (kw - 1) + 1:
                    continue
                c[f"conv2d_{s}_{co}_{k}_{st}_{p}_{d}_{dt}"] = (
                    nn.Conv2d, [ch, co, k, st, p, d, 1, True, "zeros", None, dt],
                    lambda s=s, dt=dt: [_x(s, dt)])
            if h >= 3 and w >= 3:
                c[f"depthwise_{s}_{dt}"] = (
                    nn.Conv2d, [ch, 2 * ch, 3, 1, 0, 1, ch, False, "zeros", None, dt],
                    lambda s=s, dt=dt: [_x(s, dt)])
            c[f"separable_{s}_{dt}"] = (Separable, [ch, 129, dt], lambda s=s, dt=dt: [_x(s, dt)])
            if ch % 2 == 0:
                c[f"grouped_{s}_{dt}"] = (
                    nn.Conv2d, [ch, ch * 3, 1, 1, 0, 1, 2, True, "zeros", None, dt],
                    lambda s=s, dt=dt: [_x(s, dt)])
        c[f"conv_transpose2d_{s}"] = (nn.ConvTranspose2d, [ch, 5, 3, 2, 1], lambda s=s: [_x(s)])
    for s in ((1, 1, 1), (2, 3, 1000), (16, 64, 131072)):
        c[f"conv1d_{s}"] = (nn.Conv1d, [s[1], 9, 1], lambda s=s: [_x(s)])
        c[f"maxpool1d_{s}"] = (nn.MaxPool1d, [1], lambda s=s: [_x(s)])
    for s in ((1, 1, 1), (2, 3, 1000), (16, 64, 131072)):
        groups = 3 if s[1] % 3 == 0 else 1
        c[f"conv_transpose1d_{s}"] = (nn.ConvTranspose1d, [s[1], 6, 3, 2, 1, 1, groups],
                                      lambda s=s: [_x(s)])
    for s in ((1, 1, 1, 1, 1), (2, 3, 5, 7, 9), (8, 32, 32, 64, 64)):
        c[f"conv3d_{s}"] = (nn.Conv3d, [s[1], 5, 1], lambda s=s: [_x(s)])
        c[f"conv_transpose3d_{s}"] = (nn.ConvTranspose3d, [s[1], 4, (3, 1, 2), (2, 1, 3)],
                                      lambda s=s: [_x(s)])
        c[f"maxpool3d_{s}"] = (nn.MaxPool3d, [1], lambda s=s: [_x(s)])
        c[f"avgpool3d_{s}"] = (nn.AvgPool3d, [1], lambda s=s: [_x(s)])
    # Attention: F.scaled_dot_product_attention over head dims 1-256, lengths 1 to 8192,
    # query and key lengths apart, causal or not, every dtype; the written-out form.
    for b, h, lq, lk, d in ((1, 1, 1, 1, 1), (2, 3, 17, 100, 80), (4, 16, 1024, 1024, 64),
                            (1, 2, 8192, 33, 256), (3, 1, 33, 8192, 128)):
        for dt in FP:
            for causal in (False, True):
                c[f"sdpa_{b}x{h}x{lq}x{lk}x{d}_{causal}_{dt}"] = (
                    Fn(lambda q, k, v, causal=causal: F.scaled_dot_product_attention(
                        q, k, v, is_causal=causal)), [],
                    lambda b=b, h=h, lq=lq, lk=lk, d=d, dt=dt: [
                        _x((b, h, lq, d), dt), _x((b, h, lk, d), dt), _x((b, h, lk, d), dt)])
        c[f"attention_written_{b}x{h}x{lq}x{lk}x{d}"] = (
            Fn(lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1) @ v), [],
            lambda b=b, h=h, lq=lq, lk=lk, d=d: [
                _x((b, h, lq, d)), _x((b, h, lk, d)), _x((b, h, lk, d))])
    return c


CASES = _cases()


class _Launches:
    """Stands in for a Triton kernel: records each launch's grid and arguments."""

    def __init__(self, kernel, log):
        self.kernel = kernel
        fn = getattr(kernel, "fn", kernel)
        while hasattr(fn, "fn"):
            fn = fn.fn
        self.signature = inspect.signature(fn)
        self.name = fn.__name__
        self.log = log

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            options = {k: kwargs.pop(k) for k in ("num_warps", "num_stages", "num_ctas")
                       if k in kwargs}
            bound = self.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            values = dict(bound.arguments)
            g = grid(values) if callable(grid) else grid
            self.log.append((self.name, tuple(g), values, options))
        return launch


def _check_launch(case, source, name, grid, values, options):
    where = f"{case}: kernel {name}"
    for k, v in values.items():
        assert v is not None, f"{where}: argument {k} is None"
    dot = "tl.dot(" in source
    for k, v in values.items():
        if k.startswith("BLOCK") and isinstance(v, int):
            assert v >= 1 and v & (v - 1) == 0, f"{where}: {k}={v} is not a power of two"
            if dot:
                assert v >= 16, f"{where}: {k}={v} below tl.dot's 16"
    w = options.get("num_warps", 4)
    assert w in (1, 2, 4, 8, 16, 32), f"{where}: num_warps={w}"
    g = tuple(int(x) for x in grid) + (1,) * (3 - len(grid))
    assert all(x >= 1 for x in g), f"{where}: grid {g}"
    assert g[0] <= 2 ** 31 - 1 and g[1] <= 65535 and g[2] <= 65535, \
        f"{where}: grid {g} over CUDA's limits"


def _render_all(sigs, arch):
    """The first kernels of `sigs` (one batch call): {"source": ...} or {"error": ...} each."""
    args = [BINARY, "--first-kernel", "132", "--batch"] + (["--arch", arch] if arch else [])
    r = subprocess.run(args, input=json.dumps(sigs), capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def _signature(name):
    cls, init, make_inputs = CASES[name]
    with torch.device(META):
        model = cls(*init)
    inputs = make_inputs()
    with torch.no_grad():
        ref = model(*inputs)
    return inputs, ref, record(model, inputs)


@pytest.fixture(scope="module")
def signatures():
    return {n: _signature(n) for n in CASES}


_MODULES = {}


def _template_id(source):
    return source.split("\n", 1)[0].split(": ")[-1]


def _check_sm90_inputs(source, inputs, ref):
    """The SM90 modules' checks (their cpp_sources): A (M, K) or (L, M, K) and B (K, N) or
    (L, K, N) after the forward's views, the output A @ B's shape. gemm_sm90_tf32x3: fp32,
    any strides, EPILOGUE tma needs N a multiple of 4. gemm_sm90_bf16: the compiled DTYPE,
    and the compiled layouts those of the operands (K- or M-contiguous A, N- or
    K-contiguous B: another layout is read correctly, through a copy each call, which the
    rules must not cause)."""
    a_expr, b_expr = re.search(r"\n        A, B = (.+), (.+)\n", source).groups()
    a, b = (eval(e, {}, {"A": inputs[0], "B": inputs[1]})  # noqa: S307 - our render
            for e in (a_expr, b_expr))
    if a.dim() > 3 and b.dim() == 2:  # the forward makes one batch of A's leading dims
        a = a.reshape(-1, a.shape[-2], a.shape[-1])
        ref = ref.reshape(-1, ref.shape[-2], ref.shape[-1])
    if _template_id(source) == "gemm_sm90_bf16":
        dtype = re.search(r'constexpr char kDtype\[\] = "(\w+)";', source).group(1)
        assert a.dtype == b.dtype == getattr(torch, dtype), \
            f"rendered DTYPE {dtype} for {a.dtype} @ {b.dtype}"
        for name, t, expr, plain_unit in (("A", a, a_expr, -1), ("B", b, b_expr, -1)):
            unit = plain_unit if len(expr) == 1 else -2
            assert t.stride(unit) == 1 or t.shape[unit] == 1, \
                f"{name}_EXPR {expr} compiles dim {unit} contiguous, the operand's strides " \
                f"are {t.stride()}"
    else:
        assert a.dtype == b.dtype == torch.float32, f"rendered for {a.dtype} @ {b.dtype}"
        if 'kEpilogue[] = "tma"' in source:
            assert b.shape[-1] % 4 == 0, f"EPILOGUE tma rendered for N={b.shape[-1]}"
    assert a.dim() in (2, 3) and b.dim() in (2, 3) and b.dim() <= a.dim(), \
        f"rendered for {tuple(a.shape)} @ {tuple(b.shape)}"
    assert a.shape[-1] == b.shape[-2], f"inner dims differ: {tuple(a.shape)} @ {tuple(b.shape)}"
    assert b.dim() == 2 or a.shape[0] == b.shape[0], "batch sizes differ"
    assert tuple(ref.shape) == tuple(torch.matmul(a.to("meta"), b.to("meta")).shape), \
        "not A @ B"


def _conv_candidate(source, name):
    """The rendered CUDA convolution module's ModelNew, built on the meta device with the
    extension's stand-in (conv_cutlass_double.py: the C++ wrappers' checks, the
    convolution's shape) in place of its nvcc build; modules are kept by source."""
    from unittest import mock

    import torch.utils.cpp_extension as cpp_extension
    from conv_cutlass_double import fake_load_inline
    with mock.patch.object(cpp_extension, "load_inline", fake_load_inline):
        mod = _MODULES.get(source) or exec_source(source, name)
    _MODULES[source] = mod
    with torch.device(META):
        return mod.ModelNew()


def _check_conv_output(cand, inputs, ref):
    """The candidate's output on the meta inputs has the reference's shape and dtype."""
    with torch.no_grad():
        out = cand(*inputs)
    assert out.shape == ref.shape and out.dtype == ref.dtype, \
        f"output {tuple(out.shape)} {out.dtype}, the reference's {tuple(ref.shape)} {ref.dtype}"


def _check_conv_cutlass(source, inputs, ref):
    """A CUTLASS convolution module (conv_cutlass_fprop, conv_sm90_fprop) on meta tensors with the extension's stand-in:
    the layer, permutes and geometry the rules rendered must give the reference's output,
    and the channel counts must take the rendered access width (CUTLASS's can_implement)."""
    cand = _conv_candidate(source, "grid_conv_cutlass")
    align = int(re.search(r"constexpr int kAlign(?:ment)? = (\d+);", source).group(1))
    conv = cand.conv
    padded = "#define KAGENT_PAD_CHANNELS_True 1" in source  # C zero-padded to ALIGN
    assert not padded or (conv.in_channels < align and len(conv.kernel_size) <= 2), \
        f"PAD_CHANNELS for {conv.in_channels} channels at ALIGN {align}, " \
        f"{len(conv.kernel_size)}-D (fixed-channels iterators: fewer channels, 2-D)"
    assert (padded or conv.in_channels % align == 0) and conv.out_channels % align == 0, \
        f"ALIGN {align} for {conv.in_channels} -> {conv.out_channels} channels"
    assert max(conv.kernel_size) <= 32, f"kernel {conv.kernel_size} (CUTLASS's iterator: 32)"
    assert inputs[0].dtype == ref.dtype, f"rendered for {inputs[0].dtype} -> {ref.dtype}"
    _check_conv_output(cand, inputs, ref)


def _check_conv_pointwise(source, inputs, ref):
    """conv_pointwise_gemm's module on meta tensors with the extension's stand-in: the layer
    the rules rendered must be pointwise (the module refuses others when it is built), its
    ALIGN must divide the input channels and the pixels (CUTLASS's can_implement), and the
    output must be the reference's."""
    cand = _conv_candidate(source, "grid_conv_pointwise")
    align = int(re.search(r"constexpr int kAlign = (\d+);", source).group(1))
    x = inputs[0]
    pixels = math.prod(x.shape[2:])
    assert x.shape[1] % align == 0 and pixels % align == 0, \
        f"ALIGN {align} for {x.shape[1]} channels and {pixels} pixels"
    assert x.dtype == ref.dtype == torch.float32, f"rendered for {x.dtype} -> {ref.dtype}"
    _check_conv_output(cand, inputs, ref)


def _check_cuda_inputs(template_id, source, inputs, ref):
    """A CUDA C++ template's module builds with nvcc at import, so it is not built here
    (test_gemm_cutlass.py, test_gemm_sm90.py and test_gemm_sm90_bf16.py check its text, compile_cuda_templates.py
    compiles it): what the rules render it for must be what the module takes."""
    if template_id in ("gemm_sm90_tf32x3", "gemm_sm90_bf16"):
        _check_sm90_inputs(source, inputs, ref)
        return
    if template_id in ("conv_cutlass_fprop", "conv_sm90_fprop"):
        _check_conv_cutlass(source, inputs, ref)
        return
    if template_id == "conv_pointwise_gemm":
        _check_conv_pointwise(source, inputs, ref)
        return
    assert template_id == "gemm_cutlass_tf32x3", f"no input check for CUDA template {template_id}"
    # The forward's operands (A.mT / B.mT where the layout is compiled column-major).
    a_expr, b_expr = re.search(r"\n        A, B = (.+), (.+)\n", source).groups()
    a, b = (eval(e, {}, {"A": inputs[0], "B": inputs[1]})  # noqa: S307 - our render
            for e in (a_expr, b_expr))
    triangle = re.search(r'constexpr char kTriangle\[\] = "(\w+)";', source).group(1)
    if a.dim() > 2 and b.dim() == 2:  # the forward folds A's rows (a contiguous view)
        assert a.is_contiguous() and triangle == "none", \
            "rendered for a non-contiguous 3-D A, or a triangle of a folded product"
        ref = ref.reshape(-1, ref.shape[-1])
        a = a.reshape(-1, a.shape[-1])
    assert a.dim() == b.dim() and a.dim() in (2, 3) and a.dtype == b.dtype == torch.float32, \
        f"rendered for {a.dtype} {tuple(a.shape)} @ {b.dtype} {tuple(b.shape)}"
    # The module's checks: each operand contiguous in its compiled layout, 16-byte accesses.
    a_store = a.mT if a_expr != "A" else a
    b_store = b.mT if b_expr != "B" else b
    assert a_store.is_contiguous() and b_store.is_contiguous(), \
        f"rendered {a_expr}, {b_expr} for operands of strides {a.stride()}, {b.stride()}"
    assert a_store.shape[-1] % 4 == 0 and b_store.shape[-1] % 4 == 0 and b.shape[-1] % 4 == 0, \
        f"rendered for contiguous dims {a_store.shape[-1]}, {b_store.shape[-1]}, " \
        f"N={b.shape[-1]} (multiples of 4 only)"
    assert tuple(ref.shape) == tuple(torch.matmul(a.to("meta"), b.to("meta")).shape), \
        "not A @ B"


def _check_rendered(signatures, names, rendered, refusals=()):
    """Builds and runs (on meta tensors, kernels recorded) every rendered candidate; returns
    the failures. An error whose status starts with one of `refusals` is accepted."""
    failures = []
    for case, r in zip(names, rendered):
        inputs, ref, _ = signatures[case]
        init = CASES[case][1]
        try:
            if "source" not in r and r["error"].startswith(tuple(refusals) or ("-",)):
                continue
            assert "source" in r, f"refused: {r.get('error')}"
            source = r["source"]
            _SEEN.add(_template_id(source))
            if load_meta(_template_id(source)).get("language", "triton") != "triton":
                _check_cuda_inputs(_template_id(source), source, inputs, ref)
                continue
            mod = _MODULES.get(source)
            if mod is None:
                mod = _MODULES[source] = exec_source(source, "grid_candidate")
            log = []
            patched = {k: _Launches(v, log) for k, v in vars(mod).items()
                       if type(v).__name__ in ("JITFunction", "InterpretedFunction",
                                               "Autotuner", "Heuristics")}
            saved = {k: getattr(mod, k) for k in patched}
            try:
                vars(mod).update(patched)
                with torch.device(META):
                    cand = mod.ModelNew(*init)
                with torch.no_grad():
                    out = cand(*inputs)
            finally:
                vars(mod).update(saved)
            assert out.shape == ref.shape and out.dtype == ref.dtype, \
                f"output {tuple(out.shape)} {out.dtype}, the reference's " \
                f"{tuple(ref.shape)} {ref.dtype}"
            assert log or out.numel() == 0, "no kernel launched"
            for name, grid, values, options in log:
                _check_launch(case, source, name, grid, values, options)
        except Exception as e:  # noqa: BLE001 - collect every broken case, then fail once
            where = _template_id(r["source"]) if "source" in r else "-"
            failures.append(f"{case} ({where}): {type(e).__name__}: {e}"[:400])
    return failures


_SEEN = set()
_FIRST = {}


# An unknown GPU (the CPU worker's) and an H200's arch: the rules size tiles by both.
@pytest.mark.parametrize("arch", ["", "sm_90"])
def test_every_first_kernel_launches_within_the_templates_assumptions(signatures, arch):
    names = sorted(signatures)
    rendered = _render_all([signatures[n][2] for n in names], arch)
    _FIRST.update({n: _template_id(r["source"]) for n, r in zip(names, rendered) if "source" in r})
    failures = _check_rendered(signatures, names, rendered)
    assert not failures, f"{len(failures)} of {len(names)} cases:\n" + "\n".join(failures)


def test_every_template_of_the_class_renders_within_its_assumptions(signatures):
    # The other templates of each case's op class, as a template_switch renders them on
    # sm_90: a stated condition of use may refuse (FAILED_PRECONDITION), anything rendered
    # must launch within the template's assumptions.
    if not _FIRST:
        pytest.skip("the first-kernel tests did not run")
    ids = subprocess.run([BINARY, "--list"], capture_output=True, text=True,
                         check=True).stdout.split()
    op_class = {i: load_meta(i)["op_class"] for i in ids}
    failures, total = [], 0
    for tid in ids:
        names = sorted(n for n, first in _FIRST.items()
                       if op_class.get(first) == op_class[tid] and first != tid)
        if not names:
            continue
        args = [BINARY, "--first-kernel", "132", "--arch", "sm_90", "--template", tid, "--batch"]
        r = subprocess.run(args, input=json.dumps([signatures[n][2] for n in names]),
                           capture_output=True, text=True, check=True)
        total += len(names)
        failures += _check_rendered(signatures, names, json.loads(r.stdout),
                                    refusals=("FAILED_PRECONDITION",))
    assert not failures, f"{len(failures)} of {total} renders:\n" + "\n".join(failures)


def test_the_grid_reaches_every_template():
    # After the tests above (pytest runs a file's tests in order): a family that no case
    # reaches is a family whose rule this file does not check; add cases for it.
    if not _SEEN:
        pytest.skip("the grid tests did not run")
    ids = subprocess.run([BINARY, "--list"], capture_output=True, text=True,
                         check=True).stdout.split()
    assert sorted(set(ids) - _SEEN) == []
