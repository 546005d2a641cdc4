"""The candidate's child process: spawn, sandbox, limits, the line protocol, kills and
verdicts.

The supervisor never imports candidate code. It starts
`python -m kagent_harness.child WORKDIR DEVICE [--fd-channel N] [--profiler]` in a new
session, with
  - the sandbox (bwrap.py; docs/harness.md, "Sandbox and threat model"): bubblewrap with
    new PID, IPC, UTS, mount and (but in profile mode) network namespaces, a user
    namespace unless the supervisor is root and keeps root, all capabilities dropped,
    the host read-only, the private working directory (0700) its one writable place,
    as `nobody` ($KAGENT_CHILD_USER) through setpriv when the supervisor is root. Its
    availability is probed once (bwrap.probe); mode "required" refuses to start a
    candidate without it (SandboxUnavailable), "best-effort" falls back to `unshare -n`
    and setpriv where those work and says what is missing (`sandbox_info`);
  - an allowlisted environment (bwrap.child_env) plus TMPDIR, HOME, TRITON_CACHE_DIR,
    TORCHINDUCTOR_CACHE_DIR, TORCH_EXTENSIONS_DIR inside the working directory;
    CUDA_VISIBLE_DEVICES as requested;
  - RLIMIT_CORE=0, RLIMIT_FSIZE, RLIMIT_NPROC, RLIMIT_CPU as a backstop, RLIMIT_AS on the
    CPU only (CUDA reserves huge virtual ranges), all set before exec so every process
    of the sandbox has them; a watchdog thread that kills the sandbox when the resident
    memory of its processes passes the limit (OOM), when they are more than MAX_PROCS
    processes or MAX_TASKS threads (a fork or thread bomb: REJECTED), or when the
    working directory holds more than the scratch limit (REJECTED);
  - on cuda, one end of a SOCK_SEQPACKET socket pair (`fd_channel` keeps the other) for
    passing CUDA memory as file descriptors;
  - the protocol on its stdin/stdout (one JSON object per line); the child moves its
    own fd 1 to its stderr so the candidate's prints cannot corrupt it. Everything the
    child says is untrusted data: parsed as JSON, bounded, type-checked by the caller.
Killing a candidate kills the sandbox's init (bwrap's --json-status-fd names it), which
ends every process in its PID namespace, setsid'd or daemonized ones too; bwrap's status
gives the candidate's own exit status. Every failure becomes ChildFailure(verdict, reason).
"""

import ctypes
import json
import os
import resource
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

from kagent_harness import bwrap
from kagent_harness import procfs
from kagent_harness import protocol as P

MAX_LINE = 4 * 1024 * 1024
_NETNS_PREFIX = None
# Processes and threads of one sandbox; more is a fork or thread bomb (torch's thread
# pools on a 128-core host are a few hundred).
MAX_TASKS = int(os.environ.get("KAGENT_MAX_TASKS", "1024"))
# Processes of one sandbox (bwrap's two included): an honest candidate has one, and a
# compiler it runs briefly.
MAX_PROCS = int(os.environ.get("KAGENT_MAX_PROCS", "64"))
# Over the memory limit with more processes than this, the sum of their resident sets
# (which counts pages a fork shares in each) is a fork bomb's, not one process's hog.
MEM_PROCS = 8
# RLIMIT_NPROC, a backstop behind the watchdog: it counts the tasks of the child's user
# (inside a user namespace, of that namespace; it does not bind root).
NPROC_LIMIT = 4 * MAX_TASKS
FSIZE_LIMIT = 16 * 1024**3


def innermost_frame(dump):
    """The innermost frame ('File "f.py", line 3 in forward') of the main thread in a
    faulthandler dump, or "". CPython lists the newest thread first, so the main thread's
    block is the last, whichever thread ("Current thread") caught the signal."""
    blocks = [b for b in dump.split("\n\n") if "(most recent call first)" in b]
    block = (blocks or [""])[-1]
    for line in block.splitlines():
        if line.strip().startswith("File "):
            return line.strip()
    return ""


