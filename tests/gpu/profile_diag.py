#!/usr/bin/env python3
"""Where an ncu profile with the candidate sandbox on waits (docs/harness.md, "Sandbox in
profile mode"): runs kagent_profile_once as a worker does (a private 0700 TMPDIR), and,
with the ncu command line it used, variants of it (another working directory and TMPDIR;
inputs through files instead of shared GPU memory; no sandbox). For each run still going
after --snap seconds it records the process tree with each process's state and kernel
wait channel, the GPU's utilisation, /tmp and /dev/shm, ncu's log so far and every
Python process's stacks (SIGUSR1: the harness and the candidate's process print them),
then stops it. On the GPU machine, from the repository root, after `source .gpu/env.sh`:
    python3 tests/gpu/profile_diag.py OUT [--snap 30] [--limit 60]
"""

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=20).stdout
    except subprocess.TimeoutExpired:
        return f"({cmd}: timed out)\n"


def descendants(root):
    kids = {}
    for st in glob.glob("/proc/[0-9]*/stat"):
        try:
            parts = open(st).read().rsplit(")", 1)[1].split()
            kids.setdefault(int(parts[1]), []).append(int(st.split("/")[2]))
        except (OSError, IndexError, ValueError):
            pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[:-1]
    except OSError:
        return []


def snapshot(name, proc, out, log_path):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    pids = descendants(proc.pid)
    lines = []
    for p in pids:
        info = {}
        for f in ("wchan", "stack"):
            try:
                info[f] = open(f"/proc/{p}/{f}").read().strip()
            except OSError as e:
                info[f] = f"({e.strerror})"
        try:
            status = open(f"/proc/{p}/status").read()
            info["state"] = [x for x in status.splitlines() if x.startswith(("State", "Uid"))]
        except OSError:
            pass
        info["cmd"] = b" ".join(cmdline(p)).decode(errors="replace")[:400]
        try:
            info["cwd"] = os.readlink(f"/proc/{p}/cwd")
            info["fds"] = sorted(os.readlink(x) for x in glob.glob(f"/proc/{p}/fd/*"))[:60]
        except OSError:
            pass
        lines.append({"pid": p, **info})
    for p in pids:   # the harness and the candidate's process (never ncu itself)
        if os.path.basename(b"".join(cmdline(p)[:1])).startswith(b"python"):
            try:
                os.kill(p, signal.SIGUSR1)
            except OSError:
                pass
    time.sleep(2)
    with open(os.path.join(d, "procs.json"), "w") as f:
        json.dump(lines, f, indent=1)
    with open(os.path.join(d, "host.txt"), "w") as f:
        f.write(sh("nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv"))
        f.write(sh("nvidia-smi --query-compute-apps=pid,used_memory --format=csv"))
        f.write(sh("ls -la /tmp /dev/shm; ls -la /tmp/nsight* 2>/dev/null"))
    if log_path and os.path.exists(log_path):
        shutil.copy(log_path, os.path.join(d, "ncu_log.txt"))
    for x in lines:   # the candidate's stderr (its stacks) is in its working directory
        if "kagent_harness.child" in x["cmd"] and x.get("cwd"):
            for f in glob.glob(os.path.join(x["cwd"], "*stderr*")) + \
                    glob.glob(os.path.join(x["cwd"], "..", "*stderr*")):
                shutil.copy(f, os.path.join(d, f"child_{x['pid']}_{os.path.basename(f)}"))


def run(name, argv, env, cwd, out, snap, limit, log_path=None):
    print(f"== {name}: {' '.join(argv)[:300]}", flush=True)
    t = time.monotonic()
    with open(os.path.join(out, f"{name}.stdout"), "wb") as so, \
            open(os.path.join(out, f"{name}.stderr"), "wb") as se:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=so, stderr=se,
                                start_new_session=True)
        ncu_argv = None
        while proc.poll() is None and time.monotonic() - t < snap:
            for p in descendants(proc.pid):
                c = cmdline(p)
                if c and os.path.basename(c[0].decode()) in ("ncu", "ncu.bin") and not ncu_argv:
                    ncu_argv = [a.decode() for a in c]
                    if "--request" in ncu_argv:   # the run deletes it when it ends
                        req = ncu_argv[ncu_argv.index("--request") + 1]
                        try:
                            shutil.copy(req, os.path.join(out, f"{name}.request.json"))
                        except OSError:
                            pass
            time.sleep(0.5)
        if proc.poll() is None:
            snapshot(name, proc, out, log_path or _log_of(ncu_argv))
            try:
                proc.wait(timeout=max(1, limit - (time.monotonic() - t)))
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wall = time.monotonic() - t
    print(f"   rc={proc.returncode} wall={wall:.1f} s", flush=True)
    return ncu_argv, proc.returncode, wall


