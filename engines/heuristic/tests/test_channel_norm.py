"""channel_norm: BatchNorm (inference, and training with the running statistics' update),
GroupNorm and InstanceNorm against torch, under Triton's interpreter.

Shapes include sizes that are not multiples of the blocks, N = 1, C = 1, groups = 1 and
groups = C, 2-D to 5-D inputs (InstanceNorm1d/2d/3d, batched and unbatched); fp32 and
bf16; affine on and off; several eps; InstanceNorm on the input's statistics and on the
running ones (eval mode); the parameter layouts (MODULE) whose state_dict keys must match
the reference's.
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from template_render import load_model_new


def _bn_ref(channels, affine, eps, dtype=torch.float32):
    ref = nn.BatchNorm2d(channels, eps=eps, affine=affine).eval()
    with torch.no_grad():
        ref.running_mean.normal_(0.0, 0.5)
        ref.running_var.uniform_(0.5, 2.0)
        if affine:
            ref.weight.normal_(1.0, 0.3)
            ref.bias.normal_(0.0, 0.3)
    return ref.to(dtype)


def _batch_norm(x, ref):
    return F.batch_norm(x.float(), ref.running_mean.float(), ref.running_var.float(),
                        None if ref.weight is None else ref.weight.float(),
                        None if ref.bias is None else ref.bias.float(),
                        training=False, eps=ref.eps)


class FlatBatchNorm(nn.Module):
    """problems/29's layout: parameters and running stats on the model, F.batch_norm."""

    def __init__(self, channels):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(channels))
        self.bias = nn.Parameter(0.1 * torch.randn(channels))
        self.register_buffer("running_mean", 0.1 * torch.randn(channels))
        self.register_buffer("running_var", 0.5 + torch.rand(channels))
        self.eps = 1e-5

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=False, eps=self.eps)


