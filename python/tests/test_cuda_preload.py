"""cuda_preload: the functions an extension defines are found in its dynamic symbol table
(what the preload tries), the process's mapped extensions are found under a root, and
without a CUDA runtime the preload says so instead of failing. The preload itself
(cudaFuncGetAttributes loading kernels) needs a GPU: tests/gpu/first_call.py."""

import ctypes
import os
import shutil
import subprocess
import tempfile

import pytest

from kagent_harness import cuda_preload

SOURCE = r"""
extern "C" int plain_c(int x) { return x + 1; }
namespace ns { int defined_here(int x) { return x * 2; } }
int imported_elsewhere(int);
int uses_import(int x) { return imported_elsewhere(x); }
static int local_only(int x) { return x - 1; }
int calls_local(int x) { return local_only(x); }
"""


@pytest.fixture(scope="module")
def shared_object():
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    d = tempfile.mkdtemp(prefix="kagent-preload-test-")
    src, so = os.path.join(d, "m.cc"), os.path.join(d, "ext", "m.so")
    os.makedirs(os.path.dirname(so))
    with open(src, "w") as f:
        f.write(SOURCE)
    subprocess.run([cxx, "-shared", "-fPIC", "-Wl,--unresolved-symbols=ignore-all", "-o",
                    so, src], check=True)
    yield d, so
    shutil.rmtree(d, ignore_errors=True)


def test_the_defined_functions_with_cxx_names_are_listed(shared_object):
    _d, so = shared_object
    names = cuda_preload.defined_functions(so)
    assert "_ZN2ns12defined_hereEi" in names
    assert "_Z11uses_importi" in names
    assert "plain_c" in names
    assert "_Z18imported_elsewherei" not in names  # undefined here: an import
    assert not any("local_only" in n for n in names)  # not in the dynamic table


def test_what_is_not_a_shared_object_lists_nothing(tmp_path):
    p = tmp_path / "x.so"
    p.write_bytes(b"not an ELF file at all")
    assert cuda_preload.defined_functions(str(p)) == []


def test_the_mapped_extensions_under_a_root_are_found(shared_object):
    d, so = shared_object
    ctypes.CDLL(so, mode=os.RTLD_LAZY)  # its import stays unresolved until called
    assert cuda_preload.extension_paths(d) == [os.path.realpath(so)]
    assert cuda_preload.extension_paths(os.path.join(d, "elsewhere")) == []


def test_without_a_cuda_runtime_the_preload_says_so(shared_object, monkeypatch):
    _d, so = shared_object
    monkeypatch.setattr(cuda_preload, "_cudart", lambda: None)
    assert cuda_preload.preload([so]) == {"error": "no CUDA runtime library in this process"}
