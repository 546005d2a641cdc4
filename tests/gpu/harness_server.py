"""A harness server (`python -m kagent_harness serve`) for the GPU scripts, and the
GPU's busy time read from NVML: what a worker does, from Python.

    with Server(pool=2) as srv:
        r = srv.call({"op": "measure", ...})
        busy = srv.meter.busy_seconds(t0, t1)
"""

import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, "python")


class BusyMeter:
    """Seconds the GPU executed kernels between two times.monotonic() readings, from
    NVML's utilization samples (each: the share of the period since the previous sample
    during which a kernel ran). None where NVML (pynvml) is not there."""

    def __init__(self, index=0):
        self.ok = False
        self.samples = []  # (monotonic seconds, fraction busy over the period before it)
        self._stop = threading.Event()
        try:
            import pynvml
            pynvml.nvmlInit()
            vis = os.environ.get("CUDA_VISIBLE_DEVICES", "")
            idx = int(vis.split(",")[0]) if vis.split(",")[0].strip().isdigit() else index
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(idx)
            self.ok = True
        except Exception as e:  # noqa: BLE001
            print(f"[busy meter] NVML not available: {e!r}", file=sys.stderr)
            return
        self._last_ts = 0
        # NVML timestamps are microseconds of the host's wall clock.
        self._offset = time.monotonic() - time.time()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self):
        nv = self.nvml
        while not self._stop.wait(0.5):
            try:
                _, samples = nv.nvmlDeviceGetSamples(self.handle, nv.NVML_GPU_UTILIZATION_SAMPLES,
                                                     self._last_ts)
            except Exception:  # noqa: BLE001 - no new samples
                continue
            for s in samples:
                ts = int(s.timeStamp)
                if ts <= self._last_ts:
                    continue
                val = s.sampleValue
                v = getattr(val, "uiVal", None)
                if v is None:
                    v = int(val)
                self.samples.append((ts / 1e6 + self._offset, min(100, int(v)) / 100.0))
                self._last_ts = ts

    def busy_seconds(self, t0, t1):
        """Integrates the samples over [t0, t1] (waits for the samples that cover t1)."""
        if not self.ok:
            return None
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and (not self.samples or self.samples[-1][0] < t1):
            time.sleep(0.1)
        busy, prev = 0.0, None
        for ts, frac in self.samples:
            if prev is not None:
                lo, hi = max(prev, t0), min(ts, t1)
                if hi > lo:
                    busy += frac * (hi - lo)
            prev = ts
        return busy

    def close(self):
        self._stop.set()


class Server:
    def __init__(self, pool=2, device="cuda", cache_mb=None, extra_env=None, log_path=None,
                 extra_args=()):
        self.dir = tempfile.mkdtemp(prefix="kagent-bench-srv-")
        self.path = os.path.join(self.dir, "harness.sock")
        argv = [sys.executable, "-m", "kagent_harness", "serve", "--socket", self.path,
                "--device", device, "--pool", str(pool)]
        if cache_mb is not None:
            argv += ["--cache-mb", str(cache_mb)]
        argv += list(extra_args)
        env = dict(os.environ, PYTHONPATH=PYDIR, **(extra_env or {}))
        self.log_path = log_path or os.path.join(self.dir, "server.log")
        self._log = open(self.log_path, "ab")
        t = time.monotonic()
        self.proc = subprocess.Popen(argv, env=env, stdout=self._log, stderr=subprocess.STDOUT)
        while True:
            try:
                if self.call({"op": "ping"}, timeout=10).get("ok"):
                    break
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("the harness server exited: " + self.log_tail())
            if time.monotonic() - t > 180:
                raise RuntimeError("the harness server did not answer within 180 s")
            time.sleep(0.2)
        self.start_s = time.monotonic() - t
        self.meter = BusyMeter() if device == "cuda" else None

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def call(self, msg, timeout=900):
        if PYDIR not in sys.path:
            sys.path.insert(0, PYDIR)
        from kagent_harness.server import call
        return call(self.path, msg, timeout)

    def close(self):
        if self.meter:
            self.meter.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
