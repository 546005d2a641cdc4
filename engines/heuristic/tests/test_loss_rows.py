import pytest
import torch
import torch.nn.functional as F

from template_render import load_model_new


@pytest.mark.parametrize("shape,block", [
    ((5, 37), 16),     # several chunks, C not a multiple of the block
    ((1, 1), 16),      # one class
    ((7, 64), 64),     # one chunk exactly
    ((3, 200), 256),
])
def test_cross_entropy(shape, block):
    torch.manual_seed(0)
    logits = torch.randn(*shape) * 4
    targets = torch.randint(0, shape[1], (shape[0],))
    model = load_model_new("loss_rows", LOSS="cross_entropy", BLOCK=block)()
    out = model(logits, targets)
    ref = F.cross_entropy(logits, targets)
    assert out.shape == ref.shape and out.dtype == ref.dtype
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_cross_entropy_ignore_index_noncontiguous_bf16():
    torch.manual_seed(1)
    logits = torch.randn(40, 6).t()           # (6, 40), row stride 1, column stride 6
    targets = torch.tensor([3, -100, 0, 39, -100, 7])
    model = load_model_new("loss_rows", LOSS="cross_entropy", BLOCK=16)()
    torch.testing.assert_close(model(logits, targets), F.cross_entropy(logits, targets),
                               atol=1e-5, rtol=1e-5)
    sliced = torch.randn(4, 50)[:, ::2]       # (4, 25), last-dim stride 2
    t = torch.randint(0, 25, (4,))
    torch.testing.assert_close(model(sliced, t), F.cross_entropy(sliced, t), atol=1e-5, rtol=1e-5)
    lb = torch.randn(9, 70, dtype=torch.bfloat16)
    tb = torch.randint(0, 70, (9,))
    out = model(lb, tb)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), F.cross_entropy(lb.float(), tb), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("shape,block", [((6, 37), 16), ((1, 1), 16), ((3, 128), 128)])
def test_cosine_similarity_loss(shape, block):
    torch.manual_seed(2)
    p, t = torch.randn(*shape), torch.randn(*shape)
    model = load_model_new("loss_rows", LOSS="cosine_similarity", BLOCK=block)()
    ref = torch.mean(1 - F.cosine_similarity(p, t, dim=1))
    torch.testing.assert_close(model(p, t), ref, atol=1e-5, rtol=1e-5)


def test_cosine_similarity_zero_row_and_strided():
    p = torch.randn(5, 30)
    p[2] = 0.0                                 # eps keeps the zero row finite
    t = torch.randn(30, 5).t()                 # strided rows
    model = load_model_new("loss_rows", LOSS="cosine_similarity", BLOCK=16)()
    ref = torch.mean(1 - F.cosine_similarity(p, t, dim=1))
    torch.testing.assert_close(model(p, t), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape,block,ctor", [((6, 37), 16, ()), ((1, 1), 16, (0.5,)), ((4, 64), 64, (2.0,))])
def test_triplet_margin(shape, block, ctor):
    torch.manual_seed(3)
    a, p, n = (torch.randn(*shape) for _ in range(3))
    model = load_model_new("loss_rows", LOSS="triplet_margin", BLOCK=block)(*ctor)
    ref = torch.nn.TripletMarginLoss(*ctor)(a, p, n)
    torch.testing.assert_close(model(a, p, n), ref, atol=1e-5, rtol=1e-5)


def test_triplet_margin_strided_keywords():
    torch.manual_seed(4)
    a = torch.randn(30, 5).t()
    p, n = torch.randn(5, 30), torch.randn(5, 60)[:, ::2]
    model = load_model_new("loss_rows", LOSS="triplet_margin", BLOCK=16)(margin=0.3, eps=1e-4)
    ref = torch.nn.TripletMarginLoss(margin=0.3, eps=1e-4)(a, p, n)
    torch.testing.assert_close(model(a, p, n), ref, atol=1e-5, rtol=1e-5)
    with pytest.raises(NotImplementedError):
        load_model_new("loss_rows", LOSS="triplet_margin")(p=1)
