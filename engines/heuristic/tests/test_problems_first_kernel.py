"""The heuristic brain's first kernel for every problem of the suite (problems/).

For each problem: record the reference's op signature with the harness, ask the C++ brain
for its first kernel (`kagent-template-render --first-kernel`, found through
KAGENT_TEMPLATE_RENDER or in build/), check the template it chose (PROBLEMS, which mirrors
SelectTemplate in template_rules.cc), and compare it with the reference the harness's way
(one seed for both constructors, the reference's state_dict loaded when the keys match,
|c - r| <= atol * max(1, RMS(r)) + rtol * |r| with the default tolerances by dtype), at
KAGENT_PROBLEM_SCALE (default here 300; the scans at their 3-row floor, since the
interpreter runs tl.associative_scan slowly; every other problem takes at most a few
seconds at 300) under Triton's interpreter. A problem whose op has no template is listed
as UNIMPLEMENTED: the brain must say so (status UNIMPLEMENTED) rather than render
something. KNOWN_WRONG lists first kernels known not to match, as strict xfails.
Skipped without the binary.
"""
import importlib.util
import json
import os
import subprocess
import sys

SCALE = os.environ.get("KAGENT_PROBLEM_SCALE", "300")

import pytest  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "python"))

from kagent_harness import compare  # noqa: E402
from kagent_harness.signature import record  # noqa: E402
import template_render  # noqa: E402


BINARY = template_render.cli_binary()
pytestmark = pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")

# The brain has no template for the op: FirstKernel answers UNIMPLEMENTED.
UNIMPLEMENTED = "UNIMPLEMENTED"

