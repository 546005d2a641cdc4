"""A CPU stand-in for the nvcc-built extension of the CUTLASS convolution templates
(conv_cutlass_fprop, conv_sm90_fprop: partials/conv_channels_last_*), for tests only: the
rendered module's Python (its layer, the channels-last permutes, the geometry it passes,
the view it returns) runs on the CPU or the meta device while `conv` computes what the
CUDA kernel computes, with the C++ wrapper's checks. The real extensions are compiled by
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


def fake_load_inline(**kwargs):
    """load_inline's stand-in: checks what the module asks to build, returns `conv`."""
    assert kwargs["functions"] == ["conv"], kwargs["functions"]
    assert "const char* kagent_conv_fprop(" in kwargs["cuda_sources"]
    return types.SimpleNamespace(conv=conv)


def exec_module(source, monkeypatch):
    """The rendered module executed with the stand-in in place of load_inline."""
    import torch.utils.cpp_extension as cpp_extension

    from template_render import exec_source
    monkeypatch.setattr(cpp_extension, "load_inline", fake_load_inline)
    return exec_source(source, "conv_cutlass_candidate")
