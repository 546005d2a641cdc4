"""The candidate's sandbox under bubblewrap: the argv, the environment allowlist, the
start-time probe. docs/harness.md, "Sandbox and threat model", says what each layer
stops and what it does not.

A candidate's process is started as
    [setpriv --reuid U --regid G --clear-groups --]  (root supervisor: the drop)
    bwrap --die-with-parent --unshare-{pid,ipc,uts[,net][,user]} [--disable-userns]
          --cap-drop ALL --json-status-fd N
          --ro-bind / /  --dev /dev  --dev-bind /dev/nvidia* ...  --proc /proc
          --tmpfs MASK (size-limited and writable for /tmp, /var/tmp, /dev/shm; empty and
          then read-only for /run, /home, /root, /mnt, /media, /srv, and the operator's
          hidden directories)  --ro-bind back what a mask hid that Python needs
          --ro-bind /dev/null FILE (hidden files)  --bind WORKDIR WORKDIR
          --remount-ro (each empty mask, /dev)  --chdir WORKDIR
          -- python -m kagent_harness.child ...
so the whole host is read-only, the one writable directory is the candidate's own
scratch (with its HOME, TMPDIR and caches), and it sees only its own processes.

Pure Python, no torch: the probe runs before anything heavy.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import threading

# Masked with an empty tmpfs: writable but small (some tools write to /tmp or /dev/shm
# whatever TMPDIR says) ...
SCRATCH_MASKS = ("/tmp", "/var/tmp", "/dev/shm")
SCRATCH_MASK_BYTES = 64 << 20
# ... except, in profile mode, these (Config.profiler).
PROFILER_SHARED = ("/tmp", "/dev/shm")
# ... or empty and read-only (home directories, runtime sockets, mounts of the host).
EMPTY_MASKS = ("/run", "/home", "/root", "/mnt", "/media", "/srv")

REQUIRED = "required"
BEST_EFFORT = "best-effort"
MODES = (REQUIRED, BEST_EFFORT)

# Environment variables that reach the candidate (besides what Child sets itself).
_ENV_NAMES = {"PATH", "LANG", "LANGUAGE", "TZ", "LD_LIBRARY_PATH", "OMP_NUM_THREADS",
              "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}
_ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "PYTHON", "TRITON_", "TORCH_", "TORCHINDUCTOR_")
# Profile mode only: Nsight Compute's injected library finds its front end through these.
_PROFILE_PREFIXES = ("NV_", "NVTX_", "NSYS_", "NCU_")


def child_env(env, keep_injection=False):
    """The allowlisted part of `env` (the supervisor's environment): everything else
    (API tokens, LLM keys, database credentials, KAGENT_* settings) is dropped."""
    out = {}
    for k, v in env.items():
        if k.startswith("KAGENT_"):
            continue
        if k == "CUDA_INJECTION64_PATH" and not keep_injection:
            continue
        if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES) or (
                keep_injection and k.startswith(_PROFILE_PREFIXES)):
            out[k] = v
    return out


def _under(path, top):
    return path == top or path.startswith(top.rstrip("/") + "/")


def needed_paths():
    """What the child's Python needs to see, from the running interpreter: the harness
    package's root, the prefixes and site-packages, the executable's directories, the
    sys.path and PYTHONPATH entries, LD_LIBRARY_PATH and the CUPTI library's directory."""
    import site
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [here, sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
             os.path.dirname(sys.executable), os.path.dirname(os.path.realpath(sys.executable))]
    try:
        paths += site.getsitepackages()
    except AttributeError:
        pass
    paths += [p for p in sys.path if p]
    for var in ("PYTHONPATH", "LD_LIBRARY_PATH"):
        paths += [p for p in os.environ.get(var, "").split(os.pathsep) if p]
    lib = os.environ.get("KAGENT_CUPTI_LIB")
    if lib:
        paths.append(os.path.dirname(os.path.abspath(lib)))
    out = []
    for p in paths:
        for q in (os.path.abspath(p), os.path.realpath(p)):
            # Never a candidate's or a job's private directory (make_workdir's kagent-*).
            if _is_private_dir(q):
                continue
            if os.path.isdir(q) and q not in out:
                out.append(q)
    return out


def _passable(directory, uid=None):
    """Whether `directory` and every directory above it let `uid` through (the search
    bit): this process's own access when uid is its effective uid; None: any user other
    than the owners (the bit for others), as the dropped user needs for its scratch."""
    d = os.path.abspath(directory)
    while True:
        try:
            st = os.stat(d)
        except OSError:
            return False
        if uid is not None and uid == os.geteuid():
            if not os.access(d, os.X_OK):
                return False
        elif not (st.st_mode & 0o001 or
                  (uid is not None and st.st_uid == uid and st.st_mode & 0o100)):
            return False
        if d == "/":
            return True
        d = os.path.dirname(d)


# Where scratch goes when the temp dir is not reachable by the dropped user.
_FALLBACK_TEMP_DIRS = ("/tmp", "/var/tmp")


def scratch_base(need_bytes=0):
    """Where the sandboxes' private directories go: /dev/shm when it has `need_bytes`
    free (input files are big), else the temp dir; either only when the dropped user can
    reach it. A worker gives its harness a private 0700 TMPDIR, which bwrap running as
    that user (user-namespace mode) could not enter: then /tmp, or /var/tmp."""
    import tempfile
    if need_bytes and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) and \
            _passable("/dev/shm"):
        try:
            st = os.statvfs("/dev/shm")
            if st.f_bavail * st.f_frsize >= need_bytes:
                return "/dev/shm"
        except OSError:
            pass
    for base in (tempfile.gettempdir(),) + _FALLBACK_TEMP_DIRS:
        if os.path.isdir(base) and os.access(base, os.W_OK) and _passable(base):
            return base
    return tempfile.gettempdir()