PROBLEMS = {
    "01_matmul_square_fp32": "gemm_tiled",
    "02_matmul_square_bf16": "gemm_tiled",
    "03_matmul_tall_skinny_fp32": "gemm_tiled",
    "04_matmul_small_k_bf16": "gemm_tiled",
    "05_matmul_large_k_fp32": "gemm_tiled",
    "06_matmul_batched_fp32": "gemm_tiled",
    "07_matmul_transposed_a_bf16": "gemm_tiled",
    "08_matvec_bf16": "matvec_split_k",
    "09_gemv_fp32": "matvec_split_k",
    "10_relu_fp32": "elementwise",
    "11_leaky_relu_fp32": "elementwise",
    "12_gelu_bf16": "elementwise",
    "13_sigmoid_fp32": "elementwise",
    "14_tanh_bf16": "elementwise",
    "15_softplus_fp32": "elementwise",
    "16_elu_fp32": "elementwise",
    "17_selu_bf16": "elementwise",
    "18_hardtanh_fp32": "elementwise",
    "19_swish_bf16": "elementwise",
    "20_sum_dim_fp32": "reduce_dim",
    "21_mean_dim_bf16": "reduce_dim",
    "22_max_dim_fp32": "reduce_dim",
    "23_argmax_dim_fp32": "reduce_dim",
    "24_min_dim_bf16": "reduce_dim",
    "25_softmax_fp32": "softmax_online",
    "26_log_softmax_bf16": "softmax_online",
    "27_layernorm_bf16": "row_norm",
    "28_rmsnorm_fp32": "row_norm",
    # Inference BatchNorm (a per-channel affine of the running statistics) and GroupNorm
    # (statistics per channel group, per-channel weights): channel_norm.
    "29_batchnorm_inference_fp32": "channel_norm",
    "30_groupnorm_fp32": "channel_norm",
    "31_maxpool1d_fp32": "pool_nd",
    "32_avgpool1d_bf16": "pool_nd",
    "33_maxpool2d_fp32": "pool_nd",
    "34_avgpool2d_bf16": "pool_nd",
    "35_conv2d_fp32": "conv2d_implicit_gemm",
    "36_conv2d_depthwise_fp32": "conv2d_depthwise",
    "37_mse_loss_fp32": "loss_reduce",
    "38_cross_entropy_fp32": "loss_rows",
    "39_hinge_loss_fp32": "loss_reduce",
    "40_kl_div_fp32": "loss_reduce",
    "41_smooth_l1_loss_bf16": "loss_reduce",
    "42_cosine_similarity_loss_fp32": "loss_rows",
    "43_cumsum_fp32": "scan_rows",
    "44_cumprod_fp32": "scan_rows",
    "45_conv_transpose2d_fp32": "conv_transpose2d",
    # Dilated, grouped, and strided with a non-square kernel: conv2d_implicit_gemm takes
    # stride, padding, dilation and groups from the constructor's arguments (nn.Conv2d order).
    "46_conv2d_dilated_bf16": "conv2d_implicit_gemm",
    "47_conv2d_grouped_fp32": "conv2d_implicit_gemm",
    "48_conv2d_strided_asymmetric_fp32": "conv2d_implicit_gemm",
    "49_conv3d_fp32": "conv3d_implicit_gemm",
    "50_conv1d_bf16": "conv3d_implicit_gemm",
    # InstanceNorm2d reaches the dispatcher as aten::native_batch_norm in training mode on
    # the input viewed as (1, N * C, H, W): channel_norm refuses it (KNOWN_WRONG).
    "51_instance_norm_fp32": "channel_norm",
    "52_frobenius_norm_fp32": "frobenius_norm",
    "53_l2_norm_fp32": "row_norm",
    "54_l1_norm_bf16": "row_norm",
    "55_maxpool3d_fp32": "pool_nd",
    "56_avgpool3d_fp32": "pool_nd",
    "57_reverse_cumsum_fp32": "scan_rows",
    "58_masked_cumsum_fp32": "scan_rows",
    "59_triplet_margin_loss_fp32": "loss_rows",
    # Transposed 1-D, 3-D and grouped 2-D convolutions: the layer from the recorded
    # aten::convolution (shapes, per-dim stride / padding / output_padding / dilation, groups).
    "60_conv_transpose1d_fp32": "conv_transpose_nd",
    "61_conv_transpose3d_bf16": "conv_transpose_nd",
    "62_conv_transpose2d_grouped_fp32": "conv_transpose_nd",
    # F.scaled_dot_product_attention: on the CPU aten::_scaled_dot_product_flash_attention_for_cpu.
    "63_sdpa_fp32": "attention_online",
    "64_sdpa_causal_bf16": "attention_online",
    # Normalizations written out: x / mean(|x|) over a middle dim, x / max(|x|) per row.
    "65_l1_norm_mean_dim_fp32": "row_norm",
    "66_max_norm_bf16": "row_norm",
    # BatchNorm modules in training mode (batch statistics, running statistics updated).
    "67_batchnorm2d_training_fp32": "channel_norm",
    "68_batchnorm1d_training_fp32": "channel_norm",
    # A diagonal product written as a broadcast multiply: gemm_diag's row scale.
    "69_diag_broadcast_matmul_fp32": "gemm_diag",
    # KernelBench level 1's depthwise-separable conv (one fused kernel), its pointwise conv
    # built from (in, out) and its stem conv built from (num_classes): the layer comes from
    # the recorded op, whatever the constructor takes.
    "70_conv2d_depthwise_separable_fp32": "conv2d_depthwise_separable",
    "71_conv2d_pointwise_fp32": "conv2d_implicit_gemm",
    "72_conv2d_stem_asymmetric_fp32": "conv2d_implicit_gemm",
    # Second shapes (issue 19): other aspect ratios, odd sizes, other constructor forms.
    "73_conv2d_stem_7x7_fp32": "conv2d_implicit_gemm",
    "74_conv2d_asymmetric_input_bf16": "conv2d_implicit_gemm",
    "75_conv2d_asymmetric_kernel_fp32": "conv2d_implicit_gemm",
    "76_conv2d_dilated_padded_asymmetric_fp32": "conv2d_implicit_gemm",
    "77_frobenius_norm_odd_fp32": "frobenius_norm",
    "78_conv2d_grouped_g6_fp32": "conv2d_implicit_gemm",
    "79_conv2d_deep_small_spatial_bf16": "conv2d_implicit_gemm",
    "80_conv1d_strided_dilated_fp32": "conv3d_implicit_gemm",
    "81_conv1d_grouped_bf16": "conv3d_implicit_gemm",
    "82_conv3d_asymmetric_input_fp32": "conv3d_implicit_gemm",
    "83_conv3d_asymmetric_kernel_strided_fp32": "conv3d_implicit_gemm",
    "84_conv3d_dilated_bf16": "conv3d_implicit_gemm",
    "85_conv2d_depthwise_asymmetric_kernel_fp32": "conv2d_depthwise",
    "86_conv2d_depthwise_multiplier_bf16": "conv2d_depthwise",
    "87_conv2d_depthwise_strided_asymmetric_fp32": "conv2d_depthwise",
    "88_conv3d_grouped_strided_fp32": "conv3d_implicit_gemm",
    "89_conv2d_single_image_fp32": "conv2d_implicit_gemm",
    "90_matmul_irregular_fp32": "gemm_tiled",
    "91_tanh_tall_odd_fp32": "elementwise",
    "92_softmax_wide_odd_fp32": "softmax_online",
    "93_sum_last_dim_odd_fp32": "reduce_dim",
    "94_layernorm_multidim_fp32": "row_norm",
    "95_groupnorm_odd_fp32": "channel_norm",
    "96_maxpool2d_dilated_odd_fp32": "pool_nd",
    "97_cross_entropy_odd_fp32": "loss_rows",
    "98_smooth_l1_loss_odd_fp32": "loss_reduce",
    "99_cumsum_wide_odd_fp32": "scan_rows",
}
SCALES = {"43_cumsum_fp32": "100000", "44_cumprod_fp32": "100000",
          "57_reverse_cumsum_fp32": "100000", "58_masked_cumsum_fp32": "100000",
          "99_cumsum_wide_odd_fp32": "100000"}
