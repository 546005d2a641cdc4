import pytest
import torch

from template_render import load_model_new


def _check(model, A, B, atol, rtol):
    ref = torch.matmul(A.float(), B.float()).to(torch.promote_types(A.dtype, B.dtype))
    out = model(A, B)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out.float(), ref.float(), atol=atol, rtol=rtol)


CASES = [
    # template, params
    ("matvec_row_per_program", dict(BLOCK_K=64)),
    ("matvec_multi_row", dict(BLOCK_M=4, BLOCK_K=32)),
    ("matvec_multi_row", dict(BLOCK_M=32, BLOCK_K=512)),
    ("matvec_split_k", dict(BLOCK_M=2, BLOCK_K=64, SPLIT_K=4)),
    ("matvec_split_k", dict(BLOCK_M=1, BLOCK_K=64, SPLIT_K=16)),
]


@pytest.mark.parametrize("tid,params", CASES)
@pytest.mark.parametrize("M,K", [(1, 1), (37, 300), (64, 256), (5, 1000)])
def test_matvec_fp32(tid, params, M, K):
    torch.manual_seed(0)
    A = torch.randn(M, K)
    B = torch.randn(K, 1)
    _check(load_model_new(tid, **params)(), A, B, 1e-4, 1e-4)


@pytest.mark.parametrize("tid,params", CASES)
def test_matvec_bf16_vector_and_transposed(tid, params):
    torch.manual_seed(1)
    A = torch.randn(70, 33, dtype=torch.bfloat16)  # forward computes A.t() @ x
    x = torch.randn(70, dtype=torch.bfloat16)
    model = load_model_new(tid, A_EXPR="A.t()", **params)()
    ref = torch.matmul(A.t().float(), x.float())
    out = model(A, x)
    assert out.shape == (33,) and out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)


def test_matvec_noncontiguous_x():
    A = torch.randn(9, 130)
    X = torch.randn(130, 3)
    x = X[:, 1:2]  # stride (3, 1)
    _check(load_model_new("matvec_split_k", BLOCK_K=64, SPLIT_K=3)(), A, x, 1e-4, 1e-4)
