import pytest
import torch

from template_render import load_model_new

SMALL = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)


@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (33, 17, 40), (64, 32, 16)])
def test_gemm_tiled_2d(M, N, K):
    torch.manual_seed(0)
    A, B = torch.randn(M, K), torch.randn(K, N)
    out = load_model_new("gemm_tiled", **SMALL)()(A, B)
    torch.testing.assert_close(out, A @ B, atol=1e-4, rtol=1e-4)


def test_gemm_tiled_batched_broadcast_and_transposed():
    torch.manual_seed(1)
    A, B = torch.randn(3, 20, 18), torch.randn(3, 18, 21)
    model = load_model_new("gemm_tiled", **SMALL)()
    torch.testing.assert_close(model(A, B), torch.bmm(A, B), atol=1e-4, rtol=1e-4)
    # (b, M, K) @ (K, N) folded into one GEMM; 4-D batched.
    W = torch.randn(18, 5)
    torch.testing.assert_close(model(A, W), A @ W, atol=1e-4, rtol=1e-4)
    A4, B4 = torch.randn(2, 2, 9, 7), torch.randn(2, 2, 7, 3)
    torch.testing.assert_close(model(A4, B4), A4 @ B4, atol=1e-4, rtol=1e-4)
    # Reference computes A.T @ B.T: the forward receives the untransposed tensors.
    At, Bt = torch.randn(18, 20), torch.randn(21, 18)
    mt = load_model_new("gemm_tiled", A_EXPR="A.mT", B_EXPR="B.mT", **SMALL)()
    torch.testing.assert_close(mt(At, Bt), At.T @ Bt.T, atol=1e-4, rtol=1e-4)


def test_gemm_tiled_bf16_noncontiguous():
    torch.manual_seed(2)
    A = torch.randn(40, 50, dtype=torch.bfloat16)[:, ::2]  # (40, 25), stride (50, 2)
    B = torch.randn(25, 19, dtype=torch.bfloat16)
    out = load_model_new("gemm_tiled", **SMALL)()(A, B)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), A.float() @ B.float(), atol=5e-2, rtol=2e-2)


@pytest.mark.parametrize("M,N,K,split", [(1, 1, 1, 1), (17, 9, 100, 3), (32, 16, 256, 4)])
def test_gemm_split_k(M, N, K, split):
    torch.manual_seed(3)
    A, B = torch.randn(M, K), torch.randn(K, N)
    out = load_model_new("gemm_split_k", SPLIT_K=split, **SMALL)()(A, B)
    torch.testing.assert_close(out, A @ B, atol=1e-4, rtol=1e-4)


def test_gemm_split_k_transposed_a():
    A, B = torch.randn(64, 12), torch.randn(64, 10)
    out = load_model_new("gemm_split_k", A_EXPR="A.t()", SPLIT_K=2, **SMALL)()(A, B)
    torch.testing.assert_close(out, A.t() @ B, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("shape", [(1, 1), (37, 53), (128, 20)])
def test_gemm_diag_awkward_shapes_and_strides(side, shape):
    # diag(d) @ B / B @ diag(d) as a scaling: sizes off the block, one element, B
    # transposed (non-contiguous), either argument order in forward.
    torch.manual_seed(0)
    R, C = shape
    model = load_model_new("gemm_diag", SIDE=side, BLOCK_R=16, BLOCK_C=32, num_warps=4)()
    B = torch.randn(C, R).t()
    d = torch.randn(R if side == "left" else C)
    ref = torch.diag(d) @ B if side == "left" else B @ torch.diag(d)
    torch.testing.assert_close(model(d, B), ref, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(model(B, d), ref, atol=1e-6, rtol=1e-6)
    with pytest.raises(ValueError, match="does not match"):
        model(torch.randn(R + C + 1), B)
