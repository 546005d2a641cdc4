"""`python -m kagent_harness serve`: the long-lived trusted supervisor of one GPU.

A worker starts one per GPU and keeps it (docs/harness.md, "The harness server"). It
answers requests on a Unix stream socket, one JSON object per connection each way, and
keeps between them what a measurement would otherwise rebuild every time: each job's
trial set on the GPU (trials.TrialCache), warm candidate processes (pool.ChildPool) and
prepared candidates (prepare.Prepared). It never imports candidate code.

Concurrency: every connection is served on a thread of its own; `measure` and `screen`,
which use the GPU, run one at a time (gpu_lock); `prepare` and `prepare_screen` run
beside them (their work is the candidate's own process on the CPU; those processes are
stopped while anything is timed). A client that closes its connection before the
answer cancels its request.
"""

import argparse
import json
import os
import select
import signal
import socket
import socketserver
import sys
import threading
import time
import traceback
import uuid

from kagent_harness import __version__
from kagent_harness import protocol as P

MAX_REQUEST_BYTES = 64 << 20
PREPARED_TTL_S = 600.0

# The longest a hold_stopped request keeps the candidate processes stopped (a profile's
# GPU part is seconds; a client that never closes its connection cannot starve them).
HOLD_STOPPED_MAX_S = 600.0


class ServerLog:
    """The server's own log: timestamped lines on stderr (the worker keeps the tail)."""

    def __init__(self):
        self.t0 = time.monotonic()
        self._lock = threading.Lock()

    def add(self, msg):
        with self._lock:
            sys.stderr.write(f"[kagent-harness-server {time.monotonic() - self.t0:9.3f}s] "
                             f"{msg}\n")
            sys.stderr.flush()