def _is_private_dir(path):
    import tempfile
    for base in ("/dev/shm", tempfile.gettempdir()) + _FALLBACK_TEMP_DIRS:
        if _under(path, base) and any(c.startswith("kagent-") for c in
                                      path[len(base):].split("/")):
            return True
    return False


# seccomp, per machine: AUDIT_ARCH, socket's number, and the calls refused outright with
# their errno names (io_uring_setup; ptrace, process_vm_readv, process_vm_writev).
_SECCOMP_ARCH = {
    "x86_64": (0xC000003E, 41, {425: "ENOSYS", 101: "EPERM", 310: "EPERM", 311: "EPERM"}),
    "aarch64": (0xC00000B7, 198, {425: "ENOSYS", 117: "EPERM", 270: "EPERM", 271: "EPERM"}),
}


def seccomp_program(unix_sockets=False):
    """A classic-BPF seccomp filter (bytes) for install_seccomp(), or None on an unknown
    machine: socket(AF_UNIX, ...) fails with EACCES (no connection to any Unix socket of
    the host, by path or abstract name, even where the network is shared; socketpair
    stays) unless `unix_sockets` (profile mode: Nsight Compute's injected library makes
    Unix sockets to reach its front end), io_uring_setup fails (its IORING_OP_SOCKET would bypass the rule), ptrace and
    process_vm_readv/writev fail with EPERM (in a user namespace the sandbox's own init
    runs as the candidate's user: seen attachable on the H200 without this), and
    foreign-ABI system calls (i386, x32) fail with ENOSYS."""
    import errno
    import platform
    import struct
    arch = _SECCOMP_ARCH.get(platform.machine())
    if arch is None:
        return None
    audit, nr_socket, refused = arch
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow = 0x7FFF0000

    def deny(e):
        return 0x00050000 | e  # SECCOMP_RET_ERRNO
    prog = [
        (ld, 0, 0, 4),                      # arch
        (jeq, 1, 0, audit),                 # native: skip the next
        (ret, 0, 0, deny(errno.ENOSYS)),
        (ld, 0, 0, 0),                      # nr
        (jge, 0, 1, 0x40000000),            # x32
        (ret, 0, 0, deny(errno.ENOSYS)),
    ]
    for nr, name in sorted(refused.items()):
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, deny(getattr(errno, name)))]
    if not unix_sockets:
        prog += [
            (jeq, 0, 3, nr_socket),         # socket: check its family, else allow
            (ld, 0, 0, 16),                 # args[0] (low 32 bits)
            (jeq, 0, 1, 1),                 # AF_UNIX
            (ret, 0, 0, deny(errno.EACCES)),
        ]
    prog += [(ret, 0, 0, allow)]
    return b"".join(struct.pack("<HBBI", *ins) for ins in prog)


