"""gemm_persistent_tma against torch under the Triton interpreter: the tensor-descriptor
(TMA) path and the pointer fallback, edge tiles, transposed operands, fp32 and bf16, and
more tiles than programs (the CPU "SM count" is 4), so the persistent loop iterates."""
import pytest
import torch

from template_render import load_model_new

SMALL = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=2)


class _Spy:
    """Stands in for the jitted kernel: records each launch's grid and constexprs."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, []

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.calls.append((grid, kwargs))
            return self.kernel[grid](*args, **kwargs)
        return launch


def _model(**params):
    cls = load_model_new("gemm_persistent_tma", **dict(SMALL, **params))
    g = cls.forward.__globals__
    spy = _Spy(g["gemm_persistent_kernel"])
    g["gemm_persistent_kernel"] = spy
    return cls(), spy


@pytest.mark.parametrize("M,N,K,tma", [
    (64, 96, 48, True),     # 2 x 3 ... 4 x 3 = 12 tiles over 4 programs, K a multiple of BLOCK_K
    (100, 72, 40, True),    # edge tiles in M and N, K not a multiple of BLOCK_K; TMA clips
    (5, 8, 20, True),       # M and N smaller than one tile
    (33, 17, 40, False),    # N * 4 bytes not a multiple of 16: pointer fallback
    (1, 1, 1, False),
    (70, 130, 33, False),   # K * 4 bytes unaligned: A cannot back a descriptor
])
def test_fp32(M, N, K, tma):
    torch.manual_seed(0)
    A, B = torch.randn(M, K), torch.randn(K, N)
    model, spy = _model()
    out = model(A, B)
    torch.testing.assert_close(out, A @ B, atol=1e-4, rtol=1e-4)
    (grid, kw), = spy.calls
    tiles = -(-M // 16) * -(-N // 32)
    assert grid == (min(4, tiles),)
    assert kw["USE_TMA"] is tma


def test_persistent_loop_covers_every_tile_once():
    # 9 x 5 = 45 tiles over 4 programs (11-12 tiles each) with GROUP_M 4 row groups that
    # do not divide the 9 row tiles; a tile visited twice or never would show.
    torch.manual_seed(1)
    A, B = torch.randn(136, 64), torch.randn(64, 160)
    model, spy = _model(GROUP_M=4)
    torch.testing.assert_close(model(A, B), A @ B, atol=1e-4, rtol=1e-4)
    assert spy.calls[0][0] == (4,)


@pytest.mark.parametrize("a_expr,b_expr", [("A.mT", "B"), ("A", "B.t()"), ("A.t()", "B.mT")])
def test_transposed_operands_use_descriptors_on_storage_order(a_expr, b_expr):
    torch.manual_seed(2)
    M, N, K = 48, 40, 56
    A = torch.randn(K, M) if a_expr != "A" else torch.randn(M, K)
    B = torch.randn(N, K) if b_expr != "B" else torch.randn(K, N)
    model, spy = _model(A_EXPR=a_expr, B_EXPR=b_expr)
    ref = (A.T if a_expr != "A" else A) @ (B.T if b_expr != "B" else B)
    torch.testing.assert_close(model(A, B), ref, atol=1e-4, rtol=1e-4)
    kw = spy.calls[0][1]
    assert kw["USE_TMA"] and kw["A_COL"] == (a_expr != "A") and kw["B_COL"] == (b_expr != "B")


def test_transposed_unaligned_falls_back():
    torch.manual_seed(3)
    A, B = torch.randn(21, 30), torch.randn(21, 13)  # A.T @ B, 30 * 4 bytes unaligned
    model, spy = _model(A_EXPR="A.t()")
    torch.testing.assert_close(model(A, B), A.T @ B, atol=1e-4, rtol=1e-4)
    assert spy.calls[0][1]["USE_TMA"] is False


@pytest.mark.parametrize("M,N,K,tma", [(96, 136, 72, True), (40, 50, 30, False)])
def test_bf16(M, N, K, tma):
    torch.manual_seed(4)
    A = torch.randn(M, K, dtype=torch.bfloat16)
    B = torch.randn(K, N, dtype=torch.bfloat16)
    model, spy = _model(BLOCK_K=32)
    out = model(A, B)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), A.float() @ B.float(), atol=5e-2, rtol=2e-2)
    assert spy.calls[0][1]["USE_TMA"] is tma


def test_noncontiguous_and_mixed_dtype():
    torch.manual_seed(5)
    A = torch.randn(40, 64)[:, ::2]  # (40, 32), stride (64, 2): pointer path
    B = torch.randn(32, 24, dtype=torch.bfloat16)  # promoted to fp32
    model, spy = _model()
    out = model(A, B)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, A @ B.float(), atol=1e-4, rtol=1e-4)
    assert spy.calls[0][1]["USE_TMA"] is False


def test_refuses_batched():
    model, _ = _model()
    with pytest.raises(ValueError, match="2-D only"):
        model(torch.randn(2, 8, 8), torch.randn(2, 8, 8))