def _log_of(argv):
    if argv and "--log-file" in argv:
        return argv[argv.index("--log-file") + 1]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--snap", type=float, default=30)
    ap.add_argument("--limit", type=float, default=60)
    ap.add_argument("--problem", default="10_relu_fp32")
    ap.add_argument("--first-only", action="store_true",
                    help="only the run as a worker makes it, no variants")
    ap.add_argument("--variants", default="shared_pid,shared_ipc",
                    help="comma list of cwd_tmp, files_not_vmm, no_network_isolation, "
                         "shared_pid, shared_ipc, shared_pid_ipc")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    bin_dir = os.environ.get("KAGENT_BIN", os.path.join(REPO, ".gpu", "bin"))
    env = dict(os.environ, KAGENT_HARNESS_LOG_STDERR="1", PYTHONUNBUFFERED="1")
    private = tempfile.mkdtemp(prefix="kagent-sub-")
    os.chmod(private, 0o700)
    env1 = dict(env, TMPDIR=private)
    prob = os.path.join(REPO, "problems", a.problem + ".py")
    argv1 = [os.path.join(bin_dir, "kagent_profile_once"), "--backend", "ncu",
             "--pythonpath", os.path.join(REPO, "python"), "--timeout", str(a.limit - 5),
             "--problem", prob, "--kernel", prob.replace(".py", "_start.py")]
    # Keep the run's work dir: the watcher copies its request before the run ends.
    ncu_argv, rc, wall = run("1_profile_once", argv1, env1, REPO, a.out, a.snap, a.limit)
    results = {"1_profile_once": [rc, round(wall, 1)]}
    req_src = os.path.join(a.out, "1_profile_once.request.json")
    if not os.path.exists(req_src):
        req_src = None
    print("ncu argv:", ncu_argv, "request:", req_src, flush=True)
    if a.first_only or not ncu_argv or not req_src:
        print("no ncu command line or request captured; stopping", flush=True)
        return 0
    with open(os.path.join(a.out, "ncu_argv.json"), "w") as f:
        json.dump(ncu_argv, f)
    request = json.load(open(req_src))

    def variant(name, req_changes, sandbox_env=None, tmpdir="/tmp", drop_args=(),
                as_user=None, open_tracker=False):
        d = tempfile.mkdtemp(prefix=f"kagent-diag-{name}-", dir="/tmp")
        os.chmod(d, 0o755)
        if as_user is not None:
            os.chown(d, as_user, as_user)
        r = dict(request, **req_changes)
        rp = os.path.join(d, "request.json")
        json.dump(r, open(rp, "w"))
        argv = list(ncu_argv)
        argv[argv.index("--request") + 1] = rp
        argv[argv.index("--out") + 1] = os.path.join(d, "result.json")
        log = os.path.join(d, "ncu.csv")
        argv[argv.index("--log-file") + 1] = log
        if drop_args:
            # The harness with bwrap.Config.argv patched: the sandbox without drop_args.
            patch = ("import sys; from kagent_harness import bwrap; _a = bwrap.Config.argv; "
                     f"bwrap.Config.argv = lambda self, *x, **k: [v for v in _a(self, *x, **k) "
                     f"if v not in {list(drop_args)!r}]; "
                     "from kagent_harness.cli import main; sys.exit(main())")
            i = argv.index("-m")
            argv[i:i + 2] = ["-c", patch]
        e = dict(env, PYTHONPATH=os.path.join(REPO, "python"), TMPDIR=tmpdir)
        e.update(sandbox_env or {})
        if as_user is not None:   # ncu and the harness as that user, HOME its own
            e["HOME"] = d
            argv = ["setpriv", f"--reuid={as_user}", f"--regid={as_user}", "--clear-groups",
                    "--"] + argv
        stop = threading.Event()
        if open_tracker:
            # Opens ncu's tree-tracker directories (made 0700 by ncu's front end) to
            # every user while the run goes: is that what the candidate's process waits on?
            def opener():
                while not stop.is_set():
                    for t in glob.glob("/tmp/NVIDIA-treetracker-*"):
                        for root, dirs, files in os.walk(t):
                            for x in [root] + [os.path.join(root, f) for f in dirs + files]:
                                try:
                                    os.chmod(x, 0o777)
                                except OSError:
                                    pass
                    stop.wait(0.05)
            threading.Thread(target=opener, daemon=True).start()
        _, rc, wall = run(name, argv, e, d, a.out, a.snap, a.limit, log)
        stop.set()
        kernels = sh(f"grep -c '\"' {log} 2>/dev/null").strip()
        results[name] = [rc, round(wall, 1), f"log lines with quotes: {kernels}"]
        if os.path.exists(os.path.join(d, "result.json")):
            shutil.copy(os.path.join(d, "result.json"), os.path.join(a.out, f"{name}.json"))

    for name in a.variants.split(","):
        if name == "cwd_tmp":
            variant(name, {})
        elif name == "files_not_vmm":
            variant(name, {"ipc_inputs": False})
        elif name == "no_network_isolation":
            variant(name, {"network_isolation": False, "sandbox": "best-effort"})
        elif name == "shared_pid":
            variant(name, {}, drop_args=("--unshare-pid",))
        elif name == "shared_ipc":
            variant(name, {}, drop_args=("--unshare-ipc",))
        elif name == "shared_pid_ipc":
            variant(name, {}, drop_args=("--unshare-pid", "--unshare-ipc"))
        elif name == "open_tracker":
            variant(name, {}, open_tracker=True)
        elif name == "ncu_as_nobody":
            variant(name, {}, as_user=65534)
    print(json.dumps(results, indent=1), flush=True)
    json.dump(results, open(os.path.join(a.out, "results.json"), "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
