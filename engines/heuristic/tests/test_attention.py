"""attention_online under Triton's interpreter against F.scaled_dot_product_attention:
head dims 16 to 256 (80: padded to 128 with masking; 256 and 96 also in chunks of the
head dim and of the value dim), lengths 1, 17, 100 with the query and key lengths apart
(causal both ways: top-left triangle), broadcast leading dims, K given transposed, an
explicit scale; fp32 at 1e-4, bf16 / fp16 at 1e-2."""
import pytest
import torch
import torch.nn.functional as F

from template_render import load_model_new


def _check(q, k, v, causal, scale=None, k_expr="K", atol=None, **blocks):
    params = dict(CAUSAL=str(causal), K_EXPR=k_expr, **blocks)
    if scale is not None:
        params["SCALE"] = scale
    model = load_model_new("attention_online", **params)()
    out = model(q, k.mT if k_expr == "K.mT" else k, v)
    ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal,
                                         scale=scale)
    tol = atol or (1e-4 if q.dtype == torch.float32 else 1e-2)
    assert out.dtype == q.dtype and out.shape == ref.shape
    torch.testing.assert_close(out.float(), ref, atol=tol, rtol=tol)


@pytest.mark.parametrize("d", [16, 64, 80, 128, 256])
@pytest.mark.parametrize("lq,lk", [(17, 17), (1, 100), (100, 17)])
@pytest.mark.parametrize("causal", [False, True])
def test_fp32_head_dims_and_lengths(d, lq, lk, causal):
    torch.manual_seed(d + lq + lk)
    q, k, v = torch.randn(2, lq, d), torch.randn(2, lk, d), torch.randn(2, lk, d)
    _check(q, k, v, causal, BLOCK_M=32, BLOCK_N=32, BLOCK_D=256, BLOCK_DV=256)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("d,lq,lk,causal", [(64, 17, 100, True), (80, 100, 17, True),
                                            (128, 1, 17, False), (256, 17, 17, True)])
def test_16bit(dtype, d, lq, lk, causal):
    torch.manual_seed(d)
    q = torch.randn(1, 2, lq, d, dtype=dtype)
    k = torch.randn(1, 2, lk, d, dtype=dtype)
    v = torch.randn(1, 2, lk, d, dtype=dtype)
    _check(q, k, v, causal, BLOCK_M=32, BLOCK_N=16, BLOCK_D=256, BLOCK_DV=256)


@pytest.mark.parametrize("causal", [False, True])
def test_head_dim_in_chunks_and_split_value_columns(causal):
    # D = 96 in three chunks of 32, DV = 40 over 3 programs
    # of 16 columns; 33 queries and 50 keys in blocks of 16.
    torch.manual_seed(1)
    q, k, v = torch.randn(1, 3, 33, 96), torch.randn(1, 3, 50, 96), torch.randn(1, 3, 50, 40)
    _check(q, k, v, causal, BLOCK_M=16, BLOCK_N=16, BLOCK_D=32, BLOCK_DV=16)
    d = 300  # over 256: chunks of 64, the last one partial
    q, k, v = torch.randn(1, 5, d), torch.randn(1, 7, d), torch.randn(1, 7, 20)
    _check(q, k, v, causal, BLOCK_M=16, BLOCK_N=16, BLOCK_D=64, BLOCK_DV=16)


def test_broadcast_heads_transposed_k_and_scale():
    torch.manual_seed(2)
    q = torch.randn(2, 3, 19, 32)
    k = torch.randn(2, 1, 23, 32)  # one K / V head for all three query heads
    v = torch.randn(1, 1, 23, 24)
    _check(q, k, v, False, scale=0.3, k_expr="K.mT", BLOCK_M=16, BLOCK_N=16)
    _check(q, k, v, True, scale=1.7, BLOCK_M=16, BLOCK_N=32)


def test_non_contiguous_inputs():
    torch.manual_seed(3)
    q = torch.randn(2, 21, 4, 48).transpose(1, 2)  # (B, L, H, D) storage
    k = torch.randn(2, 30, 4, 48).transpose(1, 2)
    v = torch.randn(2, 30, 4, 48).transpose(1, 2)
    _check(q, k, v, True, BLOCK_M=16, BLOCK_N=16)


def test_large_scores_stay_finite():
    # Scores around +-1e3: the running max keeps exp2 in range.
    torch.manual_seed(4)
    q, k, v = torch.randn(1, 40, 16) * 30, torch.randn(1, 70, 16) * 30, torch.randn(1, 70, 16)
    _check(q, k, v, False, scale=1.0, BLOCK_M=16, BLOCK_N=16)


def test_mismatched_shapes_are_refused():
    model = load_model_new("attention_online")()
    with pytest.raises(ValueError, match="do not match"):
        model(torch.randn(1, 4, 16), torch.randn(1, 5, 8), torch.randn(1, 5, 16))
