"""The candidate's child process: spawn, limits, the line protocol, kills and verdicts.

The supervisor never imports candidate code. It starts
`python -m kagent_harness.child WORKDIR` in a new session (its own process group), with
  - a private working directory (0700), TMPDIR, HOME, TRITON_CACHE_DIR,
    TORCHINDUCTOR_CACHE_DIR and TORCH_EXTENSIONS_DIR inside it;
  - CUDA_VISIBLE_DEVICES as requested (inherited otherwise);
  - `unshare -n` (no network) when the OS allows it, `unshare -r -n` as a second try, and
    otherwise no isolation with a log line saying so;
  - RLIMIT_CORE=0, RLIMIT_CPU as a backstop, RLIMIT_AS on the CPU only (CUDA reserves
    huge virtual ranges) and, everywhere, a watchdog thread that kills the process group
    when the resident memory of the child and its descendants passes the limit;
  - the protocol on its stdin/stdout (one JSON object per line); the child moves its
    own fd 1 to its stderr so the candidate's prints cannot corrupt it. Everything the
    child says is untrusted data: parsed as JSON, bounded, type-checked by the caller.
Every failure becomes ChildFailure(verdict, reason).
"""

import ctypes
import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import threading
import time

from kagent_harness import protocol as P

MAX_LINE = 4 * 1024 * 1024
_NETNS_PREFIX = None

CRASH_SIGNALS = {signal.SIGSEGV: "SIGSEGV", signal.SIGBUS: "SIGBUS", signal.SIGILL: "SIGILL",
                 signal.SIGFPE: "SIGFPE", signal.SIGABRT: "SIGABRT", signal.SIGTRAP: "SIGTRAP"}


class ChildFailure(Exception):
    def __init__(self, verdict, reason):
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


def _die_with_parent(parent_pid):
    """A preexec_fn: the candidate's process gets SIGKILL when the supervisor dies (a
    worker killed mid-measurement must not leave the candidate running on its GPU).
    Linux only; elsewhere None. The supervisor's own timeouts still kill the group.
    prctl is looked up here, before the fork: the child only calls it."""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def fn():
        prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
        if os.getppid() != parent_pid:
            os._exit(127)
    return fn


