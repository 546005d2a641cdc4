#!/usr/bin/env python3
"""The sandbox's red-team suite on a GPU: each attack class as a candidate, through one
harness server (as a worker runs it), with the verdict it must get, a check that the
attack changed nothing, and an honest candidate measured CORRECT right after it.

Run on the GPU machine from the repository root (bwrap on PATH):
    python3 tests/gpu/redteam.py [--only NAME,...] [--json F] [--k K]
Each attack is tests/gpu/cases/red/NAME.py: an `attack()` the candidate runs at its first
call of forward, glued to the honest matvec kernel (cand_matvec_row.py). The token-kernel
classes (a library call beside a do-nothing kernel) are run_suite.py's red_token_* cases.
Exit status 0 when every case got an expected verdict and passed its check.
"""

import argparse
import json
import os
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "cases")
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from harness_server import Server  # noqa: E402

SECRET = "kagent-red-secret"
NOT_INFRA = ["CORRECT", "INCORRECT", "CRASH", "TIMEOUT", "OOM", "REJECTED", "COMPILE_ERROR"]

# name, expected verdicts, what must hold afterwards (names of checks below)
CASES = [
    ("write_outside", ["CORRECT"], ["no_marker_files"]),
    ("secrets", ["CORRECT"], ["no_secret_in_result"]),
    ("kill_parent", ["CORRECT", "CRASH"], []),
    ("ptrace_parent", ["CORRECT"], []),
    ("fork_bomb", NOT_INFRA, ["no_leftover_processes"]),
    ("thread_bomb", NOT_INFRA, ["no_leftover_processes"]),
    ("fill_disk", ["CRASH", "REJECTED", "OOM"], ["scratch_space_back"]),
    ("leave_process", NOT_INFRA, ["no_leftover_processes", "gpu_memory_back"]),
    ("cuda_state", ["CORRECT"], ["next_timing_unchanged"]),
    ("monkeypatch", ["INCORRECT"], []),
    ("read_reference", ["INCORRECT", "REJECTED"], []),
    ("network", ["CORRECT"], ["nothing_received"]),
]

GLUE = '''

# ---- the harness's red-team glue: the attack runs once, at the first call ----
_kagent_red_done = [False]
_KagentHonest = ModelNew


class ModelNew(_KagentHonest):
    def forward(self, A, x):
        if not _kagent_red_done[0]:
            _kagent_red_done[0] = True
            attack()
        c = super().forward(A, x)
        answer = globals().get("ANSWER")
        if answer == "zeros":
            return torch.zeros_like(c)
        if answer == "found":
            return found_answer(c.shape, c.dtype, c.device)
        return c
'''


class Listeners:
    """A TCP, a UDP and an abstract Unix listener on this machine; what reaches them."""

    def __init__(self):
        self.received = []
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(8)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.abstract.bind("\0kagent-red-abstract")
        self.abstract.listen(8)
        for s in (self.tcp, self.abstract):
            threading.Thread(target=self._accept, args=(s,), daemon=True).start()
        threading.Thread(target=self._udp, daemon=True).start()

    def _accept(self, s):
        while True:
            try:
                c, _ = s.accept()
                self.received.append(("stream", c.recv(100)))
                c.close()
            except OSError:
                return

    def _udp(self):
        while True:
            try:
                self.received.append(("udp", self.udp.recv(100)))
            except OSError:
                return


def marker_paths():
    import site
    out = ["/tmp/kagent-red-write", "/dev/shm/kagent-red-write", "/root/kagent-red-write",
           "/etc/kagent-red-write", "/var/tmp/kagent-red-write",
           os.path.join(ROOT, "python", "kagent_harness", "kagent-red-write.py"),
           os.path.join(ROOT, "kagent-red-write")]
    for d in site.getsitepackages() + [site.getusersitepackages()]:
        out.append(os.path.join(d, "kagent-red-write.pth"))
    return out


