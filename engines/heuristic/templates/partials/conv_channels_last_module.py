# Python, for a CUTLASS convolution template (after partials/conv_layer, `_ext`, its
# extension with the `conv` of partials/conv_channels_last_wrapper, and `_PAD_CHANNELS_TO`,
# the input channel count the kernel wants, zero-padded, or 0): a forward that permutes the
# input and weight to channels-last and returns the result as an NC(D)HW view.
class ModelNew(_ConvLayer):
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
