"""The GPU gate of a one-shot run (`--gate-dir DIR`): the part of a profile that needs no
GPU slot (the processes, imports, the candidate's construction and compilation) runs
first; then the harness says so and waits until the worker grants it the GPU.

The handshake is three files in DIR, which only the worker and this (trusted) process
see; the candidate's sandbox does not:

    DIR/ready   written by the harness when it is ready for the GPU
    DIR/go      written by the worker once it holds the GPU for this run
    DIR/stop    written by the worker when it will not grant it (the harness then ends
                with an INFRA_ERROR result saying so, without using the GPU)
    DIR/done    written by the harness when its GPU work is over (the worker may release
                the GPU then, before the process has finished exiting)

Files, not a pipe: either side may die at any point, and a file left behind blocks
nobody. The harness polls every 10 ms.
"""

import os
import time

POLL_S = 0.01
MAX_WAIT_S = 3600.0


class NotGranted(Exception):
    """The worker wrote `stop`, or nothing came within the wait limit."""


def _touch(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    os.replace(tmp, path)


class Gate:
    def __init__(self, directory, log, max_wait_s=MAX_WAIT_S):
        self.dir = directory
        self.log = log
        self.max_wait_s = max_wait_s
        self.waited_s = 0.0
        self._done = False

    def path(self, name):
        return os.path.join(self.dir, name)

    def wait_for_gpu(self):
        """Says `ready`, then blocks until `go` (returns) or `stop` (raises NotGranted)."""
        _touch(self.path("ready"), str(os.getpid()))
        t0 = time.monotonic()
        while True:
            if os.path.exists(self.path("go")):
                self.waited_s = time.monotonic() - t0
                self.log.add(f"GPU granted after {self.waited_s:.2f} s ready")
                return
            if os.path.exists(self.path("stop")):
                raise NotGranted("the worker did not grant the GPU (stop)")
            if time.monotonic() - t0 > self.max_wait_s:
                raise NotGranted(f"no GPU granted within {self.max_wait_s:.0f} s")
            time.sleep(POLL_S)

    def done(self):
        """Says the GPU work is over (once; later calls do nothing)."""
        if not self._done:
            self._done = True
            try:
                _touch(self.path("done"), str(os.getpid()))
            except OSError as e:
                self.log.add(f"could not write the gate's done file: {e}")
