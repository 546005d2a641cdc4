"""Shared helpers. The harness runs on the CPU here, Triton kernels under the
interpreter (TRITON_INTERPRET=1 is set for the candidate children by the harness)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
FIXTURES = os.path.join(HERE, "fixtures")
GPU_ADV = os.path.join(os.path.dirname(PYDIR), "tests", "gpu", "cases")
if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)
os.environ.setdefault("TRITON_INTERPRET", "1")


def gpu_script(name):
    """tests/gpu/NAME.py imported as a module (the GPU scripts that also read logs on
    the CPU: slot_timeline, compare_runs)."""
    import importlib.util
    path = os.path.join(os.path.dirname(PYDIR), "tests", "gpu", name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read(name, folder=FIXTURES):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return f.read()


# Small and quick: the CPU gate is about verdicts, not times.
FAST = {"device": "cpu", "trials": 5, "timing_reps": 3, "warmup_iters": 1, "warmup_ms": 0,
        "call_timeout_s": 20, "timeout_s": 120}


def measure(problem, candidate=None, folder=FIXTURES, **overrides):
    """Runs mode measure in-process (the supervisor; the candidate gets its own child)."""
    from kagent_harness import protocol as P
    from kagent_harness.measure import Supervisor
    raw = dict(FAST)
    raw["problem_source"] = read(problem, folder)
    if candidate:
        raw["kernel_source"] = read(candidate, folder)
    raw.update(overrides)
    req = P.Request(raw, mode="measure")
    return Supervisor(req, P.Log()).run_measure()


@pytest.fixture
def run_measure():
    return measure


def start_server(d, extra_args=(), env=None, wait=True, cache_mb=64):
    """Starts `python -m kagent_harness serve` on the CPU (one warm process) with its
    socket and log in directory d; waits for its first ping unless wait is False.
    Returns (socket path, process, log file)."""
    import subprocess
    import time
    from kagent_harness.server import call
    path = os.path.join(d, "harness.sock")
    env = dict(env or os.environ, PYTHONPATH=PYDIR, TRITON_INTERPRET="1")
    log = open(os.path.join(d, "server.log"), "wb")
    proc = subprocess.Popen([sys.executable, "-m", "kagent_harness", "serve", "--socket", path,
                             "--device", "cpu", "--pool", "1", "--cache-mb", str(cache_mb),
                             *extra_args], env=env, stdout=log, stderr=subprocess.STDOUT)
    if not wait:
        return path, proc, log
    deadline = time.monotonic() + 120
    while True:
        try:
            if call(path, {"op": "ping"}, timeout=10)["ok"]:
                break
        except OSError:
            pass
        assert proc.poll() is None, open(os.path.join(d, "server.log")).read()
        assert time.monotonic() < deadline, "the server did not answer within 120 s"
        time.sleep(0.5)
    return path, proc, log


def workdirs_of_this_process():
    """The private directories (sandbox.make_workdir) this process has now."""
    import glob
    import tempfile
    return {p for base in ("/dev/shm", tempfile.gettempdir())
            for p in glob.glob(os.path.join(base, f"kagent-{os.getpid()}-*"))}

