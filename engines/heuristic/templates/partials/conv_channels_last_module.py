# Python, for a CUTLASS convolution template (after `_TEMPLATE = "<id>"`, `_ext`, its
# extension with the `conv` of partials/conv_channels_last_wrapper, and `_PAD_CHANNELS_TO`,
# the input channel count the kernel wants, zero-padded, or 0): the layer built from
# the shape params (DIMS, channels, KERNEL/STRIDE/PADDING/DILATION_D/H/W, BIAS, DTYPE) and
# a forward that permutes the input and weight to channels-last and returns the result as
# an NC(D)HW view.
_DTYPE = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _per_dim(dims, d, h, w):
    """The module's per-dim value: an int for Conv1d, an (H, W) or (D, H, W) tuple."""
    return (w,) if dims == 1 else (h, w) if dims == 2 else (d, h, w)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # The layer comes from the params alone (CTOR recorded: channels, kernel, stride,
        # padding, dilation and bias as the recorded aten::convolution had them), whatever
        # the order of the reference's constructor, and is built as the reference's, so the
        # same seed gives the same weights (stride and the like draw nothing).
        dims = {{DIMS}}
        self.dims = dims
        if kwargs.get("padding_mode", "zeros") != "zeros":
            raise NotImplementedError(f"{_TEMPLATE}: only padding_mode='zeros'")
        module = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}[dims]
        self.conv = module(
            {{IN_CHANNELS}}, {{OUT_CHANNELS}},
            _per_dim(dims, {{KERNEL_D}}, {{KERNEL_H}}, {{KERNEL_W}}),
            stride=_per_dim(dims, {{STRIDE_D}}, {{STRIDE_H}}, {{STRIDE_W}}),
            padding=_per_dim(dims, {{PADDING_D}}, {{PADDING_H}}, {{PADDING_W}}),
            dilation=_per_dim(dims, {{DILATION_D}}, {{DILATION_H}}, {{DILATION_W}}),
            bias={{BIAS}})
        # The geometry the kernel takes: padding, stride, dilation as (D, H, W), the
        # missing leading dims unit.
        lead = 3 - dims
        self.geometry = ([0] * lead + list(self.conv.padding) + [1] * lead +
                         list(self.conv.stride) + [1] * lead + list(self.conv.dilation))

    def forward(self, x):
        dims = self.dims
        if x.dim() == dims + 1:  # an unbatched input, as nn.Conv*d accepts it
            return self.forward(x.unsqueeze(0)).squeeze(0)
        if x.dim() != dims + 2:
            raise ValueError(f"{_TEMPLATE}: a rank-{x.dim()} input to a {dims}-D conv")
        dtype = _DTYPE["{{DTYPE}}"]
        if x.dtype != dtype:
            raise TypeError(f"{_TEMPLATE}: rendered for {dtype}, the input is {x.dtype}")
        w = self.conv.weight
        bias = self.conv.bias
        if w.dtype != dtype:
            w = w.to(dtype)
            bias = bias.to(dtype) if bias is not None else None
        # Channels last, as 5-D (N, D, H, W, C) and (K, T, R, S, C) with unit leading dims.
        lead = (1,) * (3 - dims)
        x5 = x.reshape(x.shape[0], x.shape[1], *lead, *x.shape[2:])
        w5 = w.reshape(w.shape[0], w.shape[1], *lead, *w.shape[2:])
        x5, w5 = x5.permute(0, 2, 3, 4, 1), w5.permute(0, 2, 3, 4, 1)
        if _PAD_CHANNELS_TO > x5.shape[-1]:  # zero channels add nothing to the products
            pad = (0, _PAD_CHANNELS_TO - x5.shape[-1])
            x5, w5 = nn.functional.pad(x5, pad), nn.functional.pad(w5, pad)
        y5 = _ext.conv(x5.contiguous(), w5.contiguous(), bias, self.geometry)
        # (N, Z, P, Q, K) back to the reference's (N, K, *spatial) as a view.
        y = y5.permute(0, 4, 1, 2, 3)
        return y.reshape(y.shape[0], y.shape[1], *y.shape[2 + 3 - dims:]) if dims < 3 else y
