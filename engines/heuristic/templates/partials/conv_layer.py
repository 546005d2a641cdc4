# Python, for a convolution template whose module builds the reference's layer (before
# `class ModelNew(_ConvLayer)`; after `_TEMPLATE = "<id>"`): the layer built from the shape
# params (DIMS, channels, KERNEL/STRIDE/PADDING/DILATION_D/H/W, BIAS) as `self.conv`, the
# dims as `self.dims` and the geometry the CUDA wrappers take as `self.geometry`.
_DTYPE = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _per_dim(dims, d, h, w):
    """The module's per-dim value: an int for Conv1d, an (H, W) or (D, H, W) tuple."""
    return (w,) if dims == 1 else (h, w) if dims == 2 else (d, h, w)


class _ConvLayer(nn.Module):
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