class Server:
    """The request handling, apart from the socket (tests drive it directly)."""

    def __init__(self, device, pool_size, cache_bytes, prepared_max, log,
                 sandbox="required", sandbox_hide=()):
        import torch
        from kagent_harness import bwrap
        from kagent_harness.build_cache import BuildCache, build_cache_limit
        from kagent_harness.sandbox import (SandboxUnavailable, make_workdir,
                                            sweep_stale_workdirs)
        from kagent_harness.measure import Env
        from kagent_harness.pool import ChildPool, ChildSpec
        from kagent_harness.prepare import DryRunRoom, dry_run_room_limit
        from kagent_harness.trials import TrialCache, default_limit_bytes
        torch.set_grad_enabled(False)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device == "cuda" and not torch.cuda.is_available():
            raise P.RequestError("--device cuda but no CUDA device is visible")
        self.device = device
        self.log = log
        # The sandbox of every candidate this server runs: a request cannot weaken it.
        self.sandbox = sandbox
        self.sandbox_hide = list(sandbox_hide)
        # What a supervisor killed before (SIGKILL, a crash) left on /dev/shm and /tmp.
        sweep_stale_workdirs(log)
        self.sandbox_probe = bwrap.probe(log, device)
        if not self.sandbox_probe["ok"]:
            if sandbox == bwrap.REQUIRED:
                raise SandboxUnavailable("the candidate sandbox is required (--sandbox "
                                         "required) but not available: "
                                         + bwrap.describe(self.sandbox_probe))
            log.add("sandbox best-effort: candidates run without what is missing")
        limit = cache_bytes if cache_bytes is not None else default_limit_bytes(device)
        spec = ChildSpec(device, sandbox=sandbox, sandbox_hide=self.sandbox_hide)
        builds = BuildCache(make_workdir(), build_cache_limit(), log)
        self.env = Env(device, TrialCache(limit, log), ChildPool(spec, pool_size, log), log,
                       DryRunRoom(dry_run_room_limit(device)), builds)
        self.gpu_lock = threading.Lock()
        self._lock = threading.Lock()
        self.prepared = {}            # handle -> Prepared
        self.prepared_max = max(0, int(prepared_max))
        self.fatal = None             # why this process must not serve any more
        self.held_stopped = 0         # processes stopped by hold_stopped requests now
        self.served = 0
        if device == "cuda":
            torch.zeros(1, device="cuda").add_(1)  # the context, before the first request
            self._warm_up(log)

    @staticmethod
    def _warm_up(log):
        """Pays once, at start, for what every job's first measurement would otherwise
        pay under the GPU slot: the random number generators' and common kernels' lazy
        loading, torch.compile's own start (inductor's import and first compile;
        each problem's graph still compiles in its job's baseline run) and the gate's
        comparison kernel (compare_fused.py)."""
        import torch
        t = time.monotonic()
        try:
            x = torch.rand(1024, device="cuda") + torch.randn(1024, device="cuda")
            torch.randint(0, 7, (1024,), device="cuda")
            torch.compile(lambda a: torch.relu(a) * 2 + 1, mode="default",
                          dynamic=False)(x)
            from kagent_harness import compare_fused
            for dtype in compare_fused.DTYPES:  # the gate's comparison kernel, compiled
                compare_fused.float_stats(x.to(dtype), x.to(dtype), 1e-4, 1e-4)
            torch.cuda.synchronize()
            torch._dynamo.reset()
            log.add(f"warmed up in {time.monotonic() - t:.1f} s (RNG, torch.compile, "
                    "the comparison kernel)")
        except Exception as e:  # noqa: BLE001 - a warm-up only
            log.add(f"warm-up incomplete: {type(e).__name__}: {e}")

    # -- dispatch -----------------------------------------------------------------------
    def handle(self, msg, cancelled=None):
        """Answers one request (a dict). `cancelled` is a threading.Event the connection
        sets when its client goes away."""
        op = msg.get("op") if isinstance(msg, dict) else None
        if op == "ping":
            return self.ping()
        if op == "release_job":
            job_id = msg.get("job_id")
            if not isinstance(job_id, str) or not job_id:
                return {"ok": False, "error": "release_job needs job_id (a string)"}
            return {"ok": True, "released": self.release_job(job_id)}
        if op == "release_prepared":
            handle = msg.get("prepared")
            if not isinstance(handle, str) or not handle:
                return {"ok": False, "error": "release_prepared needs prepared (a handle)"}
            with self._lock:
                p = self.prepared.pop(handle, None)
            if p is not None:
                self._retire(p)
            return {"ok": True, "released": p is not None}
        if op in ("measure", "prepare", "screen", "prepare_screen"):
            return getattr(self, op)(msg, cancelled)
        if op == "hold_stopped":
            return self.hold_stopped(msg, cancelled)
        return {"ok": False, "error": f"unknown op {op!r}; one of ping, measure, prepare, "
                                      "screen, prepare_screen, release_job, "
                                      "release_prepared, hold_stopped"}

    def hold_stopped(self, msg, cancelled):
        """Holds every candidate process of this server stopped (SIGSTOP, as while a
        timing runs) until the client closes its connection, at most `max_s` seconds
        (default and ceiling HOLD_STOPPED_MAX_S). The worker asks for it while a profile
        (a process of its own, not this server's) holds the GPU slot, so the preparing
        processes do not take the CPU from the profile's passes: with 16 tasks in flight
        on the H100 a profile held the slot 2.5 s where it had held 1.85 s with 8. The
        answer, sent once the hold ends (the client has gone by then), counts them."""
        if cancelled is None:
            return {"ok": False, "error": "hold_stopped needs a connection to hold"}
        try:
            max_s = float(msg.get("max_s", HOLD_STOPPED_MAX_S))
        except (TypeError, ValueError):
            return {"ok": False, "error": "max_s must be a number of seconds"}
        max_s = min(max(0.0, max_s), HOLD_STOPPED_MAX_S)
        t = time.monotonic()
        with self.env.quiet() as n:
            with self._lock:
                self.held_stopped += n
            try:
                cancelled.wait(max_s)
            finally:
                with self._lock:
                    self.held_stopped -= n
        return {"ok": True, "stopped": n, "held_s": round(time.monotonic() - t, 3)}

    def ping(self):
        self.expire_prepared()
        st = self.env.cache.stats()
        with self._lock:
            prepared, held = len(self.prepared), self.held_stopped
        return {"ok": True, "pid": os.getpid(), "version": __version__,
                "device": self.device, "pool_ready": self.env.pool.ready_count(),
                "prepared": prepared, "served": self.served, "sandbox": self.sandbox,
                "sandbox_ok": self.sandbox_probe["ok"], "held_stopped": held, **st}

    def _request(self, msg, mode):
        """The measure-style request inside `msg` (op, job_id, prepared removed), parsed.
        Raises P.RequestError."""
        raw = {k: v for k, v in msg.items() if k not in ("op", "job_id", "prepared",
                                                          "kernels")}
        raw["device"] = raw.get("device") or self.device
        if raw["device"] != self.device:
            raise P.RequestError(f"this server runs on {self.device}, not {raw['device']}")
        raw.setdefault("sandbox", self.sandbox)
        req = P.Request(raw, mode=mode)
        # The server's sandbox flags apply: a request may add hidden paths or ask for
        # "required" of a best-effort server, never weaken a required one.
        req.sandbox_hide = sorted(set(self.sandbox_hide) | set(req.sandbox_hide))
        if self.sandbox == P.SANDBOX_REQUIRED:
            req.sandbox = P.SANDBOX_REQUIRED
            req.network_isolation = True
            if req.drop_privileges is False:
                req.drop_privileges = None
        return req

    @staticmethod
    def _job_id(msg):
        job_id = msg.get("job_id", "")
        if not isinstance(job_id, str):
            raise P.RequestError("job_id must be a string")
        return job_id

    def _bad(self, e, log):
        log.add(f"bad request: {e}")
        return P.error_result(f"bad request: {e}", log)

    def _watch(self, sup, cancelled):
        """Cancels `sup` when the client goes away; returns a stop function."""
        if cancelled is None:
            return lambda: None
        done = threading.Event()

        def run():
            while not done.is_set():
                if cancelled.wait(0.2):
                    sup.log.add("the client closed its connection: request cancelled")
                    sup.cancel()
                    return

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return done.set

    # -- measure ---------------------------------------------------------------------------
    def measure(self, msg, cancelled=None):
        from kagent_harness.measure import Supervisor
        log = P.Log()
        try:
            req = self._request(msg, "measure")
            job_id = self._job_id(msg)
        except P.RequestError as e:
            return self._bad(e, log)
        prepared = self._take_prepared(msg, log, req, job_id, req.kernel_source,
                                       req.language, "candidate", "preparing now")
        with self.gpu_lock:
            sup = Supervisor(req, log, env=self.env, job_id=job_id or None)
            sup.prepared = prepared
            stop = self._watch(sup, cancelled)
            try:
                result = sup.run_measure()
            finally:
                stop()
            result["harness"].setdefault("prepared", prepared is not None)
            self._check_health(result)
        self.served += 1
        return result

    # -- prepare ---------------------------------------------------------------------------
    def prepare(self, msg, cancelled=None):
        from kagent_harness.measure import Supervisor
        log = P.Log()
        t0 = time.monotonic()
        try:
            req = self._request(msg, "measure")
            job_id = self._job_id(msg)
        except P.RequestError as e:
            return {"ok": True, "prepared": None, "prepare_ms": 0.0,
                    "reason": f"bad request: {e}", "result": self._bad(e, log)}
        if not job_id or not req.kernel_source:
            return {"ok": True, "prepared": None, "prepare_ms": 0.0, "result": None,
                    "reason": "prepare needs job_id and kernel_source"}
        full = self._no_room()
        if full:
            return {"ok": True, "prepared": None, "prepare_ms": 0.0, "result": None,
                    "reason": full}
        sup = Supervisor(req, log, env=self.env, job_id=job_id)
        stop = self._watch(sup, cancelled)
        try:
            prepared, final, reason = sup.run_prepare()
        finally:
            stop()
        ms = (time.monotonic() - t0) * 1e3
        if prepared is None:
            return {"ok": True, "prepared": None, "prepare_ms": ms, "reason": reason,
                    "result": final}
        if cancelled is not None and cancelled.is_set():
            self._retire(prepared)
            return {"ok": True, "prepared": None, "prepare_ms": ms, "result": None,
                    "reason": "cancelled"}
        handle = self._hold(prepared, "p-")
        return {"ok": True, "prepared": handle, "prepare_ms": ms, "reason": "",
                "result": None, "phases_ms": sup.phases.as_dict(),
                "starting_kernel_prepared": prepared.rk is not None,
                "compiled": {k: prepared.compiled.get(k) for k in
                             ("clean", "seconds", "ops", "error", "phantom")} if prepared.compiled
                else None, "log": log.tail()}

    def _take_prepared(self, msg, log, req, job_id, source, language, what, otherwise):
        """The prepared process `msg["prepared"]` names, taken out of the held ones (a
        handle is used once), when it was prepared for this job's `req` with `source` in
        `language` (a screen's: the tuple of its sources, language "screen"); one
        prepared for anything else is killed. None without a handle, for an unknown or
        expired one, or for another `what`; `otherwise` says what happens then."""
        handle = msg.get("prepared")
        if not handle:
            return None
        with self._lock:
            prepared = self.prepared.pop(handle, None)
        if prepared is None:
            log.add(f"prepared handle {handle!r} unknown or expired: {otherwise}")
            return None
        from kagent_harness.trials import job_key
        if prepared.key != job_key(req, job_id) or prepared.source != source or \
                prepared.language != language:
            log.add(f"the prepared process is for another {what}: not used")
            self._retire(prepared)
            return None
        return prepared

    def _no_room(self):
        """Why no more prepared processes may be held now (--prepared-max), or None."""
        self.expire_prepared()
        with self._lock:
            if len(self.prepared) >= self.prepared_max:
                return (f"{len(self.prepared)} prepared candidates held already "
                        f"(--prepared-max {self.prepared_max})")
        return None

    def _hold(self, prepared, prefix):
        """Keeps `prepared` for its measure or screen; returns its new handle."""
        handle = prefix + uuid.uuid4().hex[:16]
        with self._lock:
            self.prepared[handle] = prepared
        return handle

    def expire_prepared(self, now=None):
        now = time.monotonic() if now is None else now
        with self._lock:
            old = [h for h, p in self.prepared.items() if now - p.created > PREPARED_TTL_S]
            gone = [self.prepared.pop(h) for h in old]
        for p in gone:
            self.log.add(f"prepared candidate expired unused after {PREPARED_TTL_S:.0f} s")
            self._retire(p)

    def _retire(self, prepared):
        self.env.pool.retire(prepared.child)
        if prepared.rk is not None:
            self.env.pool.retire(prepared.rk[0])

    # -- screen ------------------------------------------------------------------------------
    def _screen_args(self, msg):
        """(request, job_id, kernels, timing_reps) of a screen or prepare_screen message.
        Raises P.RequestError."""
        from kagent_harness.screen import MAX_VARIANTS
        req = self._request(msg, "measure")
        job_id = self._job_id(msg)
        kernels = msg.get("kernels")
        if not isinstance(kernels, list) or not 1 <= len(kernels) <= MAX_VARIANTS or \
                not all(isinstance(k, dict) and isinstance(k.get("source"), str) and
                        k["source"] for k in kernels):
            raise P.RequestError(f"kernels must be a list of 1..{MAX_VARIANTS} objects "
                                 "with a non-empty source")
        if any(k.get("language", "triton") != "triton" for k in kernels):
            raise P.RequestError("a screen takes Triton kernels only")
        reps = msg.get("timing_reps", 20)
        if not isinstance(reps, int) or isinstance(reps, bool) or not 1 <= reps <= 1000:
            raise P.RequestError("timing_reps must be an integer in [1, 1000]")
        return req, job_id, kernels, reps

    def prepare_screen(self, msg, cancelled=None):
        """A screen's CPU part ahead of its GPU slot (screen.prepare_screen); answers
        {ok, prepared: handle or None, prepare_ms, reason}. The handle goes with the
        screen of the same kernels, or to release_prepared."""
        from kagent_harness.measure import Supervisor
        from kagent_harness.screen import prepare_screen
        log = P.Log()
        t0 = time.monotonic()
        try:
            req, job_id, kernels, _ = self._screen_args(msg)
        except P.RequestError as e:
            return {"ok": False, "error": f"bad request: {e}"}
        if not job_id:
            return {"ok": True, "prepared": None, "prepare_ms": 0.0,
                    "reason": "prepare_screen needs job_id"}
        full = self._no_room()
        if full:
            return {"ok": True, "prepared": None, "prepare_ms": 0.0, "reason": full}
        sup = Supervisor(req, log, env=self.env, job_id=job_id)
        stop = self._watch(sup, cancelled)
        try:
            prepared, reason = prepare_screen(sup, kernels)
        finally:
            stop()
        ms = (time.monotonic() - t0) * 1e3
        if prepared is not None and cancelled is not None and cancelled.is_set():
            self._retire(prepared)
            prepared, reason = None, "cancelled"
        if prepared is None:
            return {"ok": True, "prepared": None, "prepare_ms": ms, "reason": reason,
                    "log": log.tail()}
        handle = self._hold(prepared, "s-")
        return {"ok": True, "prepared": handle, "prepare_ms": ms, "reason": "",
                "phases_ms": sup.phases.as_dict(), "log": log.tail()}

    def screen(self, msg, cancelled=None):
        from kagent_harness.measure import Supervisor
        from kagent_harness.screen import run_screen
        log = P.Log()
        try:
            req, job_id, kernels, reps = self._screen_args(msg)
        except P.RequestError as e:
            return {"ok": False, "error": f"bad request: {e}"}
        if self.device != "cuda":
            reps = min(reps, 3)
        prepared = self._take_prepared(msg, log, req, job_id,
                                       tuple(k["source"] for k in kernels), "screen", "screen",
                                       "screening from the start")
        with self.gpu_lock:
            sup = Supervisor(req, log, env=self.env, job_id=job_id or None)
            stop = self._watch(sup, cancelled)
            try:
                out = run_screen(sup, kernels, reps, prepared)
            finally:
                stop()
            self._check_health(out)
        return out

    # -- jobs and health ---------------------------------------------------------------------
    def release_job(self, job_id):
        with self._lock:
            handles = [h for h, p in self.prepared.items() if p.key[0] == job_id]
            gone = [self.prepared.pop(h) for h in handles]
        for p in gone:
            self._retire(p)
        return self.env.cache.release(job_id) or bool(gone)

    def _check_health(self, result):
        """After a GPU request: is this process's CUDA context still usable (an illegal
        access by the reference poisons it)? If not, this server must stop."""
        if self.device != "cuda":
            return
        import torch
        try:
            torch.zeros(1, device="cuda").add_(1)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            self.fatal = f"the supervisor's CUDA context is unusable: {type(e).__name__}: {e}"
            self.log.add(self.fatal + "; exiting after this answer")
            result.setdefault("harness", {})["server_exit"] = self.fatal

    def close(self):
        with self._lock:
            prepared = list(self.prepared.values())
            self.prepared.clear()
        for p in prepared:
            self._retire(p)
        self.env.pool.close()
        self.env.cache.close()
        self.env.builds.close()


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        server = self.server.kagent
        conn = self.request
        data = b""
        try:
            while b"\n" not in data:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    return
                data += chunk
                if len(data) > MAX_REQUEST_BYTES:
                    self._send({"ok": False, "error": "request larger than 64 MiB"})
                    return
            line = data.split(b"\n", 1)[0]
            try:
                msg = json.loads(line.decode("utf-8"))
            except ValueError as e:
                self._send({"ok": False, "error": f"the request is not JSON: {e}"})
                return
            if not isinstance(msg, dict):
                self._send({"ok": False, "error": "the request must be a JSON object"})
                return
            cancelled, answered = threading.Event(), threading.Event()
            watcher = threading.Thread(target=_watch_hangup,
                                       args=(conn, cancelled, answered), daemon=True)
            watcher.start()
            try:
                answer = server.handle(msg, cancelled)
            except Exception as e:  # noqa: BLE001 - the server must answer
                server.log.add("request failed:\n" + traceback.format_exc())
                answer = {"ok": False, "error": f"harness server error: {type(e).__name__}: {e}"}
            answered.set()  # stops the watcher
            self._send(answer)
        finally:
            if server.fatal:
                threading.Thread(target=self.server.shutdown, daemon=True).start()

    def _send(self, answer):
        data = json.dumps(P.sanitize(answer), allow_nan=False, default=str) + "\n"
        try:
            self.request.sendall(data.encode("utf-8"))
        except OSError:
            pass  # the client went away


