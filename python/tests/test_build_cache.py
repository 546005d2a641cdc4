"""The build cache (build_cache.py, prebuilt.py): a C++ extension built at import with
load_inline is built once per source. For real through the harness server on the CPU
(a candidate built with load_inline, measured twice), and the cache's own rules: what it
copies out of a candidate's workdir, what it gives back, its bound."""

import json
import os
import shutil
import tempfile

import pytest

from conftest import read, start_server
from kagent_harness import build_cache, prebuilt
from kagent_harness.build_cache import BUILDS_FILE, PREBUILT_DIR, BuildCache
from kagent_harness.server import call


class _Log:
    def __init__(self):
        self.lines = []

    def add(self, msg):
        self.lines.append(msg)


def _measure(path, source):
    msg = {"op": "measure", "device": "cpu", "problem_source": read("problem_relu_add.py"),
           "trials": 5, "timing_reps": 3, "warmup_iters": 1, "warmup_ms": 0,
           "call_timeout_s": 30, "timeout_s": 400, "kernel_source": source,
           "language": "cuda", "job_id": "job-build-cache"}
    return call(path, msg, 450)


def test_a_load_inline_candidate_is_built_once_per_source():
    d = tempfile.mkdtemp(prefix="kagent-srv-test-")
    path, proc, log = start_server(d, cache_mb=64)
    try:
        source = read("cand_relu_add_load_inline.py")
        first = _measure(path, source)
        assert first["verdict"] == "CORRECT", first["correctness"]["reason"] + first["log"]
        assert "build cache: kept the 1 module(s) this process built" in first["log"]
        second = _measure(path, source)
        assert second["verdict"] == "CORRECT", second["correctness"]["reason"] + second["log"]
        assert "build cache: the process loaded 1 prebuilt module(s)" in second["log"]
        # The import that built took seconds; the one that loaded the module, a fraction.
        phase = "candidate import and construction"
        built, loaded = (r["harness"]["phases_ms"].get(phase, 0.0) for r in (first, second))
        assert loaded < built / 3, (built, loaded)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def dirs():
    root = tempfile.mkdtemp(prefix="kagent-bc-test-")
    cache, work = os.path.join(root, "cache"), os.path.join(root, "work")
    os.makedirs(cache)
    os.makedirs(os.path.join(work, "torch_extensions", "m"))
    yield root, cache, work
    shutil.rmtree(root, ignore_errors=True)


def _built(work, entries):
    with open(os.path.join(work, BUILDS_FILE), "w") as f:
        json.dump({"modules": entries}, f)


def _module(work, rel="torch_extensions/m/m.so", data=b"\x7fELF module"):
    with open(os.path.join(work, rel), "wb") as f:
        f.write(data)
    return rel


def test_what_a_process_built_comes_back_to_a_process_of_the_same_source(dirs):
    _, cache_dir, work = dirs
    cache = BuildCache(cache_dir, 1 << 20, _Log())
    _built(work, [{"key": "k1", "name": "m", "path": _module(work)}])
    assert cache.store("src-a", work) == 1
    assert cache.store("src-a", work) == 0  # kept once
    other = tempfile.mkdtemp(dir=os.path.dirname(work))
    assert cache.seed("src-b", other) is False and not os.listdir(other)
    assert cache.seed("src-a", other) is True
    manifest = json.load(open(os.path.join(other, PREBUILT_DIR, "manifest.json")))
    assert manifest == {"modules": [{"key": "k1", "name": "m", "file": "0.so"}]}
    assert open(os.path.join(other, PREBUILT_DIR, "0.so"), "rb").read() == b"\x7fELF module"
    assert cache.hits == 1 and cache.stores == 1


def test_only_regular_files_inside_the_workdir_are_copied(dirs):
    root, cache_dir, work = dirs
    secret = os.path.join(root, "secret")
    with open(secret, "wb") as f:
        f.write(b"supervisor's")
    os.symlink(secret, os.path.join(work, "link.so"))
    os.symlink(root, os.path.join(work, "up"))  # a directory link on the way
    os.mkfifo(os.path.join(work, "fifo.so"))
    cache = BuildCache(cache_dir, 1 << 20, _Log())
    _built(work, [{"key": "a", "name": "a", "path": "link.so"},
                  {"key": "b", "name": "b", "path": "../secret"},
                  {"key": "c", "name": "c", "path": secret},
                  {"key": "d", "name": "d", "path": "up/secret"},
                  {"key": "e", "name": "e", "path": "fifo.so"},
                  {"key": "f", "name": "not a name", "path": _module(work)},
                  {"key": "g"}, "junk"])
    assert cache.store("src", work) == 0
    assert os.listdir(cache_dir) == []
    # A builds file that is a link or a FIFO is not read either.
    os.remove(os.path.join(work, BUILDS_FILE))
    os.mkfifo(os.path.join(work, BUILDS_FILE))
    assert cache.store("src", work) == 0


def test_the_cache_keeps_its_bound_least_recently_used_first(dirs):
    _, cache_dir, work = dirs
    cache = BuildCache(cache_dir, 2500, _Log())
    _built(work, [{"key": "k", "name": "m", "path": _module(work, data=b"x" * 1000)}])
    for key in ("one", "two"):
        assert cache.store(key, work) == 1
    cache.seed("one", tempfile.mkdtemp(dir=os.path.dirname(work)))  # "two" is now the oldest
    assert cache.store("three", work) == 1
    assert sorted(os.listdir(cache_dir)) == ["one", "three"] and cache.bytes() == 2000
    _built(work, [{"key": "k", "name": "m", "path": _module(work, data=b"x" * 3000)}])
    assert cache.store("big", work) == 0  # over the whole bound
    assert BuildCache(cache_dir, 0, _Log()).store("off", work) == 0
    cache.close()
    assert not os.path.exists(cache_dir)


def test_an_entry_is_keyed_by_the_whole_source_and_a_call_by_its_arguments():
    a = build_cache.source_key("x = 1\n", "cuda", "cpu")
    assert a == build_cache.source_key("x = 1\n", "cuda", "cpu")
    assert a != build_cache.source_key("x = 1 \n", "cuda", "cpu")
    assert a != build_cache.source_key("x = 1\n", "triton", "cpu")
    k = prebuilt.call_key({"name": "m", "cpp_sources": "int f();", "verbose": False})
    assert k == prebuilt.call_key({"name": "m", "cpp_sources": "int f();", "verbose": True})
    assert k != prebuilt.call_key({"name": "m", "cpp_sources": "int g();", "verbose": False})
    assert k != prebuilt.call_key({"name": "n", "cpp_sources": "int f();", "verbose": False})
