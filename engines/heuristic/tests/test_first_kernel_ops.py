"""The heuristic brain's first kernel for ops beyond the suite's problems, end to end:
KernelBench-style models of InstanceNorm, Frobenius, L1 and L2 normalization, p-norm /
var / std reductions, transposed (1-D, 2-D, grouped 2-D, 3-D), grouped, 3-D and 1-D
convolutions, 2-D convolutions whose constructors are not nn.Conv2d's (pointwise, per-dim
tuples, 'same' padding, a classifier's fixed conv) and the tanh GELU
(and models with extra compute ops, which must be refused). For each:
record the op signature with the harness, ask the C++ brain for its first kernel
(`kagent-template-render --first-kernel`), check the template it chose, and compare the
kernel with the reference the harness's way under Triton's interpreter (helpers from
test_problems_first_kernel.py). EXTRA_OPS: models that compute more than a template's op (a
prologue or an epilogue around a reduction, scan, softmax, norm, conv, pooling or GEMM):
the brain must answer UNIMPLEMENTED naming the extra ops, not render the main op alone.
Skipped without the binary.
"""
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from test_problems_first_kernel import (BINARY, _first_kernel, _render, assert_matches_reference,
                                        record)

pytestmark = pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")


class InstanceNorm(nn.Module):  # KernelBench level 1's spelling
    def __init__(self, num_features, affine=False):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features, affine=affine)

    def forward(self, x):
        return self.inorm(x)


def Lambda(fn):
    """A model class whose forward is fn, with a constructor that takes no arguments (as
    KernelBench's activation, norm and reduction models with fixed arguments)."""
    class Model(nn.Module):
        def forward(self, *inputs):
            return fn(*inputs)
    return Model


class ConvTranspose(nn.Module):  # KernelBench's argument order
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=False):
        super().__init__()
        self.conv_transpose2d = nn.ConvTranspose2d(in_channels, out_channels, kernel_size,
                                                   stride=stride, padding=padding,
                                                   output_padding=output_padding,
                                                   groups=groups, bias=bias)

    def forward(self, x):
        return self.conv_transpose2d(x)


class ConvTranspose1dDilated(nn.Module):  # KernelBench level 1's order: no output_padding
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, bias=False):
        super().__init__()
        self.conv1d_transpose = nn.ConvTranspose1d(in_channels, out_channels, kernel_size,
                                                   stride=stride, padding=padding,
                                                   dilation=dilation, bias=bias)

    def forward(self, x):
        return self.conv1d_transpose(x)


class ConvTranspose3dAsymmetric(nn.Module):  # per-dim tuples, groups
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding,
                 groups=1, bias=False):
        super().__init__()
        self.conv_transpose3d = nn.ConvTranspose3d(in_channels, out_channels, kernel_size,
                                                   stride=stride, padding=padding,
                                                   output_padding=output_padding,
                                                   groups=groups, bias=bias)

    def forward(self, x):
        return self.conv_transpose3d(x)


class GroupedConv(nn.Module):  # KernelBench's argument order (nn.Conv2d's)
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=padding, dilation=dilation, groups=groups, bias=bias)

    def forward(self, x):
        return self.conv(x)


class Conv3dKxKx1(nn.Module):  # KernelBench level 1: a (k, k, 1) kernel built from an int
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=False):
        super().__init__()
        self.conv3d = nn.Conv3d(in_channels, out_channels, (kernel_size, kernel_size, 1),
                                stride=stride, padding=padding, dilation=dilation,
                                groups=groups, bias=bias)

    def forward(self, x):
        return self.conv3d(x)


class Conv1dDilatedStrided(nn.Module):  # KernelBench level 1's order: no padding argument
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, dilation=1,
                 bias=False):
        super().__init__()
        self.conv1d = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride,
                                dilation=dilation, bias=bias)

    def forward(self, x):
        return self.conv1d(x)


class ConvInsideClassifier(nn.Module):  # KernelBench level 1: Model(num_classes), a fixed conv
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=10, kernel_size=5, stride=4, padding=2)

    def forward(self, x):
        return self.conv1(x)


