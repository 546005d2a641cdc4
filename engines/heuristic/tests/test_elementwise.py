import pytest
import torch
import torch.nn.functional as F

from template_render import load_model_new

# op -> (reference, template params, constructor args)
CASES = {
    "relu": (torch.relu, {}, ()),
    "relu6": (F.relu6, {}, ()),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), dict(ALPHA_NAME="negative_slope"), (0.2,)),
    "gelu": (F.gelu, {}, ()),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), {}, ()),
    "sigmoid": (torch.sigmoid, {}, ()),
    "tanh": (torch.tanh, {}, ()),
    "softplus": (F.softplus, dict(ALPHA_NAME="beta", ALPHA=1.0, BETA_NAME="threshold", BETA=20.0), ()),
    "softsign": (F.softsign, {}, ()),
    "elu": (lambda x: F.elu(x, 0.7), dict(ALPHA=1.0), (0.7,)),
    "selu": (torch.selu, {}, ()),
    "celu": (lambda x: F.celu(x, 1.3), dict(ALPHA=1.0), (), ),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 0.5), dict(ALPHA_NAME="min_val", ALPHA=-1.0, BETA_NAME="max_val", BETA=1.0), (-0.5, 0.5)),
    "hardsigmoid": (F.hardsigmoid, {}, ()),
    "hardswish": (F.hardswish, {}, ()),
    "swish": (lambda x: x * torch.sigmoid(x), {}, ()),
    "mish": (F.mish, {}, ()),
    "exp": (torch.exp, {}, ()),
    "abs": (torch.abs, {}, ()),
}


@pytest.mark.parametrize("op", list(CASES))
def test_activation(op):
    ref_fn, params, ctor = CASES[op]
    if op == "celu":
        ctor = (1.3,)
    torch.manual_seed(0)
    x = torch.randn(7, 37) * 3  # 259 elements: not a multiple of BLOCK
    model = load_model_new("elementwise", OP=op, BLOCK=64, **params)(*ctor)
    torch.testing.assert_close(model(x), ref_fn(x), atol=1e-5, rtol=1e-5)


def test_activation_bf16_noncontiguous_and_tiny():
    model = load_model_new("elementwise", OP="gelu", BLOCK=64)()
    x = torch.randn(20, 30, dtype=torch.bfloat16).t()
    torch.testing.assert_close(model(x).float(), F.gelu(x.float()), atol=2e-2, rtol=2e-2)
    one = torch.randn(1)
    torch.testing.assert_close(model(one), F.gelu(one), atol=1e-5, rtol=1e-5)


# The scalars the brain renders from the recorded signature (OpRecord.scalars), with a
# constructor that passes none (torch.selu, F.relu6, F.leaky_relu(x, 0.2) in forward):
# op -> (reference, template params).
RENDERED = {
    "leaky_relu_0.2": (lambda x: F.leaky_relu(x, 0.2),
                       dict(OP="leaky_relu", ALPHA_NAME="negative_slope", ALPHA=0.2)),
    "elu_0.5": (lambda x: F.elu(x, 0.5), dict(OP="elu", ALPHA=0.5)),
    # aten::elu's full form: torch.selu is elu(alpha 1.6733, scale 1.0507).
    "elu_selu_constants": (torch.selu, dict(OP="elu", ALPHA=1.6732632423543772,
                                            SCALE=1.0507009873554805)),
    "elu_scale_input_scale": (
        lambda x: torch.ops.aten.elu(x, 0.5, 2.0, 0.25),
        dict(OP="elu", ALPHA=0.5, SCALE=2.0, INPUT_SCALE=0.25)),
    "hardtanh_relu6": (F.relu6, dict(OP="hardtanh", ALPHA_NAME="min_val", ALPHA=0.0,
                                     BETA_NAME="max_val", BETA=6.0)),
    "softplus_2_10": (lambda x: F.softplus(x, 2.0, 10.0),
                      dict(OP="softplus", ALPHA_NAME="beta", ALPHA=2.0,
                           BETA_NAME="threshold", BETA=10.0)),
    "celu_1.3": (lambda x: F.celu(x, 1.3), dict(OP="celu", ALPHA=1.3)),
}