def install_seccomp(unix_sockets=False):
    """Installs seccomp_program(unix_sockets) on the calling process for good (inherited by every
    process it starts; it cannot be removed). The candidate's process calls it itself,
    after CUDA is initialised and before the candidate's code is imported: the CUDA
    driver makes a Unix socket while it initialises (measured on the H200: cuInit fails
    with error 304 under the filter), which the filter would refuse. Sets no_new_privs
    first (the kernel's condition for an unprivileged filter; bwrap sets it already).
    Raises OSError when the kernel refuses."""
    import ctypes
    import errno
    prog = seccomp_program(unix_sockets)
    if prog is None:
        raise OSError(errno.ENOSYS, "no seccomp program for this machine")

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        e = ctypes.get_errno()
        raise OSError(e, "prctl(PR_SET_NO_NEW_PRIVS): " + os.strerror(e))
    fprog = SockFprog(len(prog) // 8, prog)
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, FILTER
        e = ctypes.get_errno()
        raise OSError(e, "prctl(PR_SET_SECCOMP): " + os.strerror(e))


def gpu_device_files():
    return sorted(p for p in glob.glob("/dev/nvidia*") if os.path.exists(p))


def profiler_hidden(workdir):
    """What profile mode hides inside the shared /tmp and /dev/shm: every kagent-* entry
    there (other candidates' scratch, workers' private dirs, other profiles' run dirs)
    but the one holding `workdir`. Made after this sandbox starts, such an entry stays
    visible to it (docs/harness.md, "What the sandbox does not cover")."""
    own = os.path.abspath(workdir)
    out = []
    for top in PROFILER_SHARED:
        try:
            names = os.listdir(top)
        except OSError:
            continue
        for n in sorted(names):
            p = os.path.join(top, n)
            if n.startswith("kagent-") and not _under(own, p):
                out.append(p)
    return tuple(out)


class Config:
    """What one candidate's sandbox is: built once per Child.start."""

    def __init__(self, workdir, device, network=True, user_ns=False, hide=(),
                 status_fd=None, drop_inside=None, profiler=False):
        self.workdir = os.path.abspath(workdir)
        # Profile mode under Nsight Compute: its injected library in the candidate's
        # process talks to the ncu frontend outside through files in /tmp and /dev/shm
        # (with them masked, the first profiled kernel waits for ever: seen on the
        # H200), so those two are the host's here (PROFILER_SHARED).
        self.profiler = profiler
        self.device = device
        self.network = network          # True: a fresh network namespace
        self.user_ns = user_ns          # True: --unshare-user (not root, or after a drop)
        self.hide = tuple(hide) + (profiler_hidden(self.workdir) if profiler else ())
        self.status_fd = status_fd
        # (uid, gid): bwrap runs as root and setpriv drops to them inside the sandbox
        # (a root supervisor whose Python the unprivileged user cannot reach, e.g.
        # under /root); else the drop, if any, happened before bwrap (setpriv prefix).
        self.drop_inside = drop_inside
        # The uid the candidate runs as: paths it could not reach need no mask.
        self.uid = drop_inside[0] if drop_inside else os.geteuid()

    def _reachable(self, path):
        """Whether bwrap (as self.uid) can reach path: every directory above it
        searchable. One it cannot reach, the candidate cannot either."""
        return os.path.lexists(path) and \
            _passable(os.path.dirname(os.path.abspath(path)), self.uid)

    def namespaces(self):
        ns = ["pid", "ipc", "uts", "mount"]
        if self.network:
            ns.append("net")
        if self.user_ns:
            ns.append("user")
        return ns

    def argv(self, bwrap="bwrap"):
        a = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        if self.network:
            a.append("--unshare-net")
        if self.user_ns:
            a += ["--unshare-user", "--disable-userns"]
        a += ["--cap-drop", "ALL"]
        if self.drop_inside:
            # Only for setpriv's drop; gone with the uid change and the bounding set.
            a += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                  "--cap-add", "CAP_SETPCAP"]
        if self.status_fd is not None:
            a += ["--json-status-fd", str(self.status_fd)]
        a += ["--ro-bind", "/", "/", "--dev", "/dev"]
        for dev in gpu_device_files():
            a += ["--dev-bind", dev, dev]
        a += ["--proc", "/proc"]
        for m in SCRATCH_MASKS:
            if self.profiler and m in PROFILER_SHARED:
                a += ["--bind", m, m]
            else:
                a += ["--perms", "1777", "--size", str(SCRATCH_MASK_BYTES), "--tmpfs", m]
        hide = [os.path.abspath(p) for p in self.hide if os.path.lexists(p)]
        ro_masks = [m for m in EMPTY_MASKS if os.path.isdir(m)] + \
            [p for p in hide if os.path.isdir(p) and self._reachable(p)]
        masks = list(SCRATCH_MASKS) + ro_masks
        back = [p for p in needed_paths()
                if any(_under(p, m) and p != m for m in masks)
                and not _under(self.workdir, p)]
        # Never a whole mask back (a script's directory /tmp on sys.path), nor a path
        # inside one bound back already.
        back = [p for p in back if not any(_under(p, q) and p != q for q in back)]
        # A hidden path the candidate could reach: on the host, or inside a bound-back
        # directory (reachable there through the searchable directories made for it).
        hide = [p for p in hide if self._reachable(p) or any(_under(p, b) for b in back)]
        hide_dirs = [p for p in hide if os.path.isdir(p)]
        hide_files = [p for p in hide if not os.path.isdir(p)]
        for m in sorted(set(ro_masks), key=len):
            a += ["--tmpfs", m]
        # A needed path inside an operator-hidden one stays visible (Python must run):
        # the operator hides secrets, not the interpreter.
        made = set()
        for p in sorted(back, key=len):
            # The directories between the mask and p, searchable (bwrap makes them 0700).
            m = max((m for m in masks if _under(p, m)), key=len)
            parts = p[len(m):].strip("/").split("/")[:-1]
            for i in range(len(parts)):
                d = m.rstrip("/") + "/" + "/".join(parts[:i + 1])
                if d not in made and not any(_under(d, b) for b in back if b != p):
                    made.add(d)
                    a += ["--perms", "0755", "--dir", d]
            a += ["--ro-bind", p, p]
        again = [h for h in hide_dirs if any(_under(h, p) and h != p for p in back)]
        for h in again:  # hidden directories inside a bound-back one: hidden again
            a += ["--tmpfs", h]
        for f in hide_files:
            a += ["--ro-bind", "/dev/null", f]
        a += ["--bind", self.workdir, self.workdir]
        # Empty masks are made read-only last (their mount points were created above),
        # and so is bwrap's /dev tmpfs (device nodes stay usable on a read-only mount).
        for m in sorted(set(ro_masks), key=len) + again:
            a += ["--remount-ro", m]
        a += ["--remount-ro", "/dev"]
        a += ["--chdir", self.workdir, "--"]
        if self.drop_inside:
            uid, gid = self.drop_inside
            a += ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                  "--bounding-set=-all", "--inh-caps=-all", "--"]
        return a


