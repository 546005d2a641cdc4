"""The harness server's hold_stopped op: the worker keeps the server's candidate processes
stopped while a profile of its own holds the GPU slot (docs/harness.md, "The harness
server")."""

import contextlib
import threading
import time

from kagent_harness import server as S


class _Env:
    def __init__(self):
        self.stopped = 0

    @contextlib.contextmanager
    def quiet(self, keep=None):
        self.stopped = 3
        try:
            yield 3
        finally:
            self.stopped = 0


def _server():
    srv = S.Server.__new__(S.Server)
    srv.env = _Env()
    srv._lock = threading.Lock()
    srv.held_stopped = 0
    return srv


def test_the_processes_stay_stopped_until_the_client_goes():
    srv = _server()
    gone = threading.Event()
    out = []
    t = threading.Thread(target=lambda: out.append(srv.hold_stopped({"max_s": 30}, gone)))
    t.start()
    time.sleep(0.3)
    assert srv.env.stopped == 3 and srv.held_stopped == 3 and not out
    gone.set()  # the client closed its connection
    t.join(10)
    assert out[0]["ok"] and out[0]["stopped"] == 3
    assert srv.env.stopped == 0 and srv.held_stopped == 0


def test_a_hold_ends_at_its_bound_and_bad_requests_are_refused():
    srv = _server()
    t = time.monotonic()
    r = srv.hold_stopped({"max_s": 0.2}, threading.Event())
    assert r["ok"] and 0.15 <= time.monotonic() - t < 5
    assert srv.hold_stopped({"max_s": "soon"}, threading.Event())["ok"] is False
    assert srv.hold_stopped({}, None)["ok"] is False
    assert srv.handle({"op": "hold_stopped", "max_s": 0}, threading.Event())["ok"]