def scratch_limit_bytes():
    """The working directory's size limit ($KAGENT_SCRATCH_MB, default 8 GiB): it lives
    in RAM on /dev/shm."""
    return int(os.environ.get("KAGENT_SCRATCH_MB", "8192")) << 20

CRASH_SIGNALS = {signal.SIGSEGV: "SIGSEGV", signal.SIGBUS: "SIGBUS", signal.SIGILL: "SIGILL",
                 signal.SIGFPE: "SIGFPE", signal.SIGABRT: "SIGABRT", signal.SIGTRAP: "SIGTRAP"}


class SandboxUnavailable(RuntimeError):
    """Mode "required" and the host lacks part of the sandbox (the message says what and
    how to fix it): an INFRA_ERROR, the worker's fault, not the candidate's."""


class ChildFailure(Exception):
    def __init__(self, verdict, reason):
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


def _preexec(parent_pid, limits):
    """A preexec_fn: the rlimits (set before exec, so bwrap's processes inherit them) and
    SIGKILL when the supervisor dies (a worker killed mid-measurement must not leave the
    candidate running on its GPU; bwrap's --die-with-parent carries it on past setpriv,
    which clears it). prctl is looked up here, before the fork: the child only calls it."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        prctl = None

    def fn():
        for res, soft, hard in limits:
            try:
                resource.setrlimit(res, (soft, hard))
            except (OSError, ValueError):
                pass
        if prctl is not None:
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
    """A private 0700 directory, on /dev/shm when it has room (input files are big), in
    a place the dropped user can reach (bwrap.scratch_base). Its name carries this
    process's pid and PID namespace (kagent-<pid>-p<namespace>-*), so that
    sweep_stale_workdirs can tell a dead supervisor's leftovers from a live one's."""
    import tempfile
    if base is None:
        base = bwrap.scratch_base(need_bytes=16 * 1024**3)
    d = tempfile.mkdtemp(prefix=f"kagent-{os.getpid()}-p{_pid_namespace()}-", dir=base)
    os.chmod(d, 0o700)
    return d


def _pid_namespace():
    """This process's PID namespace (its /proc/self/ns/pid inode), 0 when unknown: a pid
    means something only within it (containers sharing /dev/shm do not share pids)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True   # another user's process: alive
    return True


def sweep_stale_workdirs(log=None, bases=None, min_age_s=60.0):
    """Removes the private directories (make_workdir) that supervisors now gone left
    behind: a kagent-<pid>-p<namespace>-* entry of the scratch places, made in this
    process's PID namespace, whose pid no process has and that nothing changed for
    `min_age_s`. A supervisor killed with SIGKILL, or one whose
    background reaping was cut short at its exit, leaves its candidates' workdirs; on
    /dev/shm they hold RAM, and profile mode hides each one with a bwrap argument (with
    thousands, bwrap refuses its command line). Entries of another form are left alone.
    Returns how many were removed."""
    import tempfile
    if bases is None:
        bases = sorted({"/dev/shm", tempfile.gettempdir()})
    removed, now, ns = 0, time.time(), f"p{_pid_namespace()}"
    for base in bases:
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for n in names:
            parts = n.split("-", 3)
            if len(parts) != 4 or parts[0] != "kagent" or not parts[1].isdigit() or \
                    parts[2] != ns or ns == "p0":
                continue
            p = os.path.join(base, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode) or now - st.st_mtime < min_age_s or \
                    int(parts[1]) == os.getpid() or _pid_alive(int(parts[1])):
                continue
            shutil.rmtree(p, ignore_errors=True)
            removed += not os.path.lexists(p)
    if removed and log is not None:
        log.add(f"removed {removed} workdirs of supervisors no longer running")
    return removed


