"""The candidate's sandbox (bwrap.py, sandbox.py) against real attacks, through a real
harness server on the CPU: for each attack class a candidate that tries it (a prelude
in fixtures/redteam prepended to a correct candidate) and the verdict it must get, the
host checked afterwards, and an honest candidate measured CORRECT on the same server.
Then the start-time probe: no bubblewrap refuses `serve` in mode required and runs with
a warning in best-effort."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from conftest import FIXTURES, HERE, PYDIR, read, start_server

PROBLEM = "problem_relu_add.py"
REDTEAM = os.path.join(FIXTURES, "redteam")
SECRET_ENV = {"OPENAI_API_KEY": "sk-redteam-openai", "ANTHROPIC_API_KEY": "sk-redteam-ant",
              "KAGENT_TOKEN": "redteam-token", "PGPASSWORD": "redteam-db-password",
              "DATABASE_URL": "postgres://u:redteam@db/kagent"}

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap is not installed")


def call(path, msg, timeout=300):
    from kagent_harness.server import call as server_call
    return server_call(path, msg, timeout)


def candidate(prelude=None, **subst):
    src = read("cand_relu_add_good.py")
    if prelude is None:
        return src
    text = read(prelude + ".py", REDTEAM)
    for k, v in subst.items():
        text = text.replace(f"@{k}@", str(v))
    assert "@" not in text.replace("@triton", ""), f"unfilled placeholder in {prelude}"
    return text + "\n" + src


def measure_msg(source, **extra):
    msg = {"op": "measure", "device": "cpu", "problem_source": read(PROBLEM),
           "kernel_source": source, "trials": 5, "timing_reps": 2, "warmup_iters": 1,
           "warmup_ms": 0, "call_timeout_s": 60, "timeout_s": 120,
           "time_candidate": False}
    msg.update(extra)
    return msg


@pytest.fixture(scope="module")
def srv():
    """A server with secrets in its environment, a 64 MiB scratch limit, and a hidden
    directory and file that an unprivileged candidate could read were they not hidden."""
    d = tempfile.mkdtemp(prefix="kagent-sbx-test-")
    visible = tempfile.mkdtemp(prefix=".redteam-", dir=HERE)  # not under a mask
    os.chmod(visible, 0o755)
    secret = "redteam-secret-" + uuid.uuid4().hex
    hidden_dir = os.path.join(visible, "hidden")
    os.mkdir(hidden_dir, 0o755)
    for p in (os.path.join(hidden_dir, "creds.txt"), os.path.join(visible, "key.pem"),
              os.path.join(visible, "plain.txt")):
        with open(p, "w") as f:
            f.write(secret + "\n")
        os.chmod(p, 0o644)
    env = dict(os.environ, KAGENT_SCRATCH_MB="64", **SECRET_ENV)
    path, proc, log = start_server(d, ["--sandbox-hide", hidden_dir, "--sandbox-hide",
                                       os.path.join(visible, "key.pem")], env=env)
    info = {"path": path, "proc": proc, "dir": d, "visible": visible, "secret": secret,
            "hidden": [os.path.join(hidden_dir, "creds.txt"), os.path.join(visible, "key.pem")],
            "plain": os.path.join(visible, "plain.txt")}
    yield info
    proc.terminate()
    proc.wait(timeout=30)
    log.close()
    shutil.rmtree(visible, ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)


def run(srv, source, **extra):
    r = call(srv["path"], measure_msg(source, **extra))
    assert srv["proc"].poll() is None, "the server died"
    return r


def assert_honest_correct(srv):
    r = run(srv, candidate())
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    return r


def test_the_result_says_what_isolation_the_candidate_had(srv):
    r = assert_honest_correct(srv)
    sb = r["harness"]["sandbox"]
    assert sb["tool"].startswith("bwrap") and sb["mode"] == "required"
    assert set(sb["namespaces"]) >= {"pid", "ipc", "uts", "mount", "net"}
    assert sb["missing"] == [] and sb["network"] == "isolated"
    if os.geteuid() == 0:
        assert sb["uid"] != 0
    assert not any("sandbox" in w for w in r["harness"]["warnings"])


def test_writes_outside_scratch_reach_nothing_on_the_host(srv):
    import site
    import kagent_harness
    token = uuid.uuid4().hex[:12]
    pkg = os.path.dirname(kagent_harness.__file__)
    targets = [f"/tmp/kagent_redteam_{token}", os.path.join(pkg, f"redteam_{token}.py"),
               os.path.join(site.getsitepackages()[0], f"redteam_{token}.pth"),
               os.path.join(os.path.dirname(PYDIR), f"REDTEAM_{token}"),
               f"/dev/shm/kagent_redteam_{token}", f"/var/tmp/kagent_redteam_{token}",
               os.path.join(srv["dir"], f"redteam_{token}"),
               os.path.join(srv["visible"], f"redteam_{token}")]
    r = run(srv, candidate("write_outside", PATHS=repr(targets)))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    for t in targets:
        assert not os.path.exists(t), f"the candidate wrote {t}"
    # Inside, /tmp is its own (writable, small) tmpfs: the write there "worked".
    assert f"wrote /tmp/kagent_redteam_{token}" in r["log"]
    assert_honest_correct(srv)


def test_secrets_are_not_readable(srv):
    names = sorted(SECRET_ENV)
    r = run(srv, candidate("secrets", NAMES=repr(names), FILES=repr(srv["hidden"]),
                           SECRET=srv["secret"]))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    # The same probe finds a file that is not hidden: the check can fail.
    r = run(srv, candidate("secrets", NAMES="[]", FILES=repr([srv["plain"]]),
                           SECRET=srv["secret"]))
    assert r["verdict"] == "COMPILE_ERROR" and "secrets readable" in \
        r["correctness"]["reason"], r["correctness"]["reason"]
    assert_honest_correct(srv)


def test_the_candidate_sees_only_its_sandbox(srv):
    r = run(srv, candidate("processes", SUP_PID=srv["proc"].pid))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]


def test_signals_to_the_parent_leave_the_supervisor_alive(srv):
    r = run(srv, candidate("kill_parent", SUP_PID=srv["proc"].pid))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    r = run(srv, candidate("kill_all"))
    reason = r["correctness"]["reason"]
    assert r["verdict"] == "CRASH" and "SIGKILL" in reason and "inside its sandbox" in reason, \
        reason
    assert call(srv["path"], {"op": "ping"})["ok"]
    assert_honest_correct(srv)


def test_ptrace_attach_fails(srv):
    r = run(srv, candidate("ptrace", SUP_PID=srv["proc"].pid))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]


@pytest.mark.parametrize("bomb", ["fork_bomb", "thread_bomb"])
def test_fork_and_thread_bombs_are_rejected_quickly(srv, bomb):
    t = time.monotonic()
    r = run(srv, candidate(bomb))
    took = time.monotonic() - t
    reason = r["correctness"]["reason"]
    assert r["verdict"] == "REJECTED" and "bomb" in reason, reason
    assert took < 60, took
    assert_honest_correct(srv)


def test_filling_scratch_is_rejected(srv):
    r = run(srv, candidate("fill_scratch"))
    reason = r["correctness"]["reason"]
    assert r["verdict"] == "REJECTED" and "filling the disk" in reason, reason
    assert_honest_correct(srv)


def _sleepers(seconds):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    if f.read() == b"sleep\0" + seconds.encode() + b"\0":
                        out.append(int(p))
            except OSError:
                pass
    return out


def test_nothing_the_candidate_started_outlives_its_verdict(srv):
    seconds = "%d.%03d" % (900 + os.getpid() % 97, os.getpid() % 1000)
    r = run(srv, candidate("daemon", SECONDS=seconds))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    deadline = time.monotonic() + 10
    while _sleepers(seconds) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _sleepers(seconds)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "a daemonized grandchild outlived its candidate's verdict"


def test_no_network_and_no_unix_sockets(srv):
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(4)
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    abstract = "kagent-redteam-" + uuid.uuid4().hex[:8]
    ab = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ab.bind("\0" + abstract)
    ab.listen(4)
    ab.setblocking(False)
    # A filesystem socket anyone may connect to, on a path the candidate can see.
    open_path = os.path.join(srv["visible"], "open.sock")
    us = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    us.bind(open_path)
    os.chmod(open_path, 0o777)
    us.listen(4)
    us.setblocking(False)
    try:
        r = run(srv, candidate("network", TCP_PORT=tcp.getsockname()[1],
                               UDP_PORT=udp.getsockname()[1], ABSTRACT=abstract,
                               UNIX_PATHS=repr([srv["path"], open_path])))
        assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
        for s in (tcp, ab, us):
            with pytest.raises(BlockingIOError):
                s.accept()
        with pytest.raises(BlockingIOError):
            udp.recvfrom(100)
    finally:
        for s in (tcp, udp, ab, us):
            s.close()
        os.unlink(open_path)
    assert_honest_correct(srv)


def test_a_request_cannot_weaken_a_required_server(srv):
    r = run(srv, candidate(), sandbox="best-effort", network_isolation=False,
            drop_privileges=False)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"]
    sb = r["harness"]["sandbox"]
    assert sb["mode"] == "required" and "net" in sb["namespaces"]
    if os.geteuid() == 0:
        assert sb["uid"] != 0


def test_quiet_stops_every_process_of_a_sandbox():
    from kagent_harness import protocol as P
    from kagent_harness.pool import ChildPool, ChildSpec, spawn
    log = P.Log()
    pool = ChildPool(ChildSpec("cpu"), 0, log, reap_async=False)
    child = spawn(ChildSpec("cpu"), log, 60, 4096)
    try:
        deadline = time.monotonic() + 30
        while len(child._sandbox_pids()) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        pids = child._sandbox_pids()
        assert len(pids) >= 3, pids  # bwrap, the namespace's init, the child

        def states():
            out = []
            for p in pids:
                with open(f"/proc/{p}/stat") as f:
                    out.append(f.read().rsplit(")", 1)[1].split()[0])
            return out
        def settle(done):
            deadline = time.monotonic() + 5
            while not done(states()) and time.monotonic() < deadline:
                time.sleep(0.05)
            return states()
        pool._active.add(child)
        with pool.quiet() as n:
            assert n == 1
            s = settle(lambda s: set(s) == {"T"})
            assert set(s) == {"T"}, s
        s = settle(lambda s: "T" not in s)
        assert "T" not in s, s
    finally:
        pool.retire(child)


def test_end_returns_once_every_process_of_the_sandbox_has_exited():
    # The final run ends the candidate's process this way before the starting kernel is
    # timed: nothing of the sandbox may still run when end() returns True.
    from kagent_harness import procfs
    from kagent_harness import protocol as P
    from kagent_harness.pool import ChildSpec, spawn
    child = spawn(ChildSpec("cpu"), P.Log(), 60, 4096)
    try:
        deadline = time.monotonic() + 30
        while len(child._sandbox_pids()) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        procs = [(p, procfs.start_time(p)) for p in child._sandbox_pids()]
        assert len(procs) >= 3 and all(st is not None for _, st in procs), procs
        t0 = time.monotonic()
        assert child.end(timeout_s=10.0)
        assert time.monotonic() - t0 < 10.0
        for pid, (started, _) in procs:
            assert procfs.exited(pid, started), (pid, procfs.start_time(pid))
        assert child.end(timeout_s=0.0)  # nothing left: at once
    finally:
        child.close()


def test_exited_tells_a_live_process_from_a_zombie_and_a_reused_pid():
    from kagent_harness import procfs
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started, state = procfs.start_time(p.pid)
        assert state in ("R", "S", "D")
        assert not procfs.exited(p.pid, started)
        assert procfs.exited(p.pid, started + 1)  # another process given the same pid
        p.kill()
        deadline = time.monotonic() + 10
        while not procfs.exited(p.pid, started) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert procfs.exited(p.pid, started)  # a zombie until reaped
        assert procfs.start_time(p.pid)[1] == "Z"
    finally:
        p.kill()
        p.wait()
    assert procfs.exited(p.pid, started)
    assert procfs.start_time(p.pid) is None


def test_a_process_that_names_itself_with_bytes_not_text_is_still_read():
    # A candidate chooses its own command name (prctl PR_SET_NAME), ')' and all.
    from kagent_harness import procfs
    code = ("import ctypes, sys, time\n"
            "ctypes.CDLL(None).prctl(15, b'\\xff) (\\xfe', 0, 0, 0)\n"
            "sys.stdout.write('named\\n'); sys.stdout.flush(); time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"named\n"
        with open(f"/proc/{p.pid}/stat", "rb") as f:
            assert b"\xff) (\xfe" in f.read()
        st = procfs.start_time(p.pid)
        assert st is not None and st[1] in ("R", "S")
        assert not procfs.exited(p.pid, st[0])
    finally:
        p.kill()
        p.wait()


# -- the start-time probe ---------------------------------------------------------------
def _path_without_bwrap(d):
    bin_dir = os.path.join(d, "bin")
    os.mkdir(bin_dir)
    for top in ("/usr/local/bin", "/usr/bin", "/bin"):
        if os.path.isdir(top):
            for name in os.listdir(top):
                dst = os.path.join(bin_dir, name)
                if name != "bwrap" and not os.path.lexists(dst):
                    os.symlink(os.path.join(top, name), dst)
    return bin_dir


def test_serve_refuses_to_start_without_bubblewrap_in_required_mode(tmp_path):
    env = dict(os.environ, PATH=_path_without_bwrap(str(tmp_path)))
    path, proc, log = start_server(str(tmp_path), env=env, wait=False)
    rc = proc.wait(timeout=120)
    log.close()
    text = open(os.path.join(str(tmp_path), "server.log")).read()
    assert rc != 0, text
    assert "bubblewrap" in text and "--sandbox=best-effort" in text, text


def test_best_effort_runs_without_bubblewrap_and_says_so(tmp_path):
    env = dict(os.environ, PATH=_path_without_bwrap(str(tmp_path)))
    path, proc, log = start_server(str(tmp_path), ["--sandbox", "best-effort"], env=env)
    try:
        r = call(path, measure_msg(candidate()))
        assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
        assert any("sandbox: missing bubblewrap" in w for w in r["harness"]["warnings"]), \
            r["harness"]["warnings"]
        assert r["harness"]["sandbox"]["tool"] != "bwrap" and \
            "pid" not in r["harness"]["sandbox"]["namespaces"]
        # A request may ask for more than the server: required is refused, as INFRA_ERROR.
        r = call(path, measure_msg(candidate(), sandbox="required"))
        assert r["verdict"] == "INFRA_ERROR" and "bubblewrap" in \
            r["correctness"]["reason"], r["correctness"]["reason"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_one_shot_required_without_bubblewrap_is_an_infra_error(tmp_path):
    env = dict(os.environ, PATH=_path_without_bwrap(str(tmp_path)), PYTHONPATH=PYDIR,
               TRITON_INTERPRET="1")
    req = measure_msg(candidate())
    del req["op"]
    p = subprocess.run([sys.executable, "-m", "kagent_harness", "measure"],
                       input=json.dumps(req), capture_output=True, text=True, env=env,
                       timeout=300)
    res = json.loads(p.stdout)
    assert res["verdict"] == "INFRA_ERROR", res["correctness"]
    assert "bubblewrap" in res["correctness"]["reason"] and \
        "best-effort" in res["correctness"]["reason"]


def test_scratch_open_refuses_links_and_fifos(tmp_path):
    from kagent_harness.sandbox import scratch_open
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    link = tmp_path / "in_0.pt"
    link.symlink_to(outside)
    with scratch_open(str(link), write=True) as f:  # replaces the link, not its target
        f.write(b"data")
    assert outside.read_text() == "keep" and not link.is_symlink()
    assert link.read_bytes() == b"data"
    link2 = tmp_path / "out_0.pt"
    link2.symlink_to(outside)
    with pytest.raises(OSError):
        scratch_open(str(link2), write=False)
    fifo = tmp_path / "out_1.pt"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        scratch_open(str(fifo), write=False)  # at once, not blocked
    with scratch_open(str(link), write=False) as f:
        assert f.read() == b"data"


def test_cuda_children_get_the_fd_channel_through_the_sandbox():
    # No GPU here: the child fails at CUDA's start, after parsing --fd-channel (a
    # descriptor that did not survive setpriv and bwrap would end it earlier, with
    # EBADF and no protocol message).
    import torch
    if torch.cuda.is_available():
        pytest.skip("a CUDA machine: tests/gpu covers the channel")
    from kagent_harness import protocol as P
    from kagent_harness.sandbox import Child, make_workdir
    d = make_workdir()
    c = Child(d, "cuda", 60, 4096, P.Log(), sandbox="best-effort")
    try:
        c.start()
        assert c.fd_channel.type == socket.SOCK_SEQPACKET
        i = c.argv.index("--fd-channel")
        assert c.argv[i - 1] == "cuda" and c.argv[i + 1].isdigit()
        reply = c.recv(timeout=60, phase="start")
        assert reply["ok"] is False and "during harness start" in reply["message"], reply
    finally:
        c.close()
        shutil.rmtree(d, ignore_errors=True)
    assert c.fd_channel.fileno() == -1  # closed with the child


def test_a_hidden_path_inside_a_bound_back_one_stays_hidden(tmp_path, monkeypatch):
    # A directory Python needs under a mask (/tmp here) is bound back; a secret the
    # operator hid inside it must be masked again, read-only, after that bind.
    from kagent_harness import bwrap
    py = tmp_path / "py"
    (py / "secret").mkdir(parents=True)
    (py / "secret" / "key").write_text("s3cret")
    (py / "mod.txt").write_text("visible\n")
    (tmp_path / "other.txt").write_text("masked")
    monkeypatch.setattr(bwrap, "needed_paths", lambda: [str(py)])
    work = tmp_path / "work"
    work.mkdir()
    cfg = bwrap.Config(str(work), "cpu", user_ns=os.geteuid() != 0,
                       hide=[str(py / "secret")])
    argv = cfg.argv(shutil.which("bwrap"))
    script = (f"cat {py}/mod.txt; ls -A {py}/secret | wc -l; "
              f"test -e {tmp_path}/other.txt && echo leak; "
              f"touch {py}/secret/x 2>/dev/null && echo writable; echo done")
    p = subprocess.run(argv + ["/bin/sh", "-c", script], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["visible", "0", "done"], p.stdout + p.stderr


def test_only_profile_mode_shares_the_hosts_tmp_and_dev_shm(tmp_path):
    # Nsight Compute's injected library reaches its frontend through /tmp and /dev/shm:
    # a profiled candidate sees the host's (Config.profiler); a measured one its own.
    from kagent_harness import bwrap
    marker = f"kagent-profiler-share-{uuid.uuid4().hex}"
    for base in ("/tmp", "/dev/shm"):
        with open(os.path.join(base, marker), "w") as f:
            f.write("host\n")
    try:
        work = tmp_path / "work"
        work.mkdir()
        script = f"ls /tmp/{marker} /dev/shm/{marker} 2>/dev/null | wc -l"
        seen = {}
        for profiler in (False, True):
            cfg = bwrap.Config(str(work), "cpu", user_ns=os.geteuid() != 0,
                               profiler=profiler)
            p = subprocess.run(cfg.argv(shutil.which("bwrap")) + ["/bin/sh", "-c", script],
                               capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p.stderr
            seen[profiler] = p.stdout.strip()
        assert seen == {False: "0", True: "2"}
    finally:
        for base in ("/tmp", "/dev/shm"):
            os.unlink(os.path.join(base, marker))


def test_links_planted_in_scratch_do_not_redirect_the_supervisor(srv):
    """The supervisor writes each trial's inputs, and reads the candidate's log, in the
    candidate's directory after its code ran: through no link the candidate planted."""
    victim = os.path.join(srv["visible"], "victim.txt")
    secret_file = os.path.join(srv["visible"], "root-only.txt")
    for p, mode in ((victim, 0o644), (secret_file, 0o600)):
        with open(p, "w") as f:
            f.write(srv["secret"] + "-" + os.path.basename(p) + "\n")
        os.chmod(p, mode)
    r = run(srv, candidate("links", VICTIM=repr(victim), SECRET_FILE=repr(secret_file),
                           MODE=repr("run")))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    with open(victim) as f:
        assert f.read() == srv["secret"] + "-victim.txt\n", "an input file went to the host"
    r = run(srv, candidate("links", VICTIM=repr(victim), SECRET_FILE=repr(secret_file),
                           MODE=repr("crash")))
    assert r["verdict"] == "COMPILE_ERROR", r["correctness"]["reason"]   # raised at import
    assert "redteam-stderr-marker" in json.dumps(r)  # the log read back is the child's own
    assert srv["secret"] not in json.dumps(r), "a host file reached the result"
    assert_honest_correct(srv)


@pytest.mark.parametrize("profiler", [False, True])
def test_the_seccomp_filter_refuses_ptrace_and_unix_sockets(profiler):
    """What the candidate's process installs on itself (bwrap.install_seccomp): ptrace of
    a process it could otherwise trace (its own child; in a user namespace the sandbox's
    init is such a process) and process_vm_readv fail with EPERM, AF_UNIX sockets with
    EACCES (in profile mode they are made: Nsight Compute's injection needs them);
    socketpair and TCP sockets still work."""
    code = r"""
import ctypes, os, socket, sys, time
sys.path.insert(0, sys.argv[1])
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
libc = ctypes.CDLL(None, use_errno=True)
def attach():
    r = libc.ptrace(16, pid, None, None)
    e = ctypes.get_errno()
    if r == 0:
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
    return r, e
before = attach()
from kagent_harness.bwrap import install_seccomp
install_seccomp(unix_sockets=sys.argv[2] == "1")
after = attach()
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
iov = Iov(ctypes.addressof(buf), 8)
vm = libc.process_vm_readv(pid, ctypes.byref(iov), 1, ctypes.byref(iov), 1, 0)
vm_errno = ctypes.get_errno()
try:
    socket.socket(socket.AF_UNIX); unix = "made"
except OSError as e:
    unix = e.errno
socket.socketpair(); socket.socket(socket.AF_INET)
os.kill(pid, 9)
print(before[0], after[0], after[1], vm, vm_errno, unix)
"""
    p = subprocess.run([sys.executable, "-c", code, PYDIR, "1" if profiler else "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    before, after, after_errno, vm, vm_errno, unix = p.stdout.split()
    import errno
    assert before == "0", "the control attach failed: the check could not fail"
    assert (after, int(after_errno)) == ("-1", errno.EPERM)
    assert (vm, int(vm_errno)) == ("-1", errno.EPERM)
    assert unix == "made" if profiler else int(unix) == errno.EACCES


def test_profile_mode_masks_other_kagent_entries_of_the_shared_tmp():
    """Profile mode shares the host's /tmp and /dev/shm (ncu needs them): every kagent-*
    entry there but the candidate's own is masked (bwrap.profiler_hidden)."""
    import tempfile
    from kagent_harness import bwrap
    own = tempfile.mkdtemp(prefix="kagent-", dir="/tmp")
    other = tempfile.mkdtemp(prefix="kagent-", dir="/tmp")
    unrelated = tempfile.mkdtemp(prefix="not-kagent-", dir="/tmp")
    try:
        work = os.path.join(own, "w")
        os.mkdir(work)
        hidden = bwrap.profiler_hidden(work)
        assert other in hidden and own not in hidden and unrelated not in hidden
        assert bwrap.Config(work, "cpu").hide == ()   # measurements mask /tmp whole
        argv = bwrap.Config(work, "cpu", profiler=True).argv()
        assert ["--bind", "/tmp", "/tmp"] == argv[argv.index("/tmp") - 1:argv.index("/tmp") + 2]
        assert ["--tmpfs", other] == argv[argv.index(other) - 1:argv.index(other) + 1]
    finally:
        for d in (own, other, unrelated):
            shutil.rmtree(d, ignore_errors=True)


def test_a_process_that_ends_before_it_has_the_candidate_is_infra_not_a_crash():
    # Nothing of the candidate ran in it (a sandbox that could not be set up, a process
    # killed from outside): the verdict must not charge the candidate.
    from kagent_harness import protocol as P
    from kagent_harness.pool import ChildSpec, spawn
    from kagent_harness.sandbox import ChildFailure
    log = P.Log()
    child = spawn(ChildSpec("cpu"), log, 60, 4096)
    try:
        os.killpg(child.proc.pid, signal.SIGKILL)
        child.proc.wait(timeout=30)
        with pytest.raises(ChildFailure) as e:
            child.load()
        assert e.value.verdict == P.INFRA_ERROR
        assert "before it was given the candidate's code" in e.value.reason
        assert not child.loaded
    finally:
        child.close()


def _plain_child(code):
    """A Child around a plain Python process (no sandbox): what recv and the stop
    accounting see is the same."""
    from kagent_harness import protocol as P
    from kagent_harness.sandbox import Child
    c = Child.__new__(Child)
    Child.__init__(c, tempfile.mkdtemp(), "cpu", 60, 1024, P.Log())
    c.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    c.status = None
    return c


def test_time_held_stopped_does_not_count_against_a_deadline():
    # A preparing process is stopped while another candidate is timed (on the H100 with
    # 16 tasks in flight, about half the time): its compile dry run's limit must count
    # only the time it could run.
    import threading
    c = _plain_child("import sys\nsys.stdin.readline()\nprint('{\"ok\": true}', flush=True)\n")
    try:
        c.deadline = time.monotonic() + 30
        assert c.hold()
        threading.Timer(2.0, c.release).start()
        c.send({"cmd": "ping"})
        t = time.monotonic()
        assert c.recv(timeout=1.0, phase="ping") == {"ok": True}  # 2 s stopped, 1 s limit
        assert time.monotonic() - t >= 1.9
        assert 1.9 <= c.stopped_seconds() < 10
        assert c.remaining() > 30 - (time.monotonic() - t) + 1.5  # moved on by the stop
    finally:
        c.proc.kill()
        c.proc.wait()


def test_a_process_that_does_not_answer_while_running_still_times_out():
    from kagent_harness import protocol as P
    from kagent_harness.sandbox import ChildFailure
    c = _plain_child("import time\ntime.sleep(60)\n")
    try:
        c.deadline = time.monotonic() + 30
        t = time.monotonic()
        with pytest.raises(ChildFailure) as e:
            c.recv(timeout=1.0, phase="ping")
        assert e.value.verdict == P.TIMEOUT and time.monotonic() - t < 10
    finally:
        c.proc.kill()
        c.proc.wait()


def test_holds_nest_and_the_last_release_continues_the_process():
    # A timing's stop inside a worker's hold_stopped: the first release must not continue
    # a process the other still holds.
    c = _plain_child("import time\ntime.sleep(60)\n")

    def state():
        with open(f"/proc/{c.proc.pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    def settle(want):
        deadline = time.monotonic() + 5
        while state() != want and time.monotonic() < deadline:
            time.sleep(0.02)
        return state()
    try:
        assert c.hold() and c.hold()
        assert settle("T") == "T"
        c.release()
        time.sleep(0.2)
        assert state() == "T"
        c.release()
        assert settle("S") in ("S", "R")
        assert c.stopped_seconds() >= 0.2
    finally:
        c.proc.kill()
        c.proc.wait()
