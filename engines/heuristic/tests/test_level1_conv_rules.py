"""The brain's first kernels for KernelBench level 1's 35 convolutions (tests/gpu/level1_conv:
standard 1-D, 2-D and 3-D with square and asymmetric inputs and kernels, stride, padding and
dilation; transposed 1-D, 2-D and 3-D, grouped, strided, dilated; depthwise,
depthwise-separable and pointwise; at KernelBench's sizes), on an H200's description (sm_90,
132 SMs): every one gets a first kernel, each class from the template family written for it,
and the standard 1-D and 2-D ones on the tensor cores (CUTLASS's implicit GEMM in 3xTF32):
a rule that falls back to a Triton FMA kernel for them (0.2-0.6x cuDNN) fails here before a
GPU is held. Render only, on the meta device (full sizes, no memory). The GPU figures:
tests/gpu/README.md (level1_conv)."""
import re

import pytest

from test_level1_gemm_rules import assert_builds_the_reference_layers, first_kernel
from test_problems_first_kernel import BINARY
from template_render import REPO

pytestmark = pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")

FOLDER = f"{REPO}/tests/gpu/level1_conv"
NAMES = sorted(f[:-3] for f in __import__("os").listdir(FOLDER) if re.match(r"\d\d_.*\.py$", f))


def _templates_for(name):
    """The templates a problem's class may start from, by the name's class words."""
    if "depthwise_separable" in name:
        return ("conv2d_depthwise_separable",)
    if "depthwise" in name:
        return ("conv2d_depthwise",)
    if "conv_transpose2d" in name:
        return ("conv_transpose2d", "conv_transpose_nd")
    if "conv_transpose" in name:
        return ("conv_transpose_nd",)
    if "pointwise" in name:
        return ("conv_pointwise_gemm",)  # bias-free, 16-byte accesses: the batched GEMM
    if name[3:].startswith("conv3d"):
        return ("conv3d_implicit_gemm", "conv_cutlass_fprop")
    return ("conv_cutlass_fprop",)  # standard 1-D and 2-D, stems included


def test_the_folder_holds_every_convolution_of_level_1():
    assert len(NAMES) == 35 and NAMES[0].startswith("50_") and NAMES[-1].startswith("87_")


@pytest.mark.parametrize("name", NAMES)
def test_each_convolution_starts_on_its_class_template(name):
    source = first_kernel(FOLDER, name)
    template = source.split("\n", 1)[0].split(": ")[-1]
    assert template in _templates_for(name), f"{name}: {template}"


@pytest.mark.parametrize("name", NAMES)
def test_each_convolutions_first_kernel_builds_the_reference_layers(name, monkeypatch):
    # Every one of these modules holds its sizes inside (no constructor arguments).
    assert_builds_the_reference_layers(FOLDER, name, first_kernel(FOLDER, name), monkeypatch)
