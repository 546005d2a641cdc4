# kagent-template: elementwise
# One unary activation over a flat contiguous view: each program handles BLOCK elements,
# computes in fp32 and stores in the input dtype. The op is a constexpr string so one
# kernel covers every activation; ALPHA/BETA carry its scalar parameters, SCALE and
# INPUT_SCALE aten::elu's other two (1 for F.elu; SELU is OP selu).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _tanh(x):
    # 1 - 2 / (exp(2x) + 1): saturates to +-1 without overflow trouble.
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)


@triton.jit
def _softplus(x, beta, threshold):
    bx = beta * x
    soft = tl.log(1.0 + tl.exp(-tl.abs(bx))) + tl.maximum(bx, 0.0)
    return tl.where(bx > threshold, x, soft / beta)


@triton.jit
def elementwise_kernel(x_ptr, y_ptr, n, alpha, beta, scale, input_scale,
                       BLOCK: tl.constexpr, OP: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    # Clamps propagate NaN as torch does (max.f32 on the GPU would return the other operand).
    if OP == "relu":
        y = tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "relu6":
        y = tl.minimum(tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL), 6.0, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "leaky_relu":
        y = tl.where(x >= 0.0, x, x * alpha)
    elif OP == "gelu":
        y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    elif OP == "gelu_tanh":
        y = 0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
    elif OP == "sigmoid":
        y = _sigmoid(x)
    elif OP == "tanh":
        y = _tanh(x)
    elif OP == "softplus":
        y = _softplus(x, alpha, beta)
    elif OP == "softsign":
        y = x / (1.0 + tl.abs(x))
    elif OP == "elu":
        # aten::elu: scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1)).
        y = scale * tl.where(x > 0.0, x, alpha * (tl.exp(x * input_scale) - 1.0))
    elif OP == "selu":
        y = 1.0507009873554805 * tl.where(x > 0.0, x, 1.6732632423543772 * (tl.exp(x) - 1.0))
    elif OP == "celu":
        y = tl.maximum(x, 0.0, propagate_nan=tl.PropagateNan.ALL) + tl.minimum(0.0, alpha * (tl.exp(x / alpha) - 1.0))
    elif OP == "hardtanh":
        y = tl.minimum(tl.maximum(x, alpha, propagate_nan=tl.PropagateNan.ALL), beta, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "hardsigmoid":
        y = tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0, propagate_nan=tl.PropagateNan.ALL), 1.0, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "hardswish":
        y = x * tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0, propagate_nan=tl.PropagateNan.ALL), 1.0, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "swish":
        y = x * _sigmoid(x)
    elif OP == "mish":
        y = x * _tanh(_softplus(x, 1.0, 20.0))
    elif OP == "exp":
        y = tl.exp(x)
    elif OP == "abs":
        y = tl.abs(x)
    elif OP == "neg":
        y = -x
    elif OP == "square":
        y = x * x
    elif OP == "scale":
        y = x * scale
    else:
        tl.static_assert(False, "unknown elementwise op")
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _arg(args, kwargs, index, name, default):
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else default


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # Scalar parameters by the names torch uses (negative_slope, alpha, min_val, ...);
        # positional constructor arguments in the same order as torch's functional form.
        self.alpha = float(_arg(args, kwargs, 0, "{{ALPHA_NAME}}", {{ALPHA}}))
        self.beta = float(_arg(args, kwargs, 1, "{{BETA_NAME}}", {{BETA}}))
        # aten::elu's scale and input_scale: no constructor keyword, from the signature.
        self.scale = {{SCALE}}
        self.input_scale = {{INPUT_SCALE}}

    def forward(self, x, *rest):
        # OP scale: x * s with s a forward argument (KernelBench's A * s), else the constant
        # the reference multiplied by.
        scale = float(rest[0]) if "{{OP}}" == "scale" and rest else self.scale
        {{> flat_prologue}}
        grid = (triton.cdiv(n, BLOCK),)
        elementwise_kernel[grid](x, y, n, self.alpha, self.beta, scale, self.input_scale,
                                 BLOCK=BLOCK, OP="{{OP}}", num_warps={{num_warps}})
        return y
