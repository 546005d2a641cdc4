"""A scripted stand-in for `python -m kagent_harness serve` (docs/harness.md, "The harness
server"), for the benchmark worker's C++ tests. Standard library only; it never imports
torch, so it starts in a fraction of a second (after a short delay, so that clients do
meet a server that is still starting).

One-shot `measure --request FILE --out FILE` answers CORRECT with the request it read as
its `log`. As `serve`, it speaks the wire protocol (one JSON line in, one JSON line out, per connection) and
answers the ops ping, prepare, measure, prepare_screen, screen and release_job, plus two
of its own:
fake_stats (what it saw) and fake_sleep (answers after `seconds`). What it does is
scripted by a directive: the request's `fake` field, else a FAKE_<WORD> found in the
kernel source:

  FAKE_HANG           no answer; waits for the client to close the connection (counted)
  FAKE_DIE            writes a line to stderr and exits with status 3 mid-request
  FAKE_GARBAGE        answers a line that is not JSON
  FAKE_PARTIAL        answers half a JSON object, then closes
  FAKE_COMPILE_ERROR  prepare: a final COMPILE_ERROR result
  FAKE_NO_HANDLE      prepare: no prepared process ("too many held")
  FAKE_BAD            screen: that kernel is not ok
  FAKE_NO_HANDLE      prepare_screen (in any kernel): no prepared process

With `--sandbox=required` and FAKE_HARNESS_NO_SANDBOX set in its environment it exits 1 at
start, saying the host cannot sandbox (as the real server does).

A measure answer's `log` is a JSON object echoing the protocol fields the client sent
(op, job_id, prepared, device, timeout_s, language), so tests can check them.
"""
import json
import os
import re
import select
import signal
import socket
import socketserver
import sys
import threading
import time

STATE = {"cancelled": 0, "ops": [], "jobs": set(), "handles": 0}
LOCK = threading.Lock()


def directive(req):
    d = req.get("fake")
    if isinstance(d, str) and d:
        return d
    m = re.search(r"FAKE_[A-Z_]+", str(req.get("kernel_source", "")))
    return m.group(0) if m else ""


def wait_for_close(conn, limit_s=120):
    """Blocks until the client closes the connection (True) or limit_s passes."""
    end = time.time() + limit_s
    while time.time() < end:
        r, _, _ = select.select([conn], [], [], 0.1)
        if r:
            try:
                if conn.recv(1) == b"":
                    return True
            except OSError:
                return True
    return False