class Child:
    """One candidate child process. Not thread-safe: one caller drives it (kill() may be
    called from any thread)."""

    def __init__(self, workdir, device, timeout_s, memory_limit_mb, log,
                 network_isolation=True, cuda_visible_devices=None, extra_env=None,
                 drop_privileges=None, keep_injection=False, sandbox=bwrap.REQUIRED,
                 sandbox_hide=()):
        self.workdir = workdir
        self.device = device
        # Time the supervisor held this process stopped (hold()/release(): while another
        # candidate is timed); a stop does not count against its deadlines.
        self._stops_lock = threading.Lock()
        self._stopped_s = 0.0
        self._stopped_at = None
        self._holds = 0
        self.deadline = time.monotonic() + timeout_s
        # Set once the process was told to load the candidate's code (load()): a death
        # before that is never the candidate's (_death).
        self.loaded = False
        self.timeout_s = timeout_s
        self.memory_limit = int(memory_limit_mb) * 1024 * 1024
        self.log = log
        self.network_isolation = network_isolation
        self.cuda_visible_devices = cuda_visible_devices
        self.extra_env = extra_env or {}
        # None: the default, the drop when the supervisor is root.
        self.drop_privileges = drop_privileges
        # Profile mode: an inherited CUDA_INJECTION64_PATH is Nsight Compute's own
        # injection and must reach the candidate's process.
        self.keep_injection = keep_injection
        if sandbox not in bwrap.MODES:
            raise ValueError(f"sandbox must be one of {', '.join(bwrap.MODES)}")
        self.sandbox = sandbox
        self.sandbox_hide = tuple(sandbox_hide or ())
        self.sandbox_info = None
        self.status = None        # bwrap.StatusReader
        self.fd_channel = None    # cuda: the parent's end of the fd-passing socket pair
        self.proc = None
        self.stderr_path = os.path.join(workdir, "child_stderr.log")
        self._buf = b""
        self._oom_killed = False
        self._killed_timeout = False
        self._killed_reason = None   # (verdict, reason): the watchdog's other kills
        self._oom_base = None
        self._stop = threading.Event()
        self.peak_rss = 0
        self.peak_tasks = 0
        self.scratch_limit = scratch_limit_bytes()
        self.trace_path = None  # the CUPTI tracer's file, when the process has one
        # Called once with the process's "ready" reply (import and construction done),
        # before the caller sees it: measure.write_candidate's build-cache store.
        self.on_ready = None

    def configure(self, timeout_s, memory_limit_mb):
        """Sets the limits of the request a started process now serves (a warm process
        was started before its request was known): the wall-clock budget counted from
        load(), the resident-memory limit, and the CPU-time backstop (on every process
        of the sandbox)."""
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.memory_limit = int(memory_limit_mb) * 1024 * 1024
        if self.proc is not None and self.proc.poll() is None:
            cpu = int(timeout_s * max(2, os.cpu_count() or 2) + 60)
            for pid in procfs.tree(self.proc.pid):
                try:
                    resource.prlimit(pid, resource.RLIMIT_CPU, (cpu, cpu + 5))
                    if self.device == "cpu":
                        as_limit = self.memory_limit + 8 * 1024**3
                        resource.prlimit(pid, resource.RLIMIT_AS, (as_limit, as_limit))
                except ProcessLookupError:
                    pass
                except (OSError, ValueError, AttributeError) as e:
                    self.log.add(f"could not set the CPU-time or address-space limit on "
                                 f"the child: {e}")
                    break

    # -- lifecycle --------------------------------------------------------------------
    def _limits(self, drop):
        cpu = int(self.timeout_s * max(2, os.cpu_count() or 2) + 60)
        lim = [(resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_FSIZE, FSIZE_LIMIT, FSIZE_LIMIT),
               (resource.RLIMIT_CPU, cpu, cpu + 5)]
        if self.device == "cpu":
            # Torch + Triton reserve a few GiB of address space before any work.
            as_limit = self.memory_limit + 8 * 1024**3
            lim.append((resource.RLIMIT_AS, as_limit, as_limit))
        if drop or os.geteuid() != 0:
            lim.append((resource.RLIMIT_NPROC, NPROC_LIMIT, NPROC_LIMIT))
        return lim

    def _plan(self):
        """(argv prefix, uid the candidate runs as, sandbox_info) for this start. Raises
        SandboxUnavailable in mode required when the probe found something missing."""
        pr = bwrap.probe(self.log, self.device)
        drop = self.drop_privileges if self.drop_privileges is not None \
            else os.geteuid() == 0
        info = {"mode": self.sandbox, "tool": None, "namespaces": [], "uid": os.geteuid(),
                "network": "isolated" if self.network_isolation else "shared",
                "hidden": list(self.sandbox_hide), "scratch": self.workdir,
                "scratch_limit_bytes": self.scratch_limit, "max_tasks": MAX_TASKS,
                "max_processes": MAX_PROCS,
                "missing": list(pr["missing"])}
        if not pr["ok"] and self.sandbox == bwrap.REQUIRED:
            raise SandboxUnavailable("the candidate sandbox is required but not available "
                                     "here: " + bwrap.describe(pr))
        prefix, uid, gid, inside = [], os.geteuid(), os.getegid(), None
        if drop and os.geteuid() == 0:
            if pr["drop"]:
                _, uid, gid = pr["drop"]
                if pr["user_ns"] or not pr["bwrap_ok"]:
                    prefix = bwrap.drop_prefix(uid, gid)
                else:
                    inside = (uid, gid)
            else:
                info["missing"].append("the privilege drop: the candidate runs as root")
        if not drop and os.geteuid() == 0:
            info["missing"].append("the privilege drop (drop_privileges false): the "
                                   "candidate runs as root")
        if uid != os.geteuid():
            for root, dirs, _files in os.walk(self.workdir):
                for name in [root] + [os.path.join(root, d) for d in dirs]:
                    os.chown(name, uid, gid)
            os.chown(self.stderr_path, uid, gid)
            if inside:
                # bwrap's chdir into it runs as root without capabilities: it needs the
                # search bit (other candidates cannot see this directory at all).
                os.chmod(self.workdir, 0o711)
        info["uid"], info["gid"] = uid, gid
        if pr["bwrap_ok"]:
            cfg = bwrap.Config(self.workdir, self.device, network=self.network_isolation,
                               user_ns=os.geteuid() != 0 or (uid != 0 and not inside),
                               hide=self.sandbox_hide, drop_inside=inside,
                               profiler=self.keep_injection)
            if self.keep_injection:
                info["missing"].append(
                    "private /tmp and /dev/shm (profile mode: the host's are shared, "
                    "Nsight Compute's injection needs them)")
                info["missing"].append(
                    "the seccomp filter's Unix-socket rule (profile mode: Nsight "
                    "Compute's injection makes Unix sockets)")
            info["tool"] = pr["tool"]
            info["namespaces"] = cfg.namespaces()
            return prefix, cfg, info
        # Best effort without bwrap: a network namespace where unshare works.
        if self.network_isolation:
            net = netns_prefix(self.log)
            if net:
                info["tool"] = " ".join(net[:-1])
                info["namespaces"] = ["net"] + (["user"] if "-r" in net else [])
                prefix = net + prefix  # unshare as the supervisor, then the drop
            else:
                info["network"] = "shared (unshare not permitted)"
        return prefix, None, info

    def start(self):
        env = bwrap.child_env(os.environ, self.keep_injection)
        for sub in ("tmp", "triton_cache", "inductor_cache", "torch_extensions", "cache"):
            os.makedirs(os.path.join(self.workdir, sub), exist_ok=True)
            # Its mode is set, not left to the umask (the candidate's user owns it below).
            os.chmod(os.path.join(self.workdir, sub), 0o700)
        env.update({
            "PYTHONPATH": harness_root() + (os.pathsep + os.environ["PYTHONPATH"]
                                            if os.environ.get("PYTHONPATH") else ""),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "HOME": self.workdir,
            "TMPDIR": os.path.join(self.workdir, "tmp"),
            "XDG_CACHE_HOME": os.path.join(self.workdir, "cache"),
            "TRITON_CACHE_DIR": os.path.join(self.workdir, "triton_cache"),
            "TORCHINDUCTOR_CACHE_DIR": os.path.join(self.workdir, "inductor_cache"),
            "TORCH_EXTENSIONS_DIR": os.path.join(self.workdir, "torch_extensions"),
        })
        env.pop("TRITON_INTERPRET", None)
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        elif self.cuda_visible_devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.cuda_visible_devices
        env.update(self.extra_env)
        self._stderr = open(self.stderr_path, "wb")
        # Read back through a handle of our own: the candidate may replace the file in
        # its directory with a link to a host file this process can read.
        self._stderr_read = open(self.stderr_path, "rb")
        prefix, cfg, info = self._plan()
        self.sandbox_info = info
        argv = [sys.executable, "-m", "kagent_harness.child", self.workdir, self.device]
        pass_fds = []
        theirs = status_w = None
        if self.device == "cuda":
            self.fd_channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            pass_fds.append(theirs.fileno())
            argv += ["--fd-channel", str(theirs.fileno())]
        if self.keep_injection:
            argv.append("--profiler")
        if cfg is not None:
            status_r, status_w = os.pipe()
            cfg.status_fd = status_w
            pass_fds.append(status_w)
            argv = cfg.argv(shutil.which("bwrap") or "bwrap") + argv
        argv = prefix + argv
        self._oom_base = procfs.oom_kills()
        drop = info["uid"] != os.geteuid()
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                cwd=self.workdir, env=env, start_new_session=True, close_fds=True,
                pass_fds=pass_fds, preexec_fn=_preexec(os.getpid(), self._limits(drop)))
        finally:
            if theirs is not None:
                theirs.close()
            if status_w is not None:
                os.close(status_w)
        if cfg is not None:
            self.status = bwrap.StatusReader(status_r)
        self.argv = argv
        self._watchdog = threading.Thread(target=self._watch, daemon=True)
        self._watchdog.start()
        self.log.add(f"candidate child started, pid {self.proc.pid}, sandbox "
                     f"{info['tool'] or 'none'} ({', '.join(info['namespaces']) or 'no'} "
                     f"namespaces, uid {info['uid']})"
                     + (f"; missing: {'; '.join(info['missing'])}" if info["missing"] else ""))

    def _watch(self):
        n = 0
        while not self._stop.wait(0.1):
            if self.proc.poll() is not None:
                return
            rss, procs, tasks = procfs.usage(self.proc.pid)
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_tasks = max(self.peak_tasks, tasks)
            if procs > MAX_PROCS or tasks > MAX_TASKS:
                self._kill_for(P.REJECTED, f"the candidate ran {procs} processes and "
                               f"{tasks} threads, over the limit of {MAX_PROCS} processes "
                               f"and {MAX_TASKS} threads (a fork or thread bomb)")
                return
            if rss > self.memory_limit and procs > MEM_PROCS:
                self._kill_for(P.REJECTED, f"the candidate ran {procs} processes holding "
                               f"{rss >> 20} MiB together, over the limit of "
                               f"{self.memory_limit >> 20} MiB (a fork bomb)")
                return
            if rss > self.memory_limit:
                self._oom_killed = True
                self.log.add(f"child resident memory {rss >> 20} MiB over the limit "
                             f"{self.memory_limit >> 20} MiB: killing it")
                self.kill()
                return
            n += 1
            if n % 5 == 0:
                used, entries = procfs.scratch_usage(self.workdir)
                if used > self.scratch_limit or entries >= 200000:
                    self._kill_for(P.REJECTED, f"the candidate's scratch directory holds "
                                   f"{used >> 20} MiB in {entries} entries, over the limit "
                                   f"of {self.scratch_limit >> 20} MiB / 200000 entries "
                                   "(filling the disk)")
                    return

    def _kill_for(self, verdict, reason):
        self._killed_reason = (verdict, reason)
        self.log.add(reason + ": killing it")
        self.kill()

    def _sandbox_pids(self):
        """The sandbox's processes: bwrap's (self.proc) and all below it."""
        if self.proc is None:
            return []
        return procfs.tree(self.proc.pid)

    def _ns_init(self):
        """The host pid of the sandbox's init (a child of bwrap), or None. The status pipe
        is the candidate's only from bwrap (it closes it in the sandbox), yet the pid is
        checked to be bwrap's child before it is signalled."""
        kids = procfs.children(self.proc.pid) if self.proc is not None else []
        if self.status is not None and self.status.child_pid in kids:
            return self.status.child_pid
        return kids[0] if len(kids) == 1 and self.status is not None else None

    def kill(self):
        """SIGKILLs every process of the sandbox: its init (the PID namespace ends with
        it), bwrap, and (without bwrap) every descendant and the process group."""
        if self.proc is None or self.proc.poll() is not None:
            return
        init = self._ns_init()
        targets = [init] if init else []
        if self.status is None:
            targets += self._sandbox_pids()[1:]
        for pid in targets:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass

    def end(self, timeout_s=10.0):
        """Kills the sandbox's processes (kill) and waits until every one of them has
        exited (procfs.exited: a zombie has released its files, its CUDA context with
        them, so no GPU work of it is left), at most `timeout_s`. What close does
        without the candidate's own clean exit (its interpreter's shutdown, the tracer's
        flush: most of a second on the H100). Returns whether they all exited in time;
        the process stays for close/retire to reap."""
        if self.proc is None:
            return True
        procs = []
        for pid in self._sandbox_pids():
            st = procfs.start_time(pid)
            if st is not None:
                procs.append((pid, st[0]))
        self.kill()
        end = time.monotonic() + timeout_s
        while True:
            procs = [(p, t) for p, t in procs if not procfs.exited(p, t)]
            if not procs:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.002)

    @property
    def deadline(self):
        """When the process's time runs out: the time set, moved on by every stop since."""
        return self._deadline + (self.stopped_seconds() - self._deadline_stops)

    @deadline.setter
    def deadline(self, t):
        self._deadline = t
        self._deadline_stops = self.stopped_seconds()

    def stopped_seconds(self):
        """Seconds the supervisor has held this process stopped so far (a stop still going
        on included)."""
        with self._stops_lock:
            now = self._stopped_s
            if self._stopped_at is not None:
                now += time.monotonic() - self._stopped_at
            return now

    def hold(self):
        """Stops every process of the sandbox (SIGSTOP) until the matching release();
        holds nest (a timing inside a worker's hold_stopped): the processes are continued
        when the last one is released. True when the process is held (give it back with
        release()), False when there was nothing to stop."""
        with self._stops_lock:
            if self._holds:
                self._holds += 1
                return True
            if not self.signal_all(signal.SIGSTOP):
                return False
            self._holds = 1
            self._stopped_at = time.monotonic()
            return True

    def release(self):
        with self._stops_lock:
            self._holds -= 1
            if self._holds > 0:
                return
            self._holds = 0
            self.signal_all(signal.SIGCONT)
            if self._stopped_at is not None:
                self._stopped_s += time.monotonic() - self._stopped_at
                self._stopped_at = None

    def signal_all(self, sig):
        """Sends sig (SIGSTOP, SIGCONT) to every process of the sandbox, twice over for
        processes forked while the first pass ran. Returns how many were signalled."""
        done = set()
        for _ in range(2):
            for pid in self._sandbox_pids():
                if pid in done:
                    continue
                try:
                    os.kill(pid, sig)
                    done.add(pid)
                except (ProcessLookupError, PermissionError):
                    pass
        return len(done)

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
        if self.fd_channel is not None:
            try:
                self.fd_channel.close()
            except OSError:
                pass
        try:
            self._stderr.close()
        except OSError:
            pass

    def where_stuck(self, wait_s=1.0):
        """Where the candidate's process is, asked of one about to be stopped for not
        answering: its threads' stacks, which faulthandler prints to stderr on SIGUSR1
        (child.main registers it), go to the log, and the innermost frame of its main
        thread is returned (innermost_frame); "" when no dump came within wait_s (a
        process stuck in C code without the GIL still prints)."""
        # The interpreter only: bwrap's own argv names the module too, and SIGUSR1 would
        # end bwrap (no handler), and the sandbox with it, before the dump.
        pids = [p for p in self._sandbox_pids()
                if procfs.cmdline(p)[1:3] == ["-m", "kagent_harness.child"]]
        if not pids:
            return ""
        try:
            start = os.fstat(self._stderr.fileno()).st_size
        except (OSError, AttributeError, ValueError):
            return ""
        for pid in pids:
            try:
                os.kill(pid, signal.SIGUSR1)
            except (ProcessLookupError, PermissionError):
                pass
        end = time.monotonic() + wait_s
        dump, size, grew = "", -1, time.monotonic()
        while time.monotonic() < end:  # until the dump has stopped growing for 0.2 s
            time.sleep(0.05)
            dump = self._stderr_from(start)
            if len(dump) != size:
                size, grew = len(dump), time.monotonic()
            elif "File " in dump and time.monotonic() - grew >= 0.2:
                break
        if not dump:
            return ""
        self.log.add("the candidate's threads when it was stopped (faulthandler):\n" +
                     dump[-6000:])
        return innermost_frame(dump)

    def _stderr_from(self, offset, limit=65536):
        try:
            f = self._stderr_read
            f.seek(offset)
            return f.read(limit).decode("utf-8", "replace")
        except (OSError, AttributeError, ValueError):
            return ""

    def stderr_tail(self, limit=8192):
        try:
            f = self._stderr_read
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read(limit).decode("utf-8", "replace")
        except (OSError, AttributeError, ValueError):
            return ""

    # -- protocol ---------------------------------------------------------------------
    def load(self):
        """Tells the started process its files are ready (child_config.json and what it
        names); the time limit counts from here, not from the process start, which
        overlaps the supervisor's own work."""
        self.deadline = time.monotonic() + self.timeout_s
        self.send({"cmd": "load"})
        self.loaded = True

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
        stops = self.stopped_seconds()  # time held stopped from here on moves `end` on
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = end + (self.stopped_seconds() - stops) - time.monotonic()
            if left <= 0:
                self._killed_timeout = True
                where = self.where_stuck()
                self.kill()
                raise ChildFailure(P.TIMEOUT, f"no answer from the candidate within "
                                   f"{limit:.1f}s during {phase}" +
                                   (f" (its main thread was at {where})" if where else ""))
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
        if self.on_ready is not None and msg.get("event") == "ready" and msg.get("ok"):
            hook, self.on_ready = self.on_ready, None
            hook(msg)
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

    def _exit_status(self, rc):
        """(kind, value) of how the candidate's command ended: ("signal", N),
        ("exit", N), or ("sandbox", rc) when bwrap ended without reporting it."""
        if self.status is None:
            return ("signal", -rc) if rc < 0 else ("exit", rc)
        self.status.join(2.0)
        code = self.status.exit_code
        if code is None:
            return "sandbox", rc
        if code > 128:
            return "signal", code - 128
        return "exit", code

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
        if self._killed_reason is not None:
            verdict, reason = self._killed_reason
            return ChildFailure(verdict, f"killed {when}: {reason}")
        if self._killed_timeout:
            return ChildFailure(P.TIMEOUT, f"killed {when} after the time limit")
        kind, value = self._exit_status(rc)
        if not self.loaded:
            # No candidate code ever ran in it: the sandbox or the interpreter failed on
            # its own (on the H100, bwrap could not remount a scratch directory that a
            # neighbour removed between the listing and the mount, in profile mode).
            return ChildFailure(P.INFRA_ERROR, f"the candidate's process ended {when}, "
                                f"before it was given the candidate's code (exit status "
                                f"{rc})" +
                                (f"; its stderr ends: {tail[-400:]}" if tail.strip() else ""))
        if kind == "sandbox":
            if self.status.child_pid is None:
                return ChildFailure(P.INFRA_ERROR, f"the sandbox did not start {when} "
                                    f"(bwrap exit status {rc}): {tail[-500:]}")
            if self._oom_rose():
                return ChildFailure(P.OOM, f"the candidate's sandbox was killed {when} by "
                                    "the kernel OOM killer")
            # bwrap's own error (a mount it could not make) is on the stderr it shares
            # with the candidate.
            return ChildFailure(P.CRASH, f"the candidate's sandbox ended {when} without "
                                f"its status (bwrap exit status {rc}; killed from outside "
                                "it, not by the harness)" +
                                (f"; its stderr ends: {tail[-400:]}" if tail.strip() else ""))
        if kind == "signal":
            sig = value
            if sig in CRASH_SIGNALS:
                return ChildFailure(P.CRASH, f"the candidate process died of "
                                    f"{CRASH_SIGNALS[sig]} {when}")
            if sig == signal.SIGXFSZ:
                return ChildFailure(P.CRASH, f"the candidate process exceeded the file size "
                                    f"limit {when}")
            if sig == signal.SIGXCPU:
                return ChildFailure(P.TIMEOUT, f"CPU time limit exceeded {when}")
            if sig == signal.SIGKILL:
                if self._oom_rose():
                    return ChildFailure(P.OOM, f"the candidate process was SIGKILLed {when} "
                                        "by the kernel OOM killer (its OOM-kill count rose)")
                if self.status is not None:
                    return ChildFailure(P.CRASH, f"the candidate process was SIGKILLed "
                                        f"{when} from inside its sandbox (it killed itself "
                                        "or its process group, e.g. kill(-1) or kill(0); "
                                        "the OOM killer did not run)")
                return ChildFailure(P.CRASH, f"the candidate process was SIGKILLed {when} "
                                    "by someone other than the harness (the kernel OOM "
                                    "killer did not run)")
            return ChildFailure(P.CRASH, f"the candidate process died of signal {sig} {when}")
        rc = value
        low = tail.lower()
        if "out of memory" in low or "memoryerror" in low:
            return ChildFailure(P.OOM, f"the candidate process exited with code {rc} {when} "
                                "(out of memory)")
        return ChildFailure(P.CRASH, f"the candidate process exited with code {rc} {when}")

    def _oom_rose(self):
        now = procfs.oom_kills()
        return now is not None and self._oom_base is not None and now > self._oom_base


def scratch_open(path, write):
    """Opens a file in a candidate's working directory for the supervisor, which may be
    root and sees the host: never through a symlink the candidate planted, never a FIFO
    or device (reading one would block or escape). Writing replaces whatever is at path
    with a new file. Returns a binary file object; raises OSError."""
    import stat
    if write:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        return os.fdopen(fd, "wb")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return os.fdopen(fd, "rb")


def harden_supervisor():
    """The candidate child runs as the same user: make this process non-dumpable so it
    cannot attach to us or read /proc/<pid>/mem (no effect against root; see docs)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass
