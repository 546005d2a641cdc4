"""The scan, pooling, loss, conv, triangular-GEMM, diag and attention templates compile for sm_90 at
the brain's sizes, without register spills, and the elementwise clamps compile to NaN-propagating
min/max (compile_sm90.py in a subprocess without the interpreter; no GPU
needed, the triton wheel's NVIDIA backend is)."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def _backend():
    try:
        import triton
        from triton.backends.compiler import GPUTarget  # noqa: F401
    except ImportError:
        return False
    bin_dir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    return os.path.exists(os.path.join(bin_dir, "cuobjdump")) and os.path.exists(os.path.join(bin_dir, "ptxas"))


@pytest.mark.skipif(not _backend(), reason="triton's NVIDIA backend tools are not installed")
def test_templates_compile_for_sm90_without_spills():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    r = subprocess.run([sys.executable, os.path.join(HERE, "compile_sm90.py")], env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert len(rows) >= 22, r.stdout + r.stderr[-3000:]
    failed = [row for row in rows if "error" in row]
    assert not failed, failed
    spills = [row for row in rows if row["stack"] != 0]
    assert not spills, spills
    clamps = [row for row in rows if "nan_clamps" in row]
    assert len(clamps) == 5, rows
    dropped = [row for row in clamps if row["plain_clamps"] or not row["nan_clamps"]]
    assert not dropped, dropped
