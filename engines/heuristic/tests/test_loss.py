import pytest
import torch
import torch.nn.functional as F

from template_render import load_model_new

REFS = {
    "mse": lambda p, t: torch.mean((p - t) ** 2),
    "smooth_l1": lambda p, t: F.smooth_l1_loss(p, t),
    "huber": lambda p, t: F.huber_loss(p, t, delta=0.5),
    "hinge": lambda p, t: torch.mean(torch.clamp(1 - p * t, min=0)),
    "kl_div": lambda p, t: F.kl_div(torch.log(p), t, reduction="batchmean"),
}


def _inputs(loss, shape, dtype=torch.float32):
    p = torch.randn(*shape)
    t = torch.randn(*shape)
    if loss == "hinge":
        t = torch.randint(0, 2, shape).float() * 2 - 1
    if loss == "kl_div":
        p = p.softmax(-1)
        t = t.softmax(-1)
        t.view(-1)[0] = 0.0  # xlogy(0, 0) = 0
    return p.to(dtype), t.to(dtype)


@pytest.mark.parametrize("loss", list(REFS))
@pytest.mark.parametrize("shape,blocks", [
    ((7, 37), dict(BLOCK=64, SPLIT_N=3)),     # 259 elements: ragged last chunk and slice
    ((1,), dict(BLOCK=64, SPLIT_N=8)),        # one element; SPLIT_N clamped to 1
    ((4, 512), dict(BLOCK=128, SPLIT_N=5)),   # slices not a multiple of the chunks
    ((3, 5, 6), dict(BLOCK=1024, SPLIT_N=1)),  # single stage-one program
])
def test_loss(loss, shape, blocks):
    torch.manual_seed(0)
    p, t = _inputs(loss, shape)
    reduction = "batchmean" if loss == "kl_div" else "mean"
    params = dict(LOSS=loss, REDUCTION=reduction, **blocks)
    ctor = {"delta": 0.5} if loss == "huber" else {}
    out = load_model_new("loss_reduce", **params)(**ctor)(p, t)
    ref = REFS[loss](p, t)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
def test_loss_sum_kl_without_log_broadcast_and_noncontiguous():
    torch.manual_seed(1)
    p = torch.randn(20, 9).t()                 # (9, 20) non-contiguous
    t = torch.randn(9, 20)
    out = load_model_new("loss_reduce", LOSS="mse", REDUCTION="sum", BLOCK=64, SPLIT_N=2)()(p, t)
    torch.testing.assert_close(out, ((p - t) ** 2).sum(), atol=1e-4, rtol=1e-5)
    lp = torch.randn(6, 10).log_softmax(-1)
    q = torch.randn(6, 10).softmax(-1)
    kl = load_model_new("loss_reduce", LOSS="kl_div", LOG_INPUT="False", REDUCTION="mean", BLOCK=64)()
    torch.testing.assert_close(kl(lp, q), F.kl_div(lp, q, reduction="mean"), atol=1e-6, rtol=1e-5)
    # KernelBench hinge: predictions (B, 1) against targets (B,) broadcast to (B, B).
    hp, ht = torch.randn(13, 1), torch.randint(0, 2, (13,)).float() * 2 - 1
    hinge = load_model_new("loss_reduce", LOSS="hinge", BLOCK=64, SPLIT_N=4)()
    torch.testing.assert_close(hinge(hp, ht), REFS["hinge"](hp, ht), atol=1e-6, rtol=1e-5)


@pytest.mark.filterwarnings("ignore:Using a target size")
def test_loss_reads_a_trailing_broadcast_in_place():
    # KernelBench's hinge today: predictions (M, N) against targets (N,): the targets are
    # read with a period of N, never expanded (the kernel gets the (N,) tensor itself);
    # also predictions broadcast over leading dims, a 0-dim target, batchmean.
    torch.manual_seed(3)
    hinge = load_model_new("loss_reduce", LOSS="hinge", BLOCK=64, SPLIT_N=3)()
    seen = []
    kernel = hinge.forward.__globals__["loss_partial_kernel"]

    class Spy:
        def __getitem__(self, grid):
            def launch(p, t, *args, **kwargs):
                seen.append((tuple(p.shape), tuple(t.shape), kwargs["T_MODE"]))
                return kernel[grid](p, t, *args, **kwargs)
            return launch

    hinge.forward.__globals__["loss_partial_kernel"] = Spy()
    try:
        p, t = torch.randn(37, 29), torch.randint(0, 2, (29,)).float() * 2 - 1
        torch.testing.assert_close(hinge(p, t), REFS["hinge"](p, t), atol=1e-6, rtol=1e-5)
        assert seen[-1] == ((37, 29), (29,), 2)       # a period shorter than BLOCK
        p, t = torch.randn(5, 150), torch.randint(0, 2, (150,)).float() * 2 - 1
        torch.testing.assert_close(hinge(p, t), REFS["hinge"](p, t), atol=1e-6, rtol=1e-5)
        assert seen[-1] == ((5, 150), (150,), 1)      # one wrap inside a block at most
        t0 = torch.tensor(-0.5)
        torch.testing.assert_close(hinge(p, t0), REFS["hinge"](p, t0), atol=1e-6, rtol=1e-5)
        assert seen[-1] == ((5, 150), (), 2)
    finally:
        hinge.forward.__globals__["loss_partial_kernel"] = kernel
    mse = load_model_new("loss_reduce", LOSS="mse", REDUCTION="batchmean", BLOCK=64, SPLIT_N=2)()
    p1, t1 = torch.randn(1, 3, 10), torch.randn(4, 3, 10)
    torch.testing.assert_close(mse(p1, t1), ((p1 - t1) ** 2).sum() / 4, atol=1e-5, rtol=1e-5)


def test_loss_bf16_smooth_l1():
    torch.manual_seed(2)
    p, t = _inputs("smooth_l1", (33, 70), torch.bfloat16)
    out = load_model_new("loss_reduce", LOSS="smooth_l1", BLOCK=256, SPLIT_N=4)()(p, t)
    assert out.dtype == torch.bfloat16 and out.shape == ()
    torch.testing.assert_close(out.float(), F.smooth_l1_loss(p.float(), t.float()), atol=1e-2, rtol=1e-2)