class PointwiseConv(nn.Module):  # KernelBench level 1: Model(in, out, bias), kernel_size 1
    def __init__(self, in_channels, out_channels, bias=False):
        super().__init__()
        self.conv1d = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0,
                                bias=bias)

    def forward(self, x):
        return self.conv1d(x)


class ConvDilatedPadded(nn.Module):  # KernelBench level 1: no groups argument, tuples
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=(0, 0),
                 dilation=(1, 1), bias=False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                                padding=padding, dilation=dilation, bias=bias)

    def forward(self, x):
        return self.conv2d(x)


class DepthwisePerDim(nn.Module):  # KernelBench level 1: every argument per dim
    def __init__(self, in_channels, out_channels, kernel_size_h, kernel_size_w, stride_h=1,
                 stride_w=1, padding_h=0, padding_w=0, dilation_h=1, dilation_w=1, groups=1,
                 bias=False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, (kernel_size_h, kernel_size_w),
                                stride=(stride_h, stride_w), padding=(padding_h, padding_w),
                                dilation=(dilation_h, dilation_w), groups=in_channels,
                                bias=bias)

    def forward(self, x):
        return self.conv2d(x)


class DepthwiseKx1(nn.Module):  # KernelBench level 1: (in, kernel, stride, padding, dilation)
    def __init__(self, in_channels, kernel_size, stride=1, padding=0, dilation=1, bias=False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size=(kernel_size, 1),
                                stride=stride, padding=padding, dilation=dilation,
                                groups=in_channels, bias=bias)

    def forward(self, x):
        return self.conv2d(x)


class DepthwiseSeparable(nn.Module):  # KernelBench level 1's order and attribute names
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 bias=False):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride,
                                   padding=padding, dilation=dilation, groups=in_channels,
                                   bias=bias)
        self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


class SeparableOtherNames(nn.Module):  # other names, a depth multiplier, per-dim arguments
    def __init__(self, channels, out_channels):
        super().__init__()
        self.dw = nn.Conv2d(channels, 2 * channels, (3, 5), stride=(2, 1), padding=(1, 2),
                            dilation=(1, 2), groups=channels, bias=True)
        self.pw = nn.Conv2d(2 * channels, out_channels, 1, bias=False)

    def forward(self, x):
        return self.pw(self.dw(x))


class DepthwiseThenConv3x3(nn.Module):
    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(4, 4, 3, groups=4)
        self.conv = nn.Conv2d(4, 8, 3)

    def forward(self, x):
        return self.conv(self.dw(x))


class ConvSame(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding="same")

    def forward(self, x):
        return self.conv(x)


def Fixed(make_layer):
    """A model class whose layer is built inside with fixed sizes: a constructor with no
    arguments (tests/gpu/level1_* write theirs this way; session 36's H100 run saw the
    templates that read the sizes from the constructor fail on 12 of them)."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = make_layer()

        def forward(self, x):
            return self.layer(x)
    return Model


def _x(*shape):
    return torch.randn(*shape)


def _math_sdpa_causal(q, k, v):
    """SDPA through its math path (what the harness records when no fused kernel
    applies): Q and K^T times sqrt(scale), the causal mask added to the scores."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