def red_processes():
    """pids of what an attack left behind: processes or threads named "kagent-red" (the
    bombs name what they start) and the sleeper's command line."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                if b"kagent-red-sleeper" in f.read():
                    out.append(int(name))
                    continue
            for tid in os.listdir(f"/proc/{name}/task"):
                with open(f"/proc/{name}/task/{tid}/comm", "rb") as f:
                    if f.read().strip() == b"kagent-red":
                        out.append(int(name))
                        break
        except OSError:
            continue
    return out


def gpu_used_gib():
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return pynvml.nvmlDeviceGetMemoryInfo(h).used / 2**30
    except Exception:  # noqa: BLE001
        return None


def shm_used_gib():
    st = os.statvfs("/dev/shm")
    return (st.f_blocks - st.f_bavail) * st.f_frsize / 2**30


def settle(pred, seconds=20):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.5)
    return pred()


def source_of(name, subst):
    with open(os.path.join(CASES_DIR, "cand_matvec_row.py")) as f:
        honest = f.read()
    with open(os.path.join(CASES_DIR, "red", name + ".py")) as f:
        attack = f.read()
    for old, new in subst.items():
        attack = attack.replace(old, new)
    return honest + "\n\n# ---- attack: " + name + " ----\n" + attack + GLUE


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--k", type=int, default=65536)
    ap.add_argument("--m", type=int, default=2048)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: a smoke run under Triton's interpreter (use a small --k/--m)")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))

    # $KAGENT_REDTEAM_DIR: where the secret file goes when the repository is not writable
    # (run_sandbox.sh as an unprivileged user).
    secret_file = os.path.join(os.environ.get("KAGENT_REDTEAM_DIR") or
                               os.path.join(ROOT, "var", "redteam"), "secret.txt")
    os.makedirs(os.path.dirname(secret_file), exist_ok=True)
    with open(secret_file, "w") as f:
        f.write(SECRET + "-file\n")
    net = Listeners()
    env = {"KAGENT_MATVEC_K": str(args.k), "KAGENT_MATVEC_M": str(args.m),
           "KAGENT_TOKEN": SECRET + "-token", "OPENAI_API_KEY": SECRET + "-llm-key",
           "DATABASE_PASSWORD": SECRET + "-db"}
    if args.device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    srv = Server(pool=2, device=args.device, extra_env=env,
                 extra_args=["--sandbox", "required", "--sandbox-hide",
                             os.path.dirname(secret_file)])
    subst = {'"KAGENT_RED_SECRET_FILE"': repr(secret_file),
             "TCP_PORT = 0": f"TCP_PORT = {net.tcp.getsockname()[1]}",
             "UDP_PORT = 0": f"UDP_PORT = {net.udp.getsockname()[1]}",
             "UNIX_PATHS = []": f"UNIX_PATHS = [{srv.path!r}]"}
    with open(os.path.join(CASES_DIR, "problem_matvec.py")) as f:
        problem = f.read()
    with open(os.path.join(CASES_DIR, "cand_matvec_row.py")) as f:
        honest_src = f.read()

    def measure(src, extra=None):
        req = {"op": "measure", "job_id": "redteam", "problem_source": problem,
               "kernel_source": src, "device": args.device, "timeout_s": 300,
               "call_timeout_s": 60}
        req.update(extra or {})
        t0 = time.time()
        try:
            res = srv.call(req)
        except OSError as e:
            res = {"verdict": "NO_ANSWER", "correctness": {"reason": f"{e}: "
                                                                    f"{srv.log_tail(800)}"}}
        return res, time.time() - t0

    first, _ = measure(honest_src)
    honest_ms = [(first.get("candidate") or {}).get("median_ms")]
    print(json.dumps({"case": "honest (first)", "verdict": first.get("verdict"),
                      "median_ms": honest_ms[0],
                      "sandbox": (first.get("harness") or {}).get("sandbox")}), flush=True)
    base_gpu = gpu_used_gib() if args.device == "cuda" else None
    base_shm = shm_used_gib()
    ok_all = first.get("verdict") == "CORRECT"
    results, rows = {}, []
    for name, expect, checks in CASES:
        if only and name not in only:
            continue
        for p in marker_paths():
            if os.path.exists(p):
                os.unlink(p)
        net.received.clear()
        res, wall = measure(source_of(name, subst))
        v = res.get("verdict")
        failed = []
        if v not in expect:
            failed.append(f"verdict {v}, expected {'/'.join(expect)}")
        for check in checks:
            if check == "no_marker_files":
                present = [p for p in marker_paths() if os.path.exists(p)]
                if present:
                    failed.append(f"files written outside scratch: {present}")
            elif check == "no_secret_in_result":
                if SECRET in json.dumps(res):
                    failed.append("a secret reached the result")
            elif check == "no_leftover_processes":
                if not settle(lambda: not red_processes()):
                    failed.append(f"processes left running: {red_processes()[:8]}")
            elif check == "gpu_memory_back":
                if base_gpu is not None and not settle(
                        lambda: gpu_used_gib() < base_gpu + 2.0):
                    failed.append(f"GPU memory not back: {gpu_used_gib():.1f} GiB used, "
                                  f"{base_gpu:.1f} before")
            elif check == "scratch_space_back":
                if not settle(lambda: shm_used_gib() < base_shm + 1.0):
                    failed.append(f"/dev/shm holds {shm_used_gib():.1f} GiB, "
                                  f"{base_shm:.1f} before")
            elif check == "nothing_received":
                if net.received:
                    failed.append(f"the listeners received {net.received[:4]}")
        after, _ = measure(honest_src)
        ms = (after.get("candidate") or {}).get("median_ms")
        if after.get("verdict") != "CORRECT":
            failed.append(f"the next honest candidate got {after.get('verdict')}: "
                          f"{(after.get('correctness') or {}).get('reason', '')[:200]}")
        elif "next_timing_unchanged" in checks and honest_ms[0] and ms and \
                abs(ms - honest_ms[0]) / honest_ms[0] > 0.15:
            failed.append(f"the next honest candidate's median moved: {ms:.4f} ms against "
                          f"{honest_ms[0]:.4f}")
        honest_ms.append(ms)
        ok = not failed
        ok_all &= ok
        reason = (res.get("correctness") or {}).get("reason", "")
        results[name] = {"verdict": v, "ok": ok, "failed": failed, "reason": reason,
                         "wall_s": round(wall, 1), "honest_after_ms": ms}
        rows.append((name, v, "/".join(expect) if expect != NOT_INFRA else "not INFRA",
                     "ok" if ok else "FAIL", f"{wall:.1f}", "; ".join(failed) or reason[:100]))
        print("\t".join(rows[-1]), flush=True)
    print()
    print(f"{'case':16} {'verdict':13} {'expected':22} {'':4} {'wall_s':>7}  detail")
    for r in rows:
        print(f"{r[0]:16} {r[1]:13} {r[2]:22} {r[3]:4} {r[4]:>7}  {r[5]}")
    good = [m for m in honest_ms if m]
    if good:
        print(f"honest candidate medians across the suite: min {min(good):.4f} ms, "
              f"max {max(good):.4f} ms ({len(good)} runs)")
    alive = srv.proc.poll() is None
    print(f"harness server alive at the end: {alive}")
    ok_all &= alive
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": results, "honest_ms": honest_ms, "server_alive": alive}, f,
                      indent=1)
    srv.close()
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