@pytest.mark.parametrize("case", list(RENDERED))
def test_rendered_scalars_without_constructor_args(case):
    ref_fn, params = RENDERED[case]
    torch.manual_seed(0)
    x = torch.randn(7, 37) * 3
    model = load_model_new("elementwise", BLOCK=64, **params)()
    torch.testing.assert_close(model(x), ref_fn(x), atol=1e-5, rtol=1e-5)


def test_scale_by_forward_argument_or_constant():
    # KernelBench's matrix-scalar multiplication passes s to forward; a constant multiplier
    # (x * -2.5) comes as SCALE from the recorded signature.
    torch.manual_seed(0)
    a = torch.randn(7, 37)
    by_argument = load_model_new("elementwise", OP="scale", BLOCK=64)()
    torch.testing.assert_close(by_argument(a, 3.14), a * 3.14)
    by_constant = load_model_new("elementwise", OP="scale", SCALE=-2.5, BLOCK=64)()
    torch.testing.assert_close(by_constant(a), a * -2.5)
    # bf16 to within one bf16 step (the interpreter's fp32 -> bf16 store may round
    # differently from torch's).
    torch.testing.assert_close(by_constant(a.bfloat16().t()).float(),
                               (a.bfloat16().t() * -2.5).float(), atol=1e-2, rtol=1e-2)


# Binary ops of broadcasting tensors: (forward inputs' shapes, A_UNSQ / B_UNSQ as op
# recognition records them, the reference).
BINARY = [
    ("mul", (5,), (5, 7), 0b10, 0, lambda a, b: a.unsqueeze(1) * b),       # row scale
    ("mul", (7,), (5, 7), 0, 0, lambda a, b: a * b),                         # column scale
    ("sub", (4, 7), (4, 3, 7), 0b10, 0, lambda a, b: a[:, None, :] - b),    # middle dim
    ("div", (3, 1, 6), (3, 5, 1), 0, 0, lambda a, b: a / b),                 # both broadcast
    ("add", (2, 1, 3, 4, 5), (3, 1, 5), 0, 0, lambda a, b: a + b),           # 5-D, 4 dims left
    ("add", (2, 3, 4, 5, 6), (6,), 0, 0, lambda a, b: a + b),                # 5-D, 2 dims left
    ("maximum", (1,), (9, 33), 0, 0, lambda a, b: torch.maximum(a, b)),      # a size-1 dim
    ("minimum", (6, 1), (6, 11), 0, 0, lambda a, b: torch.minimum(a, b)),
]


@pytest.mark.parametrize("op,sa,sb,ua,ub,ref", BINARY)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_binary_broadcast(op, sa, sb, ua, ub, ref, dtype):
    torch.manual_seed(3)
    a = torch.randn(*sa, dtype=dtype)
    b = torch.randn(*sb, dtype=dtype)
    if op == "div":
        b = b.abs() + 0.5
    model = load_model_new("elementwise", OP=op, A_RANK=len(sa), B_RANK=len(sb), A_UNSQ=ua,
                           B_UNSQ=ub, BLOCK=64)()
    want = ref(a, b)
    got = model(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = dict(atol=1e-6, rtol=1e-6) if dtype == torch.float32 else dict(atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(got, want, **tol)


def test_binary_matches_operands_by_rank_and_mixed_dtypes():
    # forward(B, A) of a model computing A.unsqueeze(1) * B: the ranks tell them apart;
    # bf16 times fp32 promotes to fp32; a non-contiguous (transposed) input is read by strides.
    a = torch.randn(6)
    b = torch.randn(9, 6, dtype=torch.bfloat16).t()
    model = load_model_new("elementwise", OP="mul", A_RANK=1, B_RANK=2, A_UNSQ=2, BLOCK=64)()
    want = a.unsqueeze(1) * b
    got = model(b, a)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    with pytest.raises(ValueError, match="two tensors"):
        model(a)