# name: (model class, constructor args, inputs factory, expected template)
CASES = {
    "instance_norm": (InstanceNorm, [8], lambda: [_x(2, 8, 9, 7)], "channel_norm"),
    "instance_norm_affine": (InstanceNorm, [8, True], lambda: [_x(2, 8, 9, 7)],
                             "channel_norm"),
    "frobenius": (Lambda(lambda x: x / torch.norm(x, p="fro")), [],
                  lambda: [_x(4, 8, 9, 7)], "frobenius_norm"),
    "l2_norm_dim": (Lambda(lambda x: torch.norm(x, p=2, dim=1)), [],
                    lambda: [_x(4, 37, 9)], "reduce_dim"),
    "l1_norm_last": (Lambda(lambda x: torch.linalg.vector_norm(x, ord=1, dim=-1)), [],
                     lambda: [_x(6, 100)], "reduce_dim"),
    "var_biased": (Lambda(lambda x: torch.var(x, dim=1, unbiased=False)), [],
                   lambda: [_x(4, 37, 9)], "reduce_dim"),
    "std_last": (Lambda(lambda x: torch.std(x, dim=-1, keepdim=True)), [],
                 lambda: [_x(6, 100)], "reduce_dim"),
    "conv_transpose2d": (ConvTranspose, [8, 6, 3, 2, 1, 1], lambda: [_x(2, 8, 7, 5)],
                         "conv_transpose2d"),
    # Transposed convolutions beyond 2-D with groups = 1: the layer from the recorded op.
    "conv_transpose2d_grouped": (ConvTranspose, [8, 6, 3, 2, 1, 1, 2, True],
                                 lambda: [_x(2, 8, 7, 5)], "conv_transpose_nd"),
    "conv_transpose1d_dilated": (ConvTranspose1dDilated, [6, 5, 3, 2, 1, 2, True],
                                 lambda: [_x(2, 6, 11)], "conv_transpose_nd"),
    "conv_transpose3d_asymmetric": (ConvTranspose3dAsymmetric,
                                    [4, 6, (3, 2, 3), (2, 1, 2), (1, 0, 1), (1, 0, 0), 2],
                                    lambda: [_x(1, 4, 3, 4, 3)], "conv_transpose_nd"),
    "grouped_conv2d": (GroupedConv, [8, 12, 3, 1, 1, 1, 4], lambda: [_x(2, 8, 9, 7)],
                       "conv2d_implicit_gemm"),
    "gelu_tanh": (Lambda(nn.GELU(approximate="tanh")), [], lambda: [_x(16, 1000)],
                  "elementwise"),
    # KernelBench level 1's matrix-scalar multiplication: the scalar is a forward argument.
    "times_forward_scalar": (Lambda(lambda a, s: a * s), [], lambda: [_x(33, 65), 3.14],
                             "elementwise"),
    "times_constant": (Lambda(lambda a: a * -2.5), [], lambda: [_x(33, 65)], "elementwise"),
    # KernelBench level 1's triangular matmuls: triu / tril of the product (tiles wholly
    # below / above the diagonal skip their K loop), a diagonal offset, a batch.
    "triu_of_product": (Lambda(lambda a, b: torch.triu(torch.matmul(a, b))), [],
                        lambda: [torch.triu(_x(150, 150)), torch.triu(_x(150, 150))],
                        "gemm_tiled"),
    "tril_of_product": (Lambda(lambda a, b: torch.tril(torch.matmul(a, b))), [],
                        lambda: [torch.tril(_x(150, 150)), torch.tril(_x(150, 150))],
                        "gemm_tiled"),
    "triu_offset_rectangular": (Lambda(lambda a, b: torch.triu(a @ b, diagonal=-3)), [],
                                lambda: [_x(100, 70), _x(70, 130)], "gemm_tiled"),
    "tril_offset_batched": (Lambda(lambda a, b: torch.tril(torch.bmm(a, b), 5)), [],
                            lambda: [_x(3, 90, 40), _x(3, 40, 90)], "gemm_tiled"),
    # A.T @ B with a size-1 dim: the transpose's layout is ambiguous ((1, 70) viewed as
    # (70, 1) has a contiguous tensor's strides), the tensor ids tell.
    "transposed_a_k1": (Lambda(lambda a, b: a.T @ b), [], lambda: [_x(1, 70), _x(1, 33)],
                        "gemm_tiled"),
    "transposed_a_m1": (Lambda(lambda a, b: a.T @ b), [], lambda: [_x(70, 1), _x(70, 33)],
                        "gemm_tiled"),
    # One output column is a matvec, but not with a diag or a triangle: those stay the
    # GEMM variants (the matvec templates would drop them).
    "diag_left_one_column": (Lambda(lambda a, b: torch.diag(a) @ b), [],
                             lambda: [_x(45), _x(45, 1)], "gemm_diag"),
    "triu_of_product_one_column": (Lambda(lambda a, b: torch.triu(a @ b)), [],
                                   lambda: [_x(37, 20), _x(20, 1)], "gemm_tiled"),
    # KernelBench level 1's diag(A) @ B: square, so only the tensor ids tell the side; the
    # other side; bf16.
    "diag_left_square": (Lambda(lambda a, b: torch.diag(a) @ b), [],
                         lambda: [_x(96), _x(96, 96)], "gemm_diag"),
    "diag_right": (Lambda(lambda a, b: b @ torch.diag(a)), [],
                   lambda: [_x(70), _x(45, 70)], "gemm_diag"),
    "diag_right_square_bf16": (Lambda(lambda a, b: torch.matmul(b, torch.diag(a))), [],
                               lambda: [_x(64).bfloat16(), _x(64, 64).bfloat16()],
                               "gemm_diag"),
    # KernelBench level 1's MinGPT NewGELU: the tanh approximation written out.
    "mingpt_new_gelu": (Lambda(lambda x: 0.5 * x * (1.0 + torch.tanh(
        math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))), [],
        lambda: [_x(16, 1000)], "elementwise"),
    # 3-D and 1-D convolutions whose constructors are not nn.Conv3d's / nn.Conv1d's order:
    # the candidate builds its layer from the recorded op (CTOR recorded).
    "conv3d_kxkx1_grouped": (Conv3dKxKx1, [4, 8, 3, 1, 1, 1, 2, True],
                             lambda: [_x(1, 4, 4, 5, 6)], "conv3d_implicit_gemm"),
    "conv1d_dilated_strided": (Conv1dDilatedStrided, [6, 10, 3, 2, 3, True],
                               lambda: [_x(2, 6, 40)], "conv3d_implicit_gemm"),
    # KernelBench level 1's convolutions whose constructors are not nn.Conv2d's order: the
    # candidate builds its layer from the recorded op (CTOR recorded). Before it, the first
    # two raised in the host code (nn.Conv2d(1000, None, None): "unsupported operand
    # type(s) for %: 'NoneType' and 'int'"; nn.Conv2d(in, out, None): torch.empty() given a
    # None size).
    "conv_inside_classifier": (ConvInsideClassifier, [1000], lambda: [_x(2, 3, 23, 21)],
                               "conv2d_implicit_gemm"),
    "pointwise_conv_non_square": (PointwiseConv, [6, 10], lambda: [_x(2, 6, 9, 17)],
                                  "conv2d_implicit_gemm"),
    "pointwise_conv_bias_row": (PointwiseConv, [5, 3, True], lambda: [_x(1, 5, 1, 31)],
                                "conv2d_implicit_gemm"),
    "conv_tuple_padding_dilation": (ConvDilatedPadded, [4, 6, (3, 5), 1, (2, 4), (2, 3)],
                                    lambda: [_x(1, 4, 11, 17)], "conv2d_implicit_gemm"),
    "conv_stride_per_dim": (ConvDilatedPadded, [3, 5, (2, 4), (3, 1), (0, 2), (1, 2)],
                            lambda: [_x(2, 3, 10, 7)], "conv2d_implicit_gemm"),
    "conv_same_padding": (ConvSame, [3, 4, (3, 5)], lambda: [_x(1, 3, 6, 17)],
                          "conv2d_implicit_gemm"),
    "depthwise_per_dim": (DepthwisePerDim, [6, 6, 3, 5, 1, 2, 1, 2, 2, 1, 6],
                          lambda: [_x(2, 6, 11, 13)], "conv2d_depthwise"),
    "depthwise_kx1": (DepthwiseKx1, [6, 3, 2, 1, 2], lambda: [_x(2, 6, 9, 11)],
                      "conv2d_depthwise"),
    # Depthwise then pointwise: one fused kernel. Odd channels and pixels, 40 output
    # channels (a masked 64-wide tile), biases, a multiplier, per-dim arguments.
    "depthwise_separable": (DepthwiseSeparable, [6, 10, 3, 1, 1, 1], lambda: [_x(2, 6, 9, 11)],
                            "conv2d_depthwise_separable"),
    "depthwise_separable_bias_strided": (DepthwiseSeparable, [5, 40, 3, 2, 0, 2, True],
                                         lambda: [_x(1, 5, 13, 10)],
                                         "conv2d_depthwise_separable"),
    "depthwise_separable_multiplier": (SeparableOtherNames, [3, 7], lambda: [_x(2, 3, 11, 8)],
                                       "conv2d_depthwise_separable"),
    # KernelBench level 1's L2Norm and L1Norm (`__init__(self)`), rows of 5000 (two
    # passes), over a middle dim (2-D tiles), bf16.
    "l2_normalize": (Lambda(lambda x: x / torch.norm(x, p=2, dim=1, keepdim=True)), [],
                     lambda: [_x(16, 5000)], "row_norm"),
    "l1_normalize": (Lambda(lambda x: x / torch.sum(torch.abs(x), dim=1, keepdim=True)), [],
                     lambda: [_x(16, 5000)], "row_norm"),
    "l2_normalize_mid_dim": (Lambda(lambda x: x / x.norm(dim=1, keepdim=True)), [],
                             lambda: [_x(4, 37, 9)], "row_norm"),
    "l1_normalize_bf16": (Lambda(lambda x: x / torch.sum(torch.abs(x), dim=-1, keepdim=True)),
                          [], lambda: [_x(8, 300).bfloat16()], "row_norm"),
    "l1_vector_norm_bf16": (Lambda(lambda x: x / torch.linalg.vector_norm(x, ord=1, dim=1,
                                                                         keepdim=True)),
                            [], lambda: [_x(8, 300).bfloat16()], "row_norm"),
    # Attention: F.scaled_dot_product_attention (on the CPU its fused op, or the math path
    # when the head dims differ or a backend is forced) and the written-out form.
    "sdpa_cross_d80": (Lambda(F.scaled_dot_product_attention), [],
                       lambda: [_x(2, 3, 17, 80), _x(2, 3, 30, 80), _x(2, 3, 30, 80)],
                       "attention_online"),
    "sdpa_causal_scale_fp16": (Lambda(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.2)), [],
        lambda: [_x(1, 2, 40, 48).half(), _x(1, 2, 25, 48).half(), _x(1, 2, 25, 48).half()],
        "attention_online"),
    "sdpa_one_kv_head_bf16": (Lambda(F.scaled_dot_product_attention), [],
                              lambda: [_x(2, 4, 9, 64).bfloat16(), _x(2, 1, 33, 64).bfloat16(),
                                       _x(2, 1, 33, 64).bfloat16()], "attention_online"),
    "sdpa_value_dim_differs": (Lambda(F.scaled_dot_product_attention), [],
                               lambda: [_x(3, 21, 32), _x(3, 19, 32), _x(3, 19, 24)],
                               "attention_online"),
    "sdpa_math_path_causal": (Lambda(_math_sdpa_causal), [],
                              lambda: [_x(2, 2, 19, 40), _x(2, 2, 19, 40), _x(2, 2, 19, 40)],
                              "attention_online"),
    "attention_written_out": (Lambda(lambda q, k, v: torch.softmax(
        torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1]), dim=-1) @ v), [],
        lambda: [_x(4, 33, 40), _x(4, 50, 40), _x(4, 50, 40)], "attention_online"),
    "attention_written_out_4d_mul": (Lambda(lambda q, k, v: torch.matmul(torch.softmax(
        torch.matmul(q, k.transpose(-2, -1)) * 0.3, dim=-1), v)), [],
        lambda: [_x(2, 3, 17, 16), _x(2, 3, 17, 16), _x(2, 3, 17, 16)], "attention_online"),
    # Sizes inside the module (no constructor arguments): the layer from the recorded op.
    "fixed_conv_transpose2d": (Fixed(lambda: nn.ConvTranspose2d(5, 6, (3, 2), stride=(2, 1),
                                                               padding=1, output_padding=(1, 0),
                                                               dilation=(1, 2))),
                               [], lambda: [_x(2, 5, 6, 7)], "conv_transpose2d"),
    "fixed_layer_norm": (Fixed(lambda: nn.LayerNorm((6, 10), eps=1e-3)), [],
                         lambda: [_x(3, 6, 10)], "row_norm"),
    "fixed_layer_norm_no_bias": (Fixed(lambda: nn.LayerNorm(20, bias=False)), [],
                                 lambda: [_x(7, 20)], "row_norm"),
    "fixed_max_pool1d_dilated": (Fixed(lambda: nn.MaxPool1d(4, stride=1, padding=2,
                                                            dilation=3)),
                                 [], lambda: [_x(2, 3, 40)], "pool_nd"),
    "fixed_max_pool2d_asymmetric": (Fixed(lambda: nn.MaxPool2d((3, 2), stride=(1, 2),
                                                               padding=(1, 0))),
                                    [], lambda: [_x(2, 3, 11, 10)], "pool_nd"),
    "fixed_max_pool3d_dilated": (Fixed(lambda: nn.MaxPool3d(3, stride=2, padding=1,
                                                            dilation=2)),
                                 [], lambda: [_x(1, 2, 9, 10, 11)], "pool_nd"),
    "fixed_avg_pool1d_padded": (Fixed(lambda: nn.AvgPool1d(5, stride=1, padding=2)), [],
                                lambda: [_x(2, 3, 33)], "pool_nd"),
    "fixed_avg_pool2d_exclude_pad": (Fixed(lambda: nn.AvgPool2d(3, stride=2, padding=1,
                                                                count_include_pad=False)),
                                     [], lambda: [_x(2, 3, 9, 12)], "pool_nd"),
    "fixed_avg_pool3d_divisor": (Fixed(lambda: nn.AvgPool3d(2, padding=1,
                                                            divisor_override=5)),
                                 [], lambda: [_x(1, 2, 5, 6, 7)], "pool_nd"),
    "attention_given_k_transposed": (Lambda(lambda q, kt, v: torch.bmm(torch.softmax(
        torch.bmm(q, kt) * 0.125, dim=-1), v)), [],
        lambda: [_x(3, 20, 64), _x(3, 64, 27), _x(3, 27, 64)], "attention_online"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_kernel_matches_reference(name):
    cls, args, inputs_fn, template = CASES[name]
    torch.manual_seed(1234)
    model = cls(*args)
    inputs = inputs_fn()
    source, moves = _first_kernel(record(model, inputs))
    assert source.startswith("# kagent-template: " + template), moves
    assert_matches_reference(name, model, args, inputs, source, moves)


class _ConvRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


class _LayerNormGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(32)

    def forward(self, x):
        return torch.nn.functional.gelu(self.ln(x))


class _LinearRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 32)

    def forward(self, x):
        return torch.relu(self.fc(x))


