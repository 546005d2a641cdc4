"""The knob tuner on users' own kernels, run for real under Triton's interpreter.

`kagent-template-render --tune KNOB=CHANGE ...` applies the C++ knob tuner (the brain's
move on a kernel with no template) to a source; the tuned kernel must still run and
match the reference. For an @triton.autotune'd kernel the change adds configs to its list,
and the autotuner, which benchmarks every config at the first call, must find and run
them.
"""
import subprocess
import time

import pytest
import torch

import template_render

BINARY = template_render.cli_binary()
pytestmark = pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")

AUTOTUNED_RELU = '''import torch
import torch.nn as nn
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_SIZE": 64}, num_warps=2),
    triton.Config({"BLOCK_SIZE": 128}),  # a comment that stays with its config
]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
        relu_kernel[grid](x, y, n)
        return y
'''

PLAIN_SCALE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, x * 3.0, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK = 128
        scale_kernel[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=2)
        return y
'''


def _wall_clock_bench(fn, quantiles):
    start = time.perf_counter()
    fn()
    elapsed_ms = (time.perf_counter() - start) * 1e3
    return [elapsed_ms for _ in quantiles]


def _tune(source, *changes):
    return subprocess.run([BINARY, "--tune", *changes], input=source, capture_output=True,
                          text=True)


def _module(source, name):
    return template_render.exec_source(source, f"tuned_{name}")


@pytest.mark.parametrize("n", [1, 100, 1000, 4097])
def test_autotuned_kernel_gets_configs_and_still_matches(n):
    # The first config doubled (128, 4 warps) launches like the second (Triton's default
    # is 4 warps): only the second doubled is new.
    r = _tune(AUTOTUNED_RELU, "BLOCK_SIZE=x2", "num_warps=x2")
    assert r.returncode == 0, r.stderr
    assert "autotune configs of relu_kernel (1 config added; the autotuner picks among 3)" in r.stderr
    assert "    triton.Config({\"BLOCK_SIZE\": 128}),  # a comment that stays with its config\n" \
           "    triton.Config({\"BLOCK_SIZE\": 256}, num_warps=8),\n]" in r.stdout
    module = _module(r.stdout, f"relu_{n}")
    tuner = module.relu_kernel
    assert [(c.kwargs["BLOCK_SIZE"], c.num_warps) for c in tuner.configs] == [
        (64, 2), (128, 4), (256, 8)]
    # Triton's autotuner times configs through the GPU driver; the interpreter has none, so
    # it gets a wall-clock timer. It still runs every config and then the one it picked.
    tuner.do_bench = _wall_clock_bench
    x = torch.randn(n)
    torch.testing.assert_close(module.ModelNew()(x), torch.relu(x), rtol=0, atol=0)
    assert len(tuner.configs_timings) == 3
    assert tuner.best_config in tuner.configs


def test_autotuned_kernel_without_a_new_config_is_refused():
    once = _tune(AUTOTUNED_RELU, "BLOCK_SIZE=65536")
    assert once.returncode == 0, once.stderr
    twice = _tune(once.stdout, "BLOCK_SIZE=65536")
    assert twice.returncode == 2
    assert "FAILED_PRECONDITION" in twice.stderr and "gives no config it does not have" in twice.stderr


def test_plain_user_kernel_knobs_are_rewritten_and_still_match():
    r = _tune(PLAIN_SCALE, "BLOCK=x4", "num_warps=x2")
    assert r.returncode == 0, r.stderr
    assert "BLOCK = 512" in r.stdout and "num_warps=4" in r.stdout
    x = torch.randn(3001)
    torch.testing.assert_close(_module(r.stdout, "scale").ModelNew()(x), x * 3.0)