def _tol(dtype):
    return dict(atol=2e-2, rtol=2e-2) if dtype != torch.float32 else dict(atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape,blocks", [
    ((2, 3, 5, 7), dict(BLOCK=16, BLOCK_P=1)),       # HW 35: three blocks, the last partial
    ((2, 3, 5, 7), dict(BLOCK=8, BLOCK_P=4)),        # planes (6) not a multiple of BLOCK_P
    ((1, 1, 9, 11), dict(BLOCK=32)),                 # N = 1, C = 1
    ((7, 5), dict(BLOCK=1, BLOCK_P=16)),             # BatchNorm1d on (N, C): HW = 1
    ((3, 4, 10), dict(BLOCK=4, BLOCK_P=2)),          # BatchNorm1d on (N, C, L)
    ((2, 3, 2, 3, 5), dict(BLOCK=64, BLOCK_P=64)),   # BatchNorm3d
])
@pytest.mark.parametrize("affine", ["True", "False"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_batch_norm_inference(shape, blocks, affine, dtype):
    torch.manual_seed(0)
    c = shape[1]
    ref = _bn_ref(c, affine == "True", 1e-3)
    model = load_model_new("channel_norm", NORM="batch", MODULE="bn", CHANNELS=c, EPS=1e-3,
                           AFFINE=affine, STATS="running", **blocks)(c)
    model.load_state_dict({"bn." + k: v for k, v in ref.state_dict().items()})
    x = (torch.randn(*shape) * 2 + 1).to(dtype)
    out = model(x)
    assert out.dtype == dtype and out.shape == x.shape
    torch.testing.assert_close(out.float(), _batch_norm(x, ref), **_tol(dtype))


def test_batch_norm_flat_layout_matches_problem_29():
    # MODULE=none: the reference's keys, so the harness loads its random running stats.
    torch.manual_seed(3)
    ref = FlatBatchNorm(6)
    model = load_model_new("channel_norm", NORM="batch", MODULE="none", CHANNELS=6,
                           STATS="running", BLOCK=16)(6)
    assert set(model.state_dict()) == set(ref.state_dict())
    model.load_state_dict(ref.state_dict())
    x = torch.randn(3, 6, 7, 5)
    torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)


def test_batch_norm_flat_without_affine_and_bf16_params():
    # F.batch_norm(x, rm, rv, None, None): no weight/bias keys; bf16 running stats load.
    ref = _bn_ref(4, False, 1e-5, torch.bfloat16)
    model = load_model_new("channel_norm", NORM="batch", MODULE="none", CHANNELS=4,
                           AFFINE="False", STATS="running", BLOCK=32)(4)
    assert set(model.state_dict()) == {"running_mean", "running_var"}
    model.load_state_dict({k: v for k, v in ref.state_dict().items() if k != "num_batches_tracked"})
    x = torch.randn(2, 4, 6, 6, dtype=torch.bfloat16)
    torch.testing.assert_close(model(x).float(), _batch_norm(x, ref), atol=2e-2, rtol=2e-2)


def test_batch_norm_channels_last_and_wrong_channels():
    ref = _bn_ref(8, True, 1e-5)
    model = load_model_new("channel_norm", NORM="batch", MODULE="bn", CHANNELS=8, BLOCK=64,
                           STATS="running")()
    model.load_state_dict({"bn." + k: v for k, v in ref.state_dict().items()})
    x = torch.randn(2, 8, 5, 6).to(memory_format=torch.channels_last)
    torch.testing.assert_close(model(x), _batch_norm(x, ref), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="channels"):
        model(torch.randn(2, 7, 5, 6))


# BatchNorm in training mode (STATS input): batch statistics over N and the spatial dims,
# the running statistics updated in place as nn.BatchNorm updates them.
_BN_TRAIN = [
    ((2, 3, 5, 7), 2, dict(BLOCK_R=16, SPLIT_R=1, BLOCK=16)),   # M = 70: partial tile
    ((2, 3, 5, 7), 2, dict(BLOCK_R=16, SPLIT_R=3, BLOCK_C=2)),  # 3 slices, 2 channels a program
    ((37, 5), 1, dict(BLOCK_R=16, SPLIT_R=2, BLOCK_C=4, BLOCK=1, BLOCK_P=16)),  # (N, C): HW 1
    ((3, 4, 1), 1, dict(BLOCK_R=16, BLOCK_C=8)),                # (N, C, L) with L = 1
    ((1, 3, 41), 1, dict(BLOCK_R=16, SPLIT_R=4)),               # N = 1: 4 slices, one empty
    ((2, 3, 2, 3, 5), 3, dict(BLOCK_R=16, SPLIT_R=2)),          # BatchNorm3d
]


@pytest.mark.parametrize("shape,dims,blocks", _BN_TRAIN)
@pytest.mark.parametrize("affine", ["True", "False"])
def test_batch_norm_training_module(shape, dims, blocks, affine):
    torch.manual_seed(5)
    c = shape[1]
    ref = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)[dims - 1](c, eps=1e-3, momentum=0.2,
                                                                    affine=affine == "True")
    if affine == "True":
        with torch.no_grad():
            ref.weight.normal_(1.0, 0.3)
            ref.bias.normal_(0.0, 0.3)
    model = load_model_new("channel_norm", NORM="batch", MODULE="bn", CHANNELS=c, EPS=1e-3,
                           AFFINE=affine, DIMS=dims, MOMENTUM=0.2, STATS="input", **blocks)(c)
    model.load_state_dict({"bn." + k: v for k, v in ref.state_dict().items()})
    for step in range(2):  # twice: the second call starts from updated running statistics
        x = torch.randn(*shape) * 3 + 2
        out = model(x)
        torch.testing.assert_close(out, ref(x), atol=1e-4, rtol=1e-4)
    for k, v in ref.state_dict().items():
        torch.testing.assert_close(model.bn.state_dict()[k], v, atol=1e-5, rtol=1e-5)
    # Eval mode: the running statistics, as torch.
    model.eval()
    ref.eval()
    x = torch.randn(*shape)
    torch.testing.assert_close(model(x), ref(x), atol=1e-4, rtol=1e-4)


