# Python, for a CUTLASS convolution template (after partials/conv_layer, `_ext`, its
# extension with the `conv` of partials/conv_channels_last_wrapper, `_PAD_CHANNELS_TO`, the
# input channel count the kernel wants, zero-padded, or 0, and `_FOLD_DEPTH_ALIGN`, the
# channel multiple of a 3-D convolution folded into a 2-D one, or 0): a forward that
# permutes the input and weight to channels-last and returns the result as an NC(D)HW view.
def _fold_depth(x, w, conv, align):
    """A 3-D convolution as a 2-D one over (H, W) with its KD depth taps folded into the
    channels: x (N, C, D, H, W) -> (N * OD, 1, H, W, CP) channels-last, output depth od's
    KD input planes (zero planes in the depth padding) side by side as channel c * KD + kd,
    CP = C * KD rounded up to `align` with zero channels; w (K, C, KD, KH, KW) -> (K, 1, KH,
    KW, CP) in the same order. Returns (x', w', the 2-D geometry, OD)."""
    (sd, sh, sw), (pd, ph, pw), (dd, dh, dw) = conv.stride, conv.padding, conv.dilation
    N, C, D, H, W = x.shape
    K, _, KD, KH, KW = w.shape
    OD = (D + 2 * pd - dd * (KD - 1) - 1) // sd + 1
    if OD <= 0:
        raise RuntimeError(f"{_TEMPLATE}: an empty output along the depth")
    xp = nn.functional.pad(x, (0, 0, 0, 0, pd, pd)) if pd else x
    cp = -(-C * KD // align) * align
    xf = x.new_zeros(N, OD, H, W, cp)
    taps = xf[..., :C * KD].unflatten(-1, (C, KD))      # (N, OD, H, W, C, KD), a view
    for kd in range(KD):
        plane = xp[:, :, kd * dd: kd * dd + sd * (OD - 1) + 1: sd]   # (N, C, OD, H, W)
        taps[..., kd].copy_(plane.permute(0, 2, 3, 4, 1))
    wf = w.new_zeros(K, KH, KW, cp)
    wf[..., :C * KD] = w.permute(0, 3, 4, 1, 2).reshape(K, KH, KW, C * KD)
    geometry = [0, ph, pw, 1, sh, sw, 1, dh, dw]
    return xf.view(N * OD, 1, H, W, cp), wf.unsqueeze(1), geometry, OD


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
        if _FOLD_DEPTH_ALIGN:
            xf, wf, geometry, od = _fold_depth(x, w, self.conv, _FOLD_DEPTH_ALIGN)
            yf = _ext.conv(xf, wf, bias, geometry)     # (N * OD, 1, OH, OW, K)
            y = yf.view(x.shape[0], od, yf.shape[2], yf.shape[3], yf.shape[4])
            return y.permute(0, 4, 1, 2, 3)
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