class _MatmulRelu(nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b)


# name: (model, inputs, text the refusal must contain)
EXTRA_OPS = {
    "sum_of_abs": (Lambda(lambda x: torch.sum(torch.abs(x), dim=1))(), [_x(8, 64)],
                   "aten::abs before aten::sum"),
    "max_of_scaled": (Lambda(lambda x: torch.max(x * 2, dim=1)[0])(), [_x(8, 64)],
                      "aten::mul before aten::max"),
    "mean_of_exp": (Lambda(lambda x: torch.mean(x.exp(), dim=1))(), [_x(8, 64)],
                    "aten::exp before aten::mean"),
    "sum_of_relu": (Lambda(lambda x: torch.sum(torch.relu(x), dim=1))(), [_x(8, 64)],
                    "aten::relu before aten::sum"),
    "softmax_of_shifted": (Lambda(lambda x: torch.softmax(x + 1, dim=1))(), [_x(8, 64)],
                           "aten::add before aten::_softmax"),
    "cumsum_of_square": (Lambda(lambda x: torch.cumsum(x ** 2, dim=1))(), [_x(8, 64)],
                         "aten::pow before aten::cumsum"),
    "relu_times_two": (Lambda(lambda x: torch.relu(x) * 2)(), [_x(8, 64)],
                       "aten::mul after aten::relu"),
    "conv_relu": (_ConvRelu(), [_x(2, 4, 9, 9)], "aten::relu after aten::convolution"),
    # Two convolutions that are not depthwise then pointwise.
    "depthwise_then_conv3x3": (DepthwiseThenConv3x3(), [_x(1, 4, 9, 9)],
                               "aten::convolution after aten::convolution"),
    "layer_norm_gelu": (_LayerNormGelu(), [_x(4, 32)], "aten::gelu after aten::native_layer_norm"),
    "linear_relu": (_LinearRelu(), [_x(4, 64)], "aten::relu after aten::addmm"),
    "matmul_relu": (_MatmulRelu(), [_x(32, 64), _x(64, 32)], "aten::relu after aten::mm"),
    "sdpa_relu": (Lambda(lambda q, k, v: torch.relu(F.scaled_dot_product_attention(q, k, v)))(),
                  [_x(1, 2, 8, 16), _x(1, 2, 8, 16), _x(1, 2, 8, 16)],
                  "aten::relu after aten::_scaled_dot_product_flash_attention_for_cpu"),
    # Decomposed losses with other constants than MSE's and hinge's.
    "mean_of_cubed_difference": (Lambda(lambda p, t: torch.mean((p - t) ** 3))(),
                                 [_x(8, 64), _x(8, 64)], "aten::pow before aten::mean"),
    "hinge_with_margin_two": (Lambda(lambda p, t: torch.mean(torch.clamp(2 - p * t, min=0)))(),
                              [_x(8, 64), _x(8, 64)], "aten::clamp before aten::mean"),
}