def _watch_hangup(conn, cancelled, answered):
    """Sets `cancelled` when the peer closes its side (EOF) before `answered`."""
    while not answered.is_set():
        try:
            r, _, x = select.select([conn], [], [conn], 0.5)
        except (OSError, ValueError):
            cancelled.set()
            return
        if answered.is_set():
            return
        if r or x:
            try:
                chunk = conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except OSError:
                cancelled.set()
                return
            if not chunk:
                cancelled.set()
                return
            time.sleep(0.2)  # extra bytes after the request: ignored


def call(path, msg, timeout=900.0):
    """A client's side of the wire format: sends `msg` (a dict) to the server at the Unix
    socket `path` and returns its answer. Raises OSError when the connection fails or
    closes without an answer, socket.timeout after `timeout` seconds (closing the
    connection, which cancels the request)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.sendall((json.dumps(msg) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    if not data:
        raise OSError("the harness server closed the connection without an answer")
    return json.loads(data)


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = True


def _bind_private(path):
    """The server's socket at `path`, mode 0600 from its first moment: bound inside a
    fresh 0700 directory beside it, made 0600 there, then renamed into place (a Unix
    socket is reached through its inode, so the rename keeps it listening). Not through
    the process's umask: that is shared by every thread, and the warm pool's threads are
    already making candidates' directories, which a umask of 0177 would leave without
    their search bit (seen: a candidate's torch_extensions at 0600, its build denied)."""
    import tempfile
    path = os.path.abspath(path)
    d = tempfile.mkdtemp(prefix=".kagent-sock-", dir=os.path.dirname(path))
    tmp = os.path.join(d, "s")
    try:
        srv = _UnixServer(tmp, _Handler)
        try:
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except OSError:
            srv.server_close()
            raise
        srv.server_address = path
        return srv
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        os.rmdir(d)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m kagent_harness serve")
    parser.add_argument("--socket", required=True, help="Unix socket path to create")
    parser.add_argument("--device", choices=("cuda", "cpu"), default=None)
    parser.add_argument("--pool", type=int, default=2, help="warm candidate processes")
    parser.add_argument("--cache-mb", type=int, default=None,
                        help="GPU memory the trial cache may keep (default: a quarter)")
    parser.add_argument("--prepared-max", type=int, default=4)
    parser.add_argument("--sandbox", choices=("required", "best-effort"), default="required",
                        help="required (default): refuse to start unless the candidate "
                             "sandbox (bubblewrap, namespaces, the privilege drop) works "
                             "here; best-effort: run with what there is and say what is "
                             "missing in each result's harness.warnings")
    parser.add_argument("--sandbox-hide", action="append", default=[], metavar="PATH",
                        help="a path candidates must not see (repeatable): a directory "
                             "becomes an empty tmpfs, a file /dev/null")
    args = parser.parse_args(argv)
    log = ServerLog()
    if not 0 <= args.pool <= 16:
        parser.error("--pool must be in [0, 16]")
    if args.cache_mb is not None and args.cache_mb < 0:
        parser.error("--cache-mb must be >= 0")
    from kagent_harness.sandbox import harden_supervisor
    harden_supervisor()
    try:
        core = Server(args.device, args.pool,
                      None if args.cache_mb is None else args.cache_mb << 20,
                      args.prepared_max, log, sandbox=args.sandbox,
                      # The server's own socket too (the seccomp filter already stops
                      # Unix sockets; processes started before it exists miss this).
                      sandbox_hide=[os.path.abspath(p) for p in args.sandbox_hide] +
                      [os.path.abspath(args.socket)])
    except Exception as e:  # noqa: BLE001
        log.add(f"cannot start: {type(e).__name__}: {e}")
        return 2
    srv = _bind_private(args.socket)  # replaces a socket left at the path
    srv.kagent = core

    def stop(signum, _frame):
        log.add(f"signal {signum}: shutting down")
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.add(f"serving on {args.socket} (pid {os.getpid()}, device {core.device}, "
            f"pool {args.pool}, trial cache {core.env.cache.limit >> 20} MiB, sandbox "
            f"{args.sandbox})")
    try:
        srv.serve_forever(poll_interval=0.5)
    finally:
        srv.server_close()
        core.close()
        try:
            os.unlink(args.socket)
        except OSError:
            pass
        log.add("stopped" + (f": {core.fatal}" if core.fatal else ""))
    return 3 if core.fatal else 0
