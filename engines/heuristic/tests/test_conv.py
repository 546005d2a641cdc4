import pytest
import torch
import torch.nn as nn

from template_render import load_model_new

SMALL = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)


def _run(x, ctor, kw, params, ref_kw=None):
    """Reference nn.Conv2d and the candidate built with the same seed (the harness's way)."""
    torch.manual_seed(123)
    ref = nn.Conv2d(*ctor, **(kw if ref_kw is None else ref_kw))
    torch.manual_seed(123)
    cand = load_model_new("conv2d_implicit_gemm", **dict(SMALL, **params))(*ctor, **kw)
    assert torch.equal(cand.conv.weight, ref.weight)
    r, out = ref(x), cand(x)
    assert out.shape == r.shape and out.dtype == r.dtype
    return r, out


@pytest.mark.parametrize("shape,ctor,kw", [
    ((2, 5, 9, 11), (5, 7, 3), dict(padding=1, bias=False)),        # odd channels, ragged tiles
    ((1, 3, 8, 8), (3, 20, 3, 2, 1, 1, 1, False), {}),              # stride 2, all positional
    ((2, 17, 7, 6), (17, 4, (3, 2)), dict(dilation=2, bias=True)),  # non-square, dilation, bias
    ((1, 1, 1, 1), (1, 1, 1), dict(bias=True)),                     # 1x1 everything
    ((1, 2, 5, 4), (2, 3, 3, 1, 2), dict(bias=False)),              # padding larger than needed
])
def test_conv2d(shape, ctor, kw):
    torch.manual_seed(0)
    x = torch.randn(*shape)
    ref, out = _run(x, ctor, kw, {})
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_conv2d_shape_params_when_constructor_omits_them():
    # problems/35: Model(in, out, k) with padding k // 2 and no bias inside the model: the
    # brain infers PADDING/BIAS from the recorded shapes and the template uses them.
    x = torch.randn(1, 4, 6, 5)
    ref, out = _run(x, (4, 6, 3), {}, dict(PADDING=1, BIAS="True", STRIDE=2),
                    ref_kw=dict(padding=1, bias=True, stride=2))
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)


def test_conv2d_noncontiguous_bf16_and_groups_refused():
    x = torch.randn(2, 6, 7, 16).permute(0, 3, 1, 2)  # (2, 16, 6, 7) channels-last strides
    ref, out = _run(x, (16, 8, 3), dict(padding=1), dict(BIAS="True"))  # nn.Conv2d's default bias
    torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    xb = torch.randn(1, 8, 5, 6, dtype=torch.bfloat16)
    torch.manual_seed(5)
    cand = load_model_new("conv2d_implicit_gemm", **SMALL)(8, 5, 3).to(torch.bfloat16)
    out = cand(xb)
    assert out.dtype == torch.bfloat16
    ref = nn.functional.conv2d(xb.float(), cand.conv.weight.float())
    torch.testing.assert_close(out.float(), ref, atol=5e-2, rtol=2e-2)
    with pytest.raises(NotImplementedError):
        load_model_new("conv2d_implicit_gemm")(8, 8, 3, groups=8)


def test_conv2d_64bit_offsets_path():
    # The 64-bit offset path (tensors of 2**31+ elements) on a small problem: forced.
    x = torch.randn(2, 3, 7, 6)
    torch.manual_seed(9)
    cand = load_model_new("conv2d_implicit_gemm", **SMALL)(3, 5, 3, 2, 1, 1, 1, True)
    cand.forward.__globals__["_INT64_FROM"] = 0
    torch.manual_seed(9)
    ref = nn.Conv2d(3, 5, 3, 2, 1, 1, 1, True)
    torch.testing.assert_close(cand(x), ref(x), atol=1e-4, rtol=1e-4)
