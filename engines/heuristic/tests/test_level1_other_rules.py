"""The brain's first kernels for KernelBench level 1's 47 problems that are neither matrix
products nor convolutions (tests/gpu/level1_other: activations, softmax, norms written as
modules and written out, pooling, reductions over a dim, arg-reductions, scans, losses and
scaled-dot-product attention, at KernelBench's sizes), on an H200's description (sm_90,
132 SMs): every one gets a first kernel, from the template family written for its class.
With tests/gpu/level1_gemm and level1_conv (test_level1_gemm_rules.py,
test_level1_conv_rules.py) this covers all 100 problems of level 1. Render only, on the
meta device (full sizes, no memory)."""
import os
import re

import pytest

from template_render import REPO
from test_level1_gemm_rules import assert_builds_the_reference_layers, first_kernel
from test_problems_first_kernel import BINARY

pytestmark = pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")

FOLDER = os.path.join(REPO, "tests", "gpu", "level1_other")
NAMES = sorted(f[:-3] for f in os.listdir(FOLDER) if re.match(r"\d\d\d_.*\.py$", f))
# The template of each class, by the problem's number.
ELEMENTWISE = set(range(19, 33)) | {88}
TEMPLATE_OF = {**{n: "elementwise" for n in ELEMENTWISE},
               23: "softmax_online", 24: "softmax_online",
               33: "channel_norm", 34: "channel_norm", 35: "channel_norm",
               36: "row_norm", 37: "frobenius_norm", 38: "row_norm", 39: "row_norm",
               40: "row_norm",
               **{n: "pool_nd" for n in range(41, 47)},
               **{n: "reduce_dim" for n in (47, 48, 49, 51, 52, 53)},
               **{n: "scan_rows" for n in range(89, 94)},
               94: "loss_reduce", 95: "loss_rows", 96: "loss_reduce", 97: "attention_online",
               98: "loss_reduce", 99: "loss_rows", 100: "loss_reduce"}


def test_the_folder_holds_the_rest_of_level_1():
    numbers = [int(n[:3]) for n in NAMES]
    assert len(NAMES) == 47 and sorted(numbers) == sorted(TEMPLATE_OF)
    gemm = os.listdir(os.path.join(REPO, "tests", "gpu", "level1_gemm"))
    conv = os.listdir(os.path.join(REPO, "tests", "gpu", "level1_conv"))
    assert len([f for f in gemm + conv if f.endswith(".py")]) + len(NAMES) == 100


@pytest.mark.parametrize("name", NAMES)
def test_each_problem_starts_on_its_class_template(name):
    source = first_kernel(FOLDER, name)
    template = source.split("\n", 1)[0].split(": ")[-1]
    assert template == TEMPLATE_OF[int(name[:3])], f"{name}: {template}"


@pytest.mark.parametrize("name", NAMES)
def test_each_problems_first_kernel_builds_the_reference_layers(name, monkeypatch):
    # Every one of these modules holds its sizes inside (no constructor arguments).
    assert_builds_the_reference_layers(FOLDER, name, first_kernel(FOLDER, name), monkeypatch)