@pytest.mark.parametrize("name", sorted(EXTRA_OPS))
def test_extra_compute_ops_are_unimplemented(name):
    model, inputs, why = EXTRA_OPS[name]
    r = _render(record(model, inputs))
    assert r.returncode != 0 and not r.stdout, r.stdout[:200]
    assert "UNIMPLEMENTED: no template family" in r.stderr, r.stderr
    assert why in r.stderr, r.stderr


@pytest.mark.parametrize("model", [
    Lambda(lambda x: F.scaled_dot_product_attention(x, x, x))(),
    Lambda(lambda x: (lambda q, k, v: torch.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1) @ v)(
        *x.chunk(3, dim=-1)))(),
], ids=["sdpa_x_x_x", "written_out_chunk"])
def test_attention_of_one_input_is_unimplemented(model):
    # The template's forward takes Q, K, V: views of one tensor are refused, not misread.
    r = _render(record(model, [_x(2, 9, 48)]))
    assert r.returncode != 0 and not r.stdout, r.stdout[:200]
    assert "UNIMPLEMENTED: no template family for attention/" in r.stderr, r.stderr
    assert "shared_inputs" in r.stderr, r.stderr


def test_attention_with_a_mask_tensor_is_unimplemented():
    # attention_online has is_causal only: an attn_mask tensor is refused, not dropped.
    model = Lambda(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m))()
    q, k, v = _x(1, 2, 8, 16), _x(1, 2, 8, 16), _x(1, 2, 8, 16)
    r = _render(record(model, [q, k, v, torch.ones(8, 8, dtype=torch.bool).tril()]))
    assert r.returncode != 0 and not r.stdout, r.stdout[:200]
    assert "UNIMPLEMENTED: no template family for attention/sdpa" in r.stderr, r.stderr
    tags = r.stderr.split("[", 1)[1].split("]", 1)[0].split(",")
    assert "masked" in tags and "shared_inputs" not in tags, r.stderr