class StatusReader:
    """Reads bwrap's --json-status-fd pipe on a thread: `child_pid` (the host pid of the
    sandbox's init: killing it ends every process in the PID namespace) and `exit_code`
    (the command's status: 128 + N for signal N)."""

    def __init__(self, fd):
        self.child_pid = None
        self.exit_code = None
        self.have_pid = threading.Event()
        self._f = os.fdopen(fd, "rb", buffering=0)
        self._t = threading.Thread(target=self._run, daemon=True, name="kagent-bwrap-status")
        self._t.start()

    def _run(self):
        buf = b""
        dec = json.JSONDecoder()
        try:
            while True:
                chunk = self._f.read(4096)
                if not chunk:
                    break
                buf += chunk
                text = buf.decode("utf-8", "replace")
                while True:
                    text = text.lstrip()
                    if not text:
                        break
                    try:
                        obj, end = dec.raw_decode(text)
                    except ValueError:
                        break
                    text = text[end:]
                    if isinstance(obj, dict):
                        if isinstance(obj.get("child-pid"), int):
                            self.child_pid = obj["child-pid"]
                            self.have_pid.set()
                        if isinstance(obj.get("exit-code"), int):
                            self.exit_code = obj["exit-code"]
                buf = text.encode()
        except (OSError, ValueError):
            pass
        finally:
            self.have_pid.set()
            try:
                self._f.close()
            except OSError:
                pass

    def join(self, timeout):
        self._t.join(timeout)


# -- the start-time probe --------------------------------------------------------------
_PROBE = {}
_PROBE_LOCK = threading.Lock()


def child_user():
    """(name, uid, gid) the candidate runs as when the supervisor is root."""
    import pwd
    try:
        pw = pwd.getpwnam(os.environ.get("KAGENT_CHILD_USER", "nobody"))
    except KeyError:
        return None
    return pw.pw_name, pw.pw_uid, pw.pw_gid


def drop_prefix(uid, gid):
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


def bwrap_version(path):
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.replace("bubblewrap", "bwrap") or None


def probe(log, device="cpu"):
    """Runs the full sandbox once (`true`, and on cuda a check that /dev/nvidia* are
    visible inside) and returns what is available, cached per process and device:
    {"ok", "tool", "bwrap", "drop" (user, uid, gid) or None, "user_ns", "missing": [...],
    "fix": "..."}. Logged once."""
    with _PROBE_LOCK:
        if device in _PROBE:
            return _PROBE[device]
        res = _probe(device)
        _PROBE[device] = res
    log.add("sandbox probe: " + describe(res))
    return res