def echo(req):
    keys = ("op", "job_id", "prepared", "device", "timeout_s", "language")
    return json.dumps({k: req[k] for k in keys if k in req}, sort_keys=True)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline(64 << 20)
        try:
            req = json.loads(line)
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError as e:
            return self.answer({"ok": False, "error": f"bad request: {e}"})
        op = req.get("op")
        d = directive(req)
        with LOCK:
            STATE["ops"].append(op)
            if req.get("job_id") and op != "release_job":
                STATE["jobs"].add(req["job_id"])
        if d == "FAKE_HANG":
            if wait_for_close(self.connection):
                with LOCK:
                    STATE["cancelled"] += 1
            return
        if d == "FAKE_DIE":
            sys.stderr.write("fake harness server: dying as told\n")
            sys.stderr.flush()
            os._exit(3)
        if d == "FAKE_GARBAGE":
            self.wfile.write(b"this is not json\n")
            return
        if d == "FAKE_PARTIAL":
            self.wfile.write(b'{"verdict": "COR')
            return
        if op == "ping":
            with LOCK:
                return self.answer({"ok": True, "pid": os.getpid(), "version": "fake",
                                    "device": ARGS.get("--device"), "pool_ready": 0,
                                    "prepared": 0, "jobs": len(STATE["jobs"]),
                                    "argv": sys.argv[1:],
                                    "env": {k: os.environ.get(k) for k in (
                                        "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "KAGENT_CUPTI_LIB",
                                        "TRITON_INTERPRET", "PYTHONUNBUFFERED")}})
        if op == "fake_stats":
            with LOCK:
                return self.answer({"ok": True, "cancelled": STATE["cancelled"],
                                    "ops": STATE["ops"], "pid": os.getpid()})
        if op == "fake_sleep":
            time.sleep(float(req.get("seconds", 1)))
            return self.answer({"ok": True, "slept": req.get("seconds", 1)})
        if op == "prepare":
            if d == "FAKE_COMPILE_ERROR":
                return self.answer({"ok": True, "prepared": None, "prepare_ms": 12.0, "reason": "",
                                    "result": {"verdict": "COMPILE_ERROR",
                                               "correctness": {"reason": "SyntaxError at line 3"},
                                               "log": echo(req)}})
            if d == "FAKE_NO_HANDLE":
                return self.answer({"ok": True, "prepared": None, "prepare_ms": 1.0,
                                    "reason": "too many prepared candidates held", "result": None})
            with LOCK:
                STATE["handles"] += 1
                handle = "h%d" % STATE["handles"]
            return self.answer({"ok": True, "prepared": handle, "prepare_ms": 20.0, "reason": "",
                                "result": None})
        if op == "measure":
            return self.answer({"verdict": "CORRECT",
                                "correctness": {"trials": 5, "trials_passed": 5},
                                "candidate": {"median_ms": 1.25, "count": 3},
                                "gpu_name": "fake gpu", "log": echo(req),
                                "harness": {"prepared": bool(req.get("prepared")),
                                            "trial_set": "built"}})
        if op == "prepare_screen":
            if any("FAKE_NO_HANDLE" in str(k.get("source", "")) for k in req.get("kernels", [])):
                return self.answer({"ok": True, "prepared": None, "prepare_ms": 1.0,
                                    "reason": "too many prepared candidates held"})
            with LOCK:
                STATE["handles"] += 1
                handle = "s%d" % STATE["handles"]
            return self.answer({"ok": True, "prepared": handle, "prepare_ms": 15.0,
                                "reason": ""})
        if op == "screen":
            results = []
            for i, k in enumerate(req.get("kernels", [])):
                bad = "FAKE_BAD" in str(k.get("source", ""))
                results.append({"index": i, "ok": not bad,
                                "reason": "output differs" if bad else "",
                                "median_ms": None if bad else 1.0 + i})
            return self.answer({"ok": True, "results": results, "phases_ms": {},
                                "log": "screened %d; %s" % (len(results), echo(req))})
        if op == "release_job":
            with LOCK:
                held = req.get("job_id") in STATE["jobs"]
                STATE["jobs"].discard(req.get("job_id"))
            return self.answer({"ok": True, "released": held})
        return self.answer({"ok": False, "error": f"unknown op {op!r}"})

    def answer(self, obj):
        self.wfile.write((json.dumps(obj) + "\n").encode())


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def parse(argv):
    """--key value and --key=value; a repeated key keeps its last value (and every value
    under "<key>[]")."""
    args = {}
    i = 0
    while i < len(argv):
        if argv[i].startswith("--") and "=" in argv[i]:
            key, value = argv[i].split("=", 1)
            i += 1
        elif argv[i].startswith("--") and i + 1 < len(argv):
            key, value = argv[i], argv[i + 1]
            i += 2
        else:
            key, value = argv[i], True
            i += 1
        args[key] = value
        args.setdefault(key + "[]", []).append(value)
    return args


ARGS = {}


def main():
    global ARGS
    if len(sys.argv) >= 2 and sys.argv[1] == "measure":
        # One-shot: a CORRECT answer whose log is the request it read (for the client's
        # request fields).
        args = parse(sys.argv[2:])
        with open(args["--request"], encoding="utf-8") as f:
            request = json.load(f)
        with open(args["--out"], "w", encoding="utf-8") as f:
            json.dump({"verdict": "CORRECT", "log": json.dumps(request, sort_keys=True)}, f)
        return 0
    if len(sys.argv) < 2 or sys.argv[1] != "serve":
        sys.stderr.write("fake harness: only `serve` and one-shot `measure`\n")
        return 2
    ARGS = parse(sys.argv[2:])
    path = ARGS["--socket"]
    if ARGS.get("--sandbox") == "required" and os.environ.get("FAKE_HARNESS_NO_SANDBOX"):
        # As the real server does on a host that cannot give the required sandbox.
        sys.stderr.write("kagent_harness serve: the sandbox is required but this host cannot "
                         "give it (fake: FAKE_HARNESS_NO_SANDBOX); run with "
                         "--sandbox=best-effort to go on without it\n")
        return 1
    time.sleep(0.3)  # a server is not ready at once (the real one imports torch)
    if os.path.exists(path):
        os.unlink(path)
    server = Server(path, Handler)
    os.chmod(path, 0o600)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    sys.stderr.write("fake harness server listening on %s\n" % path)
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
        if os.path.exists(path):
            os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
