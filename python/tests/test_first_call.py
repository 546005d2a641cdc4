"""tests/gpu/first_call.py's CPU side: the conditions' environments (a misspelt part is
refused rather than run as something else), its child program compiles, and the thread
sampling reads this process."""

import os

import pytest

from conftest import gpu_script


@pytest.fixture(scope="module")
def fc():
    return gpu_script("first_call")


def test_each_condition_sets_its_environment(fc):
    base = {"PATH": "/bin", "KAGENT_CUPTI_LIB": "/x/libkagent_cupti.so"}
    env = fc.condition_env("cupti+eager+home", base, "/h")
    assert env["CUDA_MODULE_LOADING"] == "EAGER"
    assert env["CUDA_INJECTION64_PATH"] == "/x/libkagent_cupti.so"
    assert env["HOME"] == "/h" and env["CUDA_CACHE_PATH"] == "/h/ComputeCache"
    assert "CUDA_CACHE_DISABLE" not in env
    plain = fc.condition_env("recorder+warmcpu", base, "/h")
    assert "CUDA_MODULE_LOADING" not in plain and "CUDA_INJECTION64_PATH" not in plain


def test_a_misspelt_or_impossible_condition_is_refused(fc):
    assert "unknown condition part(s) ['warmcup']" in fc.condition_env(
        "recorder+warmcup", {}, "/h")
    assert fc.condition_env("cupti", {}, "/h") == "KAGENT_CUPTI_LIB is not set"
    for cond in fc.CONDITIONS:  # the default list is made of known parts
        assert not isinstance(fc.condition_env(cond, {"KAGENT_CUPTI_LIB": "l"}, "/h"), str)


def test_the_child_program_compiles_and_threads_are_sampled(fc):
    compile(fc.CHILD % {"here": fc.HERE, "repo": fc.REPO}, "first_call_child", "exec")
    threads = fc.sample_threads(os.getpid())
    assert str(os.getpid()) in threads
    assert threads[str(os.getpid())].split("/")[-1].startswith("cpu")