# First kernels known to be wrong, with why; strict, so a fix shows up as XPASS.
# (85 and 87, depthwise convolutions with per-dim stride, padding or dilation, were here
# while conv2d_depthwise inferred one stride and padding for both dims. 17_selu_bf16 was
# here until the signature recorded scalar arguments: torch.selu reaches the dispatcher
# as aten::elu(x, alpha=1.6733, scale=1.0507), which looked like F.elu(x) without them.
# 51_instance_norm_fp32 was here while a batch of one, which the CPU scale gives it,
# looked like training-mode BatchNorm: InstanceNorm's view to (1, N*C, H, W) changes
# nothing when N = 1.)
KNOWN_WRONG = {}


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _render(signature):
    return subprocess.run([BINARY, "--first-kernel", "132"], input=json.dumps(signature),
                          capture_output=True, text=True)


def _first_kernel(signature):
    r = _render(signature)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


def _exec(source, name):
    return template_render.exec_source(source, f"first_{name}").ModelNew


def test_every_problem_is_listed():
    names = sorted(f[:-3] for f in os.listdir(os.path.join(REPO, "problems"))
                   if f[:2].isdigit() and f.endswith(".py") and not f.endswith("_start.py"))
    assert names == sorted(PROBLEMS)


def _params():
    out = []
    for name, template in PROBLEMS.items():
        marks = []
        if name in KNOWN_WRONG:
            marks = [pytest.mark.xfail(strict=True, raises=AssertionError, reason=KNOWN_WRONG[name])]
        elif template == UNIMPLEMENTED:
            continue
        out.append(pytest.param(name, marks=marks))
    return out


def _problem(name, monkeypatch):
    # Problems read the scale when they are imported.
    monkeypatch.setenv("KAGENT_PROBLEM_SCALE", SCALES.get(name, SCALE))
    prob = _load(os.path.join(REPO, "problems", name + ".py"), f"prob_{name}")
    torch.manual_seed(1234)
    init = list(prob.get_init_inputs())
    model = prob.Model(*init)
    inputs = prob.get_inputs()
    return prob, init, model, inputs, record(model, inputs)


@pytest.mark.parametrize("name", [n for n, t in PROBLEMS.items() if t == UNIMPLEMENTED])
def test_no_template_is_unimplemented(name, monkeypatch):
    sig = _problem(name, monkeypatch)[-1]
    r = _render(sig)
    assert r.returncode != 0 and not r.stdout, r.stderr
    assert "UNIMPLEMENTED: no template family" in r.stderr, r.stderr


def assert_matches_reference(name, model, init, inputs, source, moves, seed=1234):
    """The first kernel `source` against the reference `model` the harness's way: the
    candidate built from the same constructor arguments under the same seed, the
    reference's state_dict loaded when the keys and shapes match, outputs compared with
    atol * max(1, RMS) and rtol by dtype."""
    torch.manual_seed(seed)
    cand = _exec(source, name)(*init)
    ref_state, own = model.state_dict(), cand.state_dict()
    if own and set(own) == set(ref_state) and all(own[k].shape == ref_state[k].shape for k in own):
        cand.load_state_dict(ref_state)
    with torch.no_grad():
        ref = model(*inputs)
        out = cand(*[t.clone() if torch.is_tensor(t) else t for t in inputs])
    assert out.shape == ref.shape and out.dtype == ref.dtype
    atol, rtol = compare.tolerances([ref])
    rms = ref.double().pow(2).mean().sqrt().item() if ref.numel() else 0.0
    res = compare.compare([ref], [out], atol * max(1.0, rms), rtol)
    assert res["ok"], f"{name} ({moves.strip()}): {res['reason']}"


@pytest.mark.parametrize("name", _params())
def test_first_kernel_matches_reference(name, monkeypatch):
    prob, init, model, inputs, sig = _problem(name, monkeypatch)
    source, moves = _first_kernel(sig)
    assert source.startswith("# kagent-template: " + PROBLEMS[name]), moves
    assert_matches_reference(name, model, init, inputs, source, moves)