def reset_probe():
    with _PROBE_LOCK:
        _PROBE.clear()


def _probe(device):
    import tempfile
    res = {"ok": False, "tool": None, "bwrap": shutil.which("bwrap"), "drop": None,
           "user_ns": os.geteuid() != 0, "missing": [], "device_files": [],
           "root": os.geteuid() == 0, "bwrap_ok": False, "drop_mode": None}
    missing = res["missing"]
    if os.geteuid() == 0:
        user = child_user()
        if user is None:
            missing.append(f"user {os.environ.get('KAGENT_CHILD_USER', 'nobody')!r} "
                           "(KAGENT_CHILD_USER) to run candidates as")
        elif not shutil.which("setpriv"):
            missing.append("setpriv (util-linux) for the privilege drop")
        else:
            res["drop"] = user
            probe_cfg = Config("/", device, user_ns=True)
            probe_cfg.uid = user[1]
            if all(probe_cfg._reachable(p) and os.access(p, os.R_OK) for p in needed_paths()):
                res["drop_mode"] = "setpriv before bwrap, user namespace"
                res["user_ns"] = True
            else:
                res["drop_mode"] = "setpriv inside bwrap (Python not reachable by the user)"
                res["user_ns"] = False
    if not res["bwrap"]:
        missing.append("bubblewrap (bwrap not on PATH)")
        return res
    res["tool"] = bwrap_version(res["bwrap"]) or "bwrap"
    d = tempfile.mkdtemp(prefix="kagent-probe-", dir=scratch_base())
    try:
        prefix, inside = [], None
        if res["drop"]:
            os.chown(d, res["drop"][1], res["drop"][2])
            if res["user_ns"]:
                prefix = drop_prefix(res["drop"][1], res["drop"][2])
            else:
                inside = res["drop"][1:]
                os.chmod(d, 0o711)  # bwrap's chdir runs as root without capabilities
        devs = gpu_device_files() if device == "cuda" else []
        res["device_files"] = devs
        check = ("import os,socket,sys; bad=[p for p in sys.argv[1:] if not os.path.exists(p)]\n"
                 f"sys.path.insert(0, {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))!r})\n"
                 "from kagent_harness.bwrap import install_seccomp\n"
                 "try:\n install_seccomp()\nexcept OSError: sys.exit(5)\n"
                 "try:\n socket.socket(socket.AF_UNIX); u=5\nexcept OSError: u=0\n"
                 "sys.exit(3 if bad else u or (0 if os.getpid() < 10 else 4))")
        cfg = Config(d, device, network=True, user_ns=res["user_ns"], drop_inside=inside)
        argv = prefix + cfg.argv(res["bwrap"]) + [sys.executable, "-c", check] + devs
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                               cwd=d, env=child_env(os.environ))
            rc, err = p.returncode, p.stderr.strip()[-300:]
        except (OSError, subprocess.TimeoutExpired) as e:
            rc, err = -1, str(e)

        res["bwrap_ok"] = rc == 0
        if rc == 3:
            missing.append("GPU device files inside the sandbox (" + ", ".join(devs) + ")")
        elif rc == 5:
            missing.append("the seccomp filter (not installed, or a Unix socket could "
                           "still be made)")
        elif rc == 4:
            missing.append("a PID namespace (the sandbox saw foreign processes)")
        elif rc != 0:
            why = err or f"exit status {rc}"
            if res["user_ns"]:
                missing.append(f"bwrap with a user namespace failed ({why}): unprivileged "
                               "user namespaces may be disabled")
            else:
                missing.append(f"bwrap failed ({why})")
        if device == "cuda" and not devs:
            missing.append("GPU device files (/dev/nvidia*) on this host")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    res["ok"] = not missing
    return res


FIX = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), allow "
       "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or "
       "kernel.apparmor_restrict_unprivileged_userns=0), or pass --sandbox=best-effort "
       "(request field \"sandbox\": \"best-effort\") to run with what is there")


def describe(res):
    if res["ok"]:
        who = f"as {res['drop'][0]} ({res['drop'][1]}:{res['drop'][2]}; " \
              f"{res['drop_mode']})" if res["drop"] else f"as uid {os.geteuid()}"
        return (f"{res['tool']} at {res['bwrap']}: pid, ipc, uts, mount, net"
                f"{', user' if res['user_ns'] else ''} namespaces, seccomp (no AF_UNIX "
                f"sockets, no io_uring), {who}"
                + (f", devices {' '.join(res['device_files'])}" if res["device_files"] else "")
                + "; all available")
    return "missing: " + "; ".join(res["missing"]) + ". To fix: " + FIX
