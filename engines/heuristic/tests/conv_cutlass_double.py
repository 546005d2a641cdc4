"""A CPU stand-in for the nvcc-built extension of the CUTLASS convolution templates
(conv_cutlass_fprop, conv_sm90_fprop: partials/conv_channels_last_*; conv_pointwise_gemm),
for tests only: the rendered module's Python (its layer, the channels-last permutes or the
(N, C, P) view, the geometry it passes, the result it returns) runs on the CPU or the meta
device while `conv` and `pointwise` compute what the CUDA kernels compute, with the C++
wrappers' checks. The real extensions are compiled by
compile_cuda_templates.py and run on a GPU by tests/gpu/conv_cutlass_check.py and
conv_sweep.py."""
import types

import torch
import torch.nn.functional as F


def conv(x, w, bias, geometry):
    """The wrapper's contract (cpp_source): x (N, D, H, W, C) and w (K, T, R, S, C)
    contiguous of one dtype, geometry pad_d/h/w, stride_d/h/w, dil_d/h/w; returns y (N, Z,
    P, Q, K) contiguous. Computed in float64 (fp32 accumulation's stand-in) and rounded
    once to the dtype, as the epilogue does."""
    assert x.dim() == 5 and w.dim() == 5 and x.shape[4] == w.shape[4], (x.shape, w.shape)
    assert len(geometry) == 9 and all(isinstance(v, int) for v in geometry), geometry
    assert x.dtype == w.dtype, (x.dtype, w.dtype)
    assert x.is_contiguous() and w.is_contiguous(), "x and w must be contiguous"
    if bias is not None:
        assert bias.is_contiguous() and bias.numel() == w.shape[0] and bias.dtype == x.dtype
    pad, stride, dil = geometry[0:3], geometry[3:6], geometry[6:9]
    compute = torch.float64 if x.device.type != "meta" else x.dtype
    y = F.conv3d(x.permute(0, 4, 1, 2, 3).to(compute), w.permute(0, 4, 1, 2, 3).to(compute),
                 None if bias is None else bias.to(compute), stride, pad, dil)
    return y.permute(0, 2, 3, 4, 1).contiguous().to(x.dtype)


def pointwise(x, w, bias):
    """conv_pointwise_gemm's wrapper: x (N, C, P) and w (K, C) contiguous fp32, P and C
    multiples of the render's ALIGN (checked by the caller's test); returns y (N, K, P)
    contiguous [+ bias along K]. Computed in float64 and rounded once to fp32."""
    assert x.dim() == 3 and w.dim() == 2 and x.shape[1] == w.shape[1], (x.shape, w.shape)
    assert x.dtype == torch.float32 and w.dtype == torch.float32, (x.dtype, w.dtype)
    assert x.is_contiguous() and w.is_contiguous(), "x and w must be contiguous"
    compute = torch.float64 if x.device.type != "meta" else x.dtype
    y = torch.matmul(w.to(compute), x.to(compute)).to(x.dtype)
    if bias is not None:
        assert bias.numel() == w.shape[0] and bias.dtype == torch.float32
        y = y + bias.reshape(1, -1, 1)
    return y.contiguous()


# Each extension function the templates build (looked up at load time, so that a test may
# replace it), and the CUDA entry point its source defines.
_ENTRIES = {"conv": "const char* kagent_conv_fprop(",
            "pointwise": "const char* kagent_pointwise_gemm("}


def fake_load_inline(**kwargs):
    """load_inline's stand-in: checks what the module asks to build, returns its function
    (`conv` or `pointwise`)."""
    names = kwargs["functions"]
    assert len(names) == 1 and names[0] in _ENTRIES, names
    assert _ENTRIES[names[0]] in kwargs["cuda_sources"], _ENTRIES[names[0]]
    return types.SimpleNamespace(**{names[0]: globals()[names[0]]})


def exec_module(source, monkeypatch):
    """The rendered module executed with the stand-in in place of load_inline."""
    import torch.utils.cpp_extension as cpp_extension

    from template_render import exec_source
    monkeypatch.setattr(cpp_extension, "load_inline", fake_load_inline)
    return exec_source(source, "conv_cutlass_candidate")