def test_batch_norm_training_momentum_none_bf16_and_one_value_raises():
    # momentum=None: a cumulative average (1 / num_batches_tracked); bf16 input.
    ref = nn.BatchNorm2d(4, momentum=None)
    model = load_model_new("channel_norm", NORM="batch", MODULE="bn", CHANNELS=4,
                           STATS="input", BLOCK_R=32)(4)
    model.bn.momentum = None
    for _ in range(3):
        x = torch.randn(3, 4, 6, 5) + 1
        torch.testing.assert_close(model(x.bfloat16()).float(), ref(x.bfloat16().float()),
                                   atol=2e-2, rtol=2e-2)
    assert int(model.bn.num_batches_tracked) == 3
    torch.testing.assert_close(model.bn.running_mean, ref.running_mean, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(model.bn.running_var, ref.running_var, atol=1e-2, rtol=1e-2)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        model(torch.randn(1, 4, 1, 1))


class FlatTrainingBatchNorm(FlatBatchNorm):
    """F.batch_norm(training=True) on the model's own tensors."""

    def forward(self, x):
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            training=True, momentum=0.3, eps=self.eps)


def test_batch_norm_training_flat_layout():
    torch.manual_seed(4)
    ref = FlatTrainingBatchNorm(6)
    model = load_model_new("channel_norm", NORM="batch", MODULE="none", CHANNELS=6,
                           STATS="input", MOMENTUM=0.3, BLOCK_R=16, SPLIT_R=2)(6)
    model.load_state_dict(ref.state_dict())
    x = torch.randn(3, 6, 7, 5)
    torch.testing.assert_close(model(x), ref(x), atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(model.running_mean, ref.running_mean, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.running_var, ref.running_var, atol=1e-5, rtol=1e-5)


def _gn_ref(groups, channels, affine, eps=1e-5):
    ref = nn.GroupNorm(groups, channels, eps=eps, affine=affine)
    if affine:
        with torch.no_grad():
            ref.weight.normal_(1.0, 0.3)
            ref.bias.normal_(0.0, 0.3)
    return ref


@pytest.mark.parametrize("shape,groups,blocks", [
    ((2, 6, 5, 7), 3, dict(BLOCK_R=16, SPLIT_R=1, BLOCK=16)),   # L = 70: partial tail chunk
    ((2, 6, 5, 7), 3, dict(BLOCK_R=16, SPLIT_R=3, BLOCK=64)),   # three slices of a group
    ((2, 6, 5, 7), 3, dict(BLOCK_R=16, SPLIT_R=4)),             # 4 slices of 32: one empty
    ((1, 8, 9, 9), 1, dict(BLOCK_R=32, SPLIT_R=5, BLOCK=32)),   # N = 1, groups = 1
    ((3, 5, 4, 3), 5, dict(BLOCK_R=16, SPLIT_R=2, BLOCK=4)),    # groups = C (instance-like)
    ((2, 1, 13), 1, dict(BLOCK_R=16, SPLIT_R=2)),               # C = 1, 1-D spatial
    ((5, 12), 4, dict(BLOCK_R=16, BLOCK=1, BLOCK_P=8)),         # (N, C): HW = 1
    ((2, 4, 3, 4, 5), 2, dict(BLOCK_R=64, SPLIT_R=3)),          # 3-D spatial
])
@pytest.mark.parametrize("affine", ["True", "False"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_group_norm(shape, groups, blocks, affine, dtype):
    torch.manual_seed(1)
    c = shape[1]
    ref = _gn_ref(groups, c, affine == "True")
    model = load_model_new("channel_norm", NORM="group", MODULE="gn", CHANNELS=c,
                           GROUPS=groups, AFFINE=affine, **blocks)(groups, c)
    if affine == "True":
        model.load_state_dict({"gn." + k: v for k, v in ref.state_dict().items()})
    x = (torch.randn(*shape) * 3 + 2).to(dtype)
    out = model(x)
    assert out.dtype == dtype and out.shape == x.shape
    torch.testing.assert_close(out.float(), ref(x.float()), **_tol(dtype))


def test_group_norm_problem_30_layout_and_constructor_order():
    # problems/30 builds Model(num_groups, num_channels), KernelBench Model(num_features,
    # num_groups): ModelNew builds its nn.GroupNorm from the recorded GROUPS / CHANNELS and
    # accepts either argument list; the keys are gn.weight, gn.bias.
    ref = _gn_ref(4, 8, True)
    for args in [(4, 8), (8, 4), ()]:
        model = load_model_new("channel_norm", NORM="group", MODULE="gn", CHANNELS=8,
                               GROUPS=4, BLOCK_R=64, SPLIT_R=2)(*args)
        assert set(model.state_dict()) == {"gn.weight", "gn.bias"}
        model.load_state_dict({"gn." + k: v for k, v in ref.state_dict().items()})
        x = torch.randn(2, 8, 6, 5)
        torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)


def test_group_norm_flat_layout():
    # F.group_norm(x, G, self.weight, self.bias): MODULE=none gives weight and bias keys.
    model = load_model_new("channel_norm", NORM="group", MODULE="none", CHANNELS=6, GROUPS=2,
                           EPS=1e-4, BLOCK_R=16)(2, 6)
    assert set(model.state_dict()) == {"weight", "bias"}
    with torch.no_grad():
        model.weight.normal_()
        model.bias.normal_()
    x = torch.randn(3, 6, 4, 4)
    ref = F.group_norm(x, 2, model.weight, model.bias, eps=1e-4)
    torch.testing.assert_close(model(x), ref, atol=1e-5, rtol=1e-5)


def test_group_norm_offset_mean_is_stable_and_deterministic():
    # A large mean over long groups: fp32 E[x^2] - E[x]^2 would cancel catastrophically
    # (|mean| / std = 1000); the Welford/Chan merge keeps the variance. Compared in fp64.
    torch.manual_seed(2)
    x = torch.randn(1, 4, 128, 130) + 1000.0     # groups of 2 x 16640 elements
    model = load_model_new("channel_norm", NORM="group", MODULE="gn", CHANNELS=4, GROUPS=2,
                           AFFINE="False", BLOCK_R=512, SPLIT_R=7, BLOCK=1024)()
    out = model(x)
    ref = F.group_norm(x.double(), 2, eps=1e-5)
    torch.testing.assert_close(out.double(), ref, atol=2e-3, rtol=0)
    assert torch.equal(model(x), out)   # no atomics: bitwise reproducible


_INSTANCE_NORMS = {1: nn.InstanceNorm1d, 2: nn.InstanceNorm2d, 3: nn.InstanceNorm3d}


def _in_ref(dims, channels, affine, eps=1e-5, track=False):
    """An nn.InstanceNorm{dims}d with random affine parameters and running statistics."""
    ref = _INSTANCE_NORMS[dims](channels, eps=eps, affine=affine, track_running_stats=track)
    with torch.no_grad():
        if affine:
            ref.weight.normal_(1.0, 0.3)
            ref.bias.normal_(0.0, 0.3)
        if track:
            ref.running_mean.normal_(0.0, 0.5)
            ref.running_var.uniform_(0.5, 2.0)
    return ref


@pytest.mark.parametrize("shape,eps,blocks", [
    ((3, 4, 37), 1e-5, dict(BLOCK_R=16, SPLIT_R=1, BLOCK=16)),      # 1-D: L = 37, tail chunk
    ((4, 3, 2), 1e-3, dict(BLOCK_R=16, BLOCK=1, BLOCK_P=4)),         # 1-D: 2 elements a plane
    ((5, 6, 3), 1e-5, dict(BLOCK_R=16, BLOCK=4, BLOCK_P=8)),         # 30 planes, 8 a program
    ((2, 3, 5, 7), 1e-5, dict(BLOCK_R=16, SPLIT_R=3, BLOCK=16)),     # 2-D: HW 35, 3 slices
    ((2, 3, 7, 10), 0.1, dict(BLOCK_R=16, SPLIT_R=4, BLOCK=32)),     # 4 slices of 32: one empty
    ((1, 5, 9, 11), 1e-6, dict(BLOCK_R=32, SPLIT_R=2, BLOCK=64)),    # N = 1
    ((1, 1, 13, 3), 1e-5, dict(BLOCK_R=64)),                         # N = 1, C = 1
    ((2, 3, 3, 4, 5), 1e-4, dict(BLOCK_R=16, SPLIT_R=2, BLOCK=16)),  # 3-D
])
@pytest.mark.parametrize("affine", ["True", "False"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_instance_norm(shape, eps, blocks, affine, dtype):
    torch.manual_seed(4)
    c, dims = shape[1], len(shape) - 2
    ref = _in_ref(dims, c, affine == "True", eps)
    model = load_model_new("channel_norm", NORM="instance", MODULE="inorm", CHANNELS=c,
                           EPS=eps, AFFINE=affine, DIMS=dims, **blocks)(c)
    assert set(model.state_dict()) == {"inorm." + k for k in ref.state_dict()}
    model.load_state_dict({"inorm." + k: v for k, v in ref.state_dict().items()})
    x = (torch.randn(*shape) * 3 + 2).to(dtype)
    out = model(x)
    assert out.dtype == dtype and out.shape == x.shape
    torch.testing.assert_close(out.float(), ref(x.float()), **_tol(dtype))


class KernelBenchInstanceNorm(nn.Module):
    """KernelBench level 1's 34_InstanceNorm: Model(num_features), self.inorm, defaults."""

    def __init__(self, num_features):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x):
        return self.inorm(x)


def test_instance_norm_kernelbench_layout():
    # affine=False, track_running_stats=False: no state_dict (the harness keeps the seed).
    ref = KernelBenchInstanceNorm(6)
    model = load_model_new("channel_norm", NORM="instance", MODULE="inorm", CHANNELS=6,
                           AFFINE="False", DIMS=2, BLOCK_R=64, SPLIT_R=2, BLOCK=64)(6)
    assert set(model.state_dict()) == set(ref.state_dict()) == set()
    x = torch.randn(3, 6, 11, 9) * 4 - 1
    torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)


def test_instance_norm_level2_name_3d_affine():
    # KernelBench level 2 spells it self.instance_norm = nn.InstanceNorm3d(C, eps=..., ...).
    ref = _in_ref(3, 4, True, eps=1e-3)
    model = load_model_new("channel_norm", NORM="instance", MODULE="instance_norm",
                           CHANNELS=4, EPS=1e-3, AFFINE="True", DIMS=3, BLOCK_R=32)()
    assert set(model.state_dict()) == {"instance_norm.weight", "instance_norm.bias"}
    model.load_state_dict({"instance_norm." + k: v for k, v in ref.state_dict().items()})
    assert isinstance(model.instance_norm, nn.InstanceNorm3d)
    x = torch.randn(2, 4, 3, 5, 6)
    torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dims,shape", [(1, (4, 9)), (2, (3, 5, 6)), (3, (2, 3, 4, 5))])
def test_instance_norm_unbatched_input_and_wrong_rank(dims, shape):
    # nn.InstanceNorm{d}d takes one unbatched (C, *d) sample; other ranks are refused.
    ref = _in_ref(dims, shape[0], True)
    model = load_model_new("channel_norm", NORM="instance", MODULE="norm", CHANNELS=shape[0],
                           AFFINE="True", DIMS=dims, BLOCK_R=16)()
    model.load_state_dict({"norm." + k: v for k, v in ref.state_dict().items()})
    x = torch.randn(*shape)
    out = model(x)
    assert out.shape == x.shape
    torch.testing.assert_close(out, ref(x), atol=1e-5, rtol=1e-5)
    for bad in [x[0], x[None, None]]:
        with pytest.raises(ValueError):
            ref(bad)
        with pytest.raises(ValueError, match="InstanceNorm"):
            model(bad)


def test_instance_norm_spatial_size_one_raises_like_torch():
    # The input's statistics over one element: torch refuses (the variance is 0), so does
    # the template; the running statistics (eval) serve it.
    x = torch.randn(3, 4, 1, 1)
    ref = _in_ref(2, 4, False)
    model = load_model_new("channel_norm", NORM="instance", MODULE="inorm", CHANNELS=4,
                           AFFINE="False", DIMS=2)()
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        ref(x)
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        model(x)
    ref = _in_ref(2, 4, True, track=True).eval()
    model = load_model_new("channel_norm", NORM="instance", MODULE="inorm", CHANNELS=4,
                           DIMS=2, STATS="running", BLOCK=1, BLOCK_P=4)()
    model.load_state_dict({"inorm." + k: v for k, v in ref.state_dict().items()})
    torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("affine", ["True", "False"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_instance_norm_running_stats_in_eval_mode(affine, dtype):
    # track_running_stats=True in eval mode: torch normalizes with the running statistics
    # (the BatchNorm-inference path); the keys include num_batches_tracked.
    torch.manual_seed(5)
    ref = _in_ref(2, 5, affine == "True", eps=1e-3, track=True).eval()
    model = load_model_new("channel_norm", NORM="instance", MODULE="inorm", CHANNELS=5,
                           EPS=1e-3, AFFINE=affine, DIMS=2, STATS="running", BLOCK=16)(5)
    assert set(model.state_dict()) == {"inorm." + k for k in ref.state_dict()}
    model.load_state_dict({"inorm." + k: v for k, v in ref.state_dict().items()})
    assert not model.inorm.training
    x = (torch.randn(3, 5, 6, 7) * 2 + 1).to(dtype)
    out = model(x)
    assert out.dtype == dtype
    torch.testing.assert_close(out.float(), ref(x.float()), **_tol(dtype))
    running = model.inorm.running_mean.clone()
    model(x)
    assert torch.equal(model.inorm.running_mean, running)   # read, never updated


def test_instance_norm_running_stats_refuses_training_mode():
    # In training mode torch would normalize with the input's statistics and update the
    # running ones: refused with the reason rather than computed differently.
    model = load_model_new("channel_norm", NORM="instance", MODULE="inorm", CHANNELS=3,
                           DIMS=1, STATS="running")()
    model.train()
    with pytest.raises(RuntimeError, match="training mode"):
        model(torch.randn(2, 3, 8))


class FlatInstanceNorm(nn.Module):
    """F.instance_norm with the parameters (and running statistics) on the model."""

    def __init__(self, channels, affine, running):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.3 * torch.randn(channels)) if affine else None
        self.bias = nn.Parameter(0.3 * torch.randn(channels)) if affine else None
        self.running = running
        if running:
            self.register_buffer("running_mean", 0.5 * torch.randn(channels))
            self.register_buffer("running_var", 0.5 + torch.rand(channels))

    def forward(self, x):
        if self.running:
            return F.instance_norm(x, self.running_mean, self.running_var, self.weight,
                                   self.bias, use_input_stats=False, eps=1e-4)
        return F.instance_norm(x, weight=self.weight, bias=self.bias, eps=1e-4)


@pytest.mark.parametrize("affine", ["True", "False"])
@pytest.mark.parametrize("stats", ["input", "running"])
def test_instance_norm_flat_layout(affine, stats):
    torch.manual_seed(6)
    ref = FlatInstanceNorm(6, affine == "True", stats == "running")
    model = load_model_new("channel_norm", NORM="instance", MODULE="none", CHANNELS=6,
                           EPS=1e-4, AFFINE=affine, STATS=stats, BLOCK_R=16, BLOCK=32)(6)
    assert set(model.state_dict()) == set(ref.state_dict())
    model.load_state_dict(ref.state_dict())
    for x in [torch.randn(3, 6, 7, 5), torch.randn(2, 6, 9), torch.randn(1, 6, 2, 3, 4)]:
        torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)


def test_instance_norm_channels_last_and_wrong_channels():
    ref = _in_ref(2, 8, True)
    model = load_model_new("channel_norm", NORM="instance", MODULE="inorm", CHANNELS=8,
                           AFFINE="True", BLOCK_R=32, SPLIT_R=2, BLOCK=64)()
    model.load_state_dict({"inorm." + k: v for k, v in ref.state_dict().items()})
    x = torch.randn(2, 8, 5, 6).to(memory_format=torch.channels_last)
    torch.testing.assert_close(model(x), ref(x), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="channels"):
        model(torch.randn(2, 7, 5, 6))


def test_instance_norm_offset_mean_is_stable_and_deterministic():
    # As for GroupNorm: |mean| / std = 1000 over planes of 16640 elements, 7 slices each.
    torch.manual_seed(7)
    x = torch.randn(2, 3, 128, 130) + 1000.0
    model = load_model_new("channel_norm", NORM="instance", MODULE="inorm", CHANNELS=3,
                           AFFINE="False", BLOCK_R=512, SPLIT_R=7, BLOCK=1024)()
    out = model(x)
    ref = F.instance_norm(x.double(), eps=1e-5)
    torch.testing.assert_close(out.double(), ref, atol=2e-3, rtol=0)
    assert torch.equal(model(x), out)   # no atomics: bitwise reproducible