def harness_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def netns_prefix(log):
    """The argv prefix that puts the child in a fresh network namespace, or []."""
    global _NETNS_PREFIX
    if _NETNS_PREFIX is None:
        _NETNS_PREFIX = []
        if shutil.which("unshare"):
            for prefix in (["unshare", "-n", "--"], ["unshare", "-r", "-n", "--"]):
                try:
                    rc = subprocess.run(prefix + ["true"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, timeout=10).returncode
                except (OSError, subprocess.TimeoutExpired):
                    rc = 1
                if rc == 0:
                    _NETNS_PREFIX = prefix
                    break
    if _NETNS_PREFIX:
        log.add("network isolation: " + " ".join(_NETNS_PREFIX[:-1]))
    else:
        log.add("network isolation: not available (unshare not permitted); child has network")
    return list(_NETNS_PREFIX)


def make_workdir(base=None):
    """A private 0700 directory, on /dev/shm when it has room (input files are big)."""
    import tempfile
    if base is None and os.path.isdir("/dev/shm"):
        try:
            st = os.statvfs("/dev/shm")
            if st.f_bavail * st.f_frsize >= 16 * 1024**3 and os.access("/dev/shm", os.W_OK):
                base = "/dev/shm"
        except OSError:
            pass
    d = tempfile.mkdtemp(prefix="kagent-", dir=base)
    os.chmod(d, 0o700)
    return d


def _rss_bytes(pid):
    """Resident memory of pid and its descendants (Linux /proc), 0 when gone."""
    total, stack, seen = 0, [pid], set()
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
            for tid in os.listdir(f"/proc/{p}/task"):
                try:
                    with open(f"/proc/{p}/task/{tid}/children") as f:
                        stack.extend(int(c) for c in f.read().split())
                except OSError:
                    pass
        except (OSError, ValueError):
            pass
    return total


class Child:
    """One candidate child process. Not thread-safe: one caller drives it."""

    def __init__(self, workdir, device, timeout_s, memory_limit_mb, log,
                 network_isolation=True, cuda_visible_devices=None, extra_env=None,
                 drop_privileges=False, keep_injection=False):
        self.workdir = workdir
        self.device = device
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self.memory_limit = int(memory_limit_mb) * 1024 * 1024
        self.log = log
        self.network_isolation = network_isolation
        self.cuda_visible_devices = cuda_visible_devices
        self.extra_env = extra_env or {}
        self.drop_privileges = drop_privileges
        # Profile mode: an inherited CUDA_INJECTION64_PATH is Nsight Compute's own
        # injection and must reach the candidate's process.
        self.keep_injection = keep_injection
        self.proc = None
        self.stderr_path = os.path.join(workdir, "child_stderr.log")
        self._buf = b""
        self._oom_killed = False
        self._killed_timeout = False
        self._stop = threading.Event()
        self.peak_rss = 0
        self.trace_path = None  # the CUPTI tracer's file, when the process has one

    def configure(self, timeout_s, memory_limit_mb):
        """Sets the limits of the request a started process now serves (a warm process
        was started before its request was known): the wall-clock budget counted from
        load(), the resident-memory limit, and the CPU-time backstop."""
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.memory_limit = int(memory_limit_mb) * 1024 * 1024
        if self.proc is not None and self.proc.poll() is None:
            try:
                cpu = int(timeout_s * max(2, os.cpu_count() or 2) + 60)
                resource.prlimit(self.proc.pid, resource.RLIMIT_CPU, (cpu, cpu + 5))
                if self.device == "cpu":
                    as_limit = self.memory_limit + 8 * 1024**3
                    resource.prlimit(self.proc.pid, resource.RLIMIT_AS, (as_limit, as_limit))
            except (OSError, ValueError, AttributeError) as e:
                self.log.add(f"could not set the CPU-time or address-space limit on the "
                             f"child: {e}")

    # -- lifecycle --------------------------------------------------------------------
    def start(self):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("KAGENT_") or k == "TRITON_INTERPRET" or (
                    k == "CUDA_INJECTION64_PATH" and not self.keep_injection):
                del env[k]
        for sub in ("tmp", "triton_cache", "inductor_cache", "torch_extensions"):
            os.makedirs(os.path.join(self.workdir, sub), exist_ok=True)
        env.update({
            "PYTHONPATH": harness_root() + (os.pathsep + os.environ["PYTHONPATH"]
                                            if os.environ.get("PYTHONPATH") else ""),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "HOME": self.workdir,
            "TMPDIR": os.path.join(self.workdir, "tmp"),
            "TRITON_CACHE_DIR": os.path.join(self.workdir, "triton_cache"),
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(self.workdir, "inductor_cache"),
            "TORCH_EXTENSIONS_DIR": os.path.join(self.workdir, "torch_extensions"),
        })
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        elif self.cuda_visible_devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.cuda_visible_devices
        env.update(self.extra_env)
        argv = [sys.executable, "-m", "kagent_harness.child", self.workdir, self.device]
        if self.drop_privileges:
            argv = self._privilege_drop_prefix() + argv
        if self.network_isolation:
            argv = netns_prefix(self.log) + argv
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, cwd=self.workdir, env=env,
                                     start_new_session=True, close_fds=True,
                                     preexec_fn=_die_with_parent(os.getpid()))
        self._apply_limits()
        self._watchdog = threading.Thread(target=self._watch, daemon=True)
        self._watchdog.start()
        self.log.add(f"candidate child started, pid {self.proc.pid}")

    def _privilege_drop_prefix(self):
        """Runs the child as nobody when the supervisor is root: it can then neither
        read the supervisor's memory nor signal it. Needs setpriv (util-linux)."""
        if os.geteuid() != 0:
            self.log.add("privilege drop: not root, the child runs as this user")
            return []
        if not shutil.which("setpriv"):
            self.log.add("privilege drop: setpriv not found; the child runs as root")
            return []
        try:
            import pwd
            pw = pwd.getpwnam(os.environ.get("KAGENT_CHILD_USER", "nobody"))
        except KeyError:
            self.log.add("privilege drop: no such user; the child runs as root")
            return []
        uid, gid = pw.pw_uid, pw.pw_gid
        for root, dirs, files in os.walk(self.workdir):
            for name in [root] + [os.path.join(root, d) for d in dirs]:
                os.chown(name, uid, gid)
        self.log.add(f"privilege drop: the child runs as {pw.pw_name} ({uid}:{gid})")
        return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]

    def _apply_limits(self):
        pid = self.proc.pid
        try:
            resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))
            # Files the child writes (outputs, logs, caches) live in RAM on /dev/shm.
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (16 * 1024**3, 16 * 1024**3))
            cpu = int(self.timeout_s * max(2, os.cpu_count() or 2) + 60)
            resource.prlimit(pid, resource.RLIMIT_CPU, (cpu, cpu + 5))
            if self.device == "cpu":
                # Torch + Triton reserve a few GiB of address space before any work.
                as_limit = self.memory_limit + 8 * 1024**3
                resource.prlimit(pid, resource.RLIMIT_AS, (as_limit, as_limit))
        except (OSError, ValueError, AttributeError) as e:
            self.log.add(f"could not set rlimits on the child: {e}")

    def _watch(self):
        while not self._stop.wait(0.1):
            if self.proc.poll() is not None:
                return
            rss = _rss_bytes(self.proc.pid)
            self.peak_rss = max(self.peak_rss, rss)
            if rss > self.memory_limit:
                self._oom_killed = True
                self.log.add(f"child resident memory {rss >> 20} MiB over the limit "
                             f"{self.memory_limit >> 20} MiB: killing it")
                self.kill()
                return

    def kill(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                try:
                    self.proc.kill()
                except ProcessLookupError:
                    pass

    def close(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.send({"cmd": "exit"})
                self.proc.wait(timeout=5)
            except (ChildFailure, subprocess.TimeoutExpired, OSError):
                pass
        self.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        # The process group may hold stragglers (a forked grandchild): kill them too.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._stop.set()
        try:
            self._stderr.close()
        except OSError:
            pass

    def stderr_tail(self, limit=8192):
        try:
            with open(self.stderr_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - limit))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    # -- protocol ---------------------------------------------------------------------
    def load(self):
        """Tells the started process its files are ready (child_config.json and what it
        names); the time limit counts from here, not from the process start, which
        overlaps the supervisor's own work."""
        self.deadline = time.monotonic() + self.timeout_s
        self.send({"cmd": "load"})

    def remaining(self):
        return self.deadline - time.monotonic()

    def send(self, msg):
        if self.proc.poll() is not None:
            raise self._death("before a request could be sent")
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._death("while a request was being sent")

    def recv(self, timeout=None, phase="?"):
        limit = self.remaining() if timeout is None else min(timeout, self.remaining())
        end = time.monotonic() + max(0.0, limit)
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = end - time.monotonic()
            if left <= 0:
                self._killed_timeout = True
                self.kill()
                raise ChildFailure(P.TIMEOUT, f"no answer from the candidate within "
                                   f"{limit:.1f}s during {phase}")
            r, _, _ = select.select([fd], [], [], min(left, 0.5))
            if not r:
                if self.proc.poll() is not None:
                    raise self._death(f"during {phase}")
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.kill()
                    self.proc.wait(timeout=5)
                raise self._death(f"during {phase}")
            self._buf += chunk
            if len(self._buf) > MAX_LINE:
                self.kill()
                raise ChildFailure(P.REJECTED, "the candidate process flooded the protocol pipe")
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            msg = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            self.kill()
            raise ChildFailure(P.REJECTED, "the candidate process wrote garbage on the "
                               "protocol pipe")
        if not isinstance(msg, dict):
            self.kill()
            raise ChildFailure(P.REJECTED, "malformed protocol message from the candidate")
        return msg

    def request(self, msg, timeout=None, phase="?"):
        self.send(msg)
        return self.checked(self.recv(timeout, phase), phase)

    def checked(self, reply, phase):
        """Turns an error reply into ChildFailure (the child is killed: its state, CUDA
        context included, is not trusted after a failure)."""
        if reply.get("ok") is True:
            return reply
        kind = reply.get("kind")
        if kind not in P.VERDICTS or kind == P.CORRECT:
            kind = P.CRASH
        message = str(reply.get("message", "no message"))[:2000]
        self.kill()
        raise ChildFailure(kind, f"{phase}: {message}")

    def _death(self, when):
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.wait(timeout=5)
        tail = self.stderr_tail(2048)
        if self._oom_killed:
            return ChildFailure(P.OOM, f"killed {when}: resident memory over the limit "
                                f"({self.memory_limit >> 20} MiB)")
        if self._killed_timeout:
            return ChildFailure(P.TIMEOUT, f"killed {when} after the time limit")
        if rc < 0:
            sig = -rc
            if sig in CRASH_SIGNALS:
                return ChildFailure(P.CRASH, f"the candidate process died of "
                                    f"{CRASH_SIGNALS[sig]} {when}")
            if sig == signal.SIGXFSZ:
                return ChildFailure(P.CRASH, f"the candidate process exceeded the file size "
                                    f"limit {when}")
            if sig == signal.SIGXCPU:
                return ChildFailure(P.TIMEOUT, f"CPU time limit exceeded {when}")
            if sig == signal.SIGKILL:
                return ChildFailure(P.OOM, f"the candidate process was SIGKILLed {when} by "
                                    "someone other than the harness (most likely the kernel "
                                    "OOM killer)")
            return ChildFailure(P.CRASH, f"the candidate process died of signal {sig} {when}")
        low = tail.lower()
        if "out of memory" in low or "memoryerror" in low:
            return ChildFailure(P.OOM, f"the candidate process exited with code {rc} {when} "
                                "(out of memory)")
        return ChildFailure(P.CRASH, f"the candidate process exited with code {rc} {when}")


def harden_supervisor():
    """The candidate child runs as the same user: make this process non-dumpable so it
    cannot attach to us or read /proc/<pid>/mem (no effect against root; see docs)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass
