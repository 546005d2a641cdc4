#!/usr/bin/env python3
"""Multi-host test of the kagent services on one machine, with network namespaces as hosts.

Four "hosts" (network namespaces), each with one veth into a bridge in the root namespace:

  coord  10.77.0.1   kagent-coordinator (SQLite), the CLI client
  brain  10.77.0.2   kagent-judge, -analyzer, -orchestrator, -optimization-manager
  w1     10.77.0.11  kagent-benchmark --device cpu (the CPU worker: Triton's interpreter)
  w2     10.77.0.12  kagent-benchmark --device cpu

The real binaries talk over the bridge exactly as on a cluster: the coordinator dials the
brain services and the workers by address, the workers register themselves with
`--coordinator` and the internal token, clients carry a bearer token. Scenarios, each a job
on examples/matvec_small (two candidates per round, so both workers measure at once):

  a  a job completes across the hosts, each task measured once, both workers used
  b  SIGKILL a worker while it measures: its task moves to the other worker, job DONE
  c  cut a host off (its bridge port down): first the worker host in mid-measurement (the
     coordinator's keepalive fails the call, the task moves, the worker registers again once
     the link is back), then the brain host for longer than --call-timeout-seconds (the
     brain calls' deadlines fire; the job must still end DONE once the link is back)
  d  restart the coordinator (SIGKILL in mid-round, then start it again on the same SQLite
     database): the job resumes and completes, and no task is measured twice (the workers'
     logs and measurement counters against the job's candidates)

Every wait is bounded; on every exit path (normal, failure, exception, SIGINT/SIGTERM/SIGHUP)
the processes started here are killed and the namespaces, veths and bridge deleted.

Needs root (or CAP_NET_ADMIN + CAP_SYS_ADMIN) and iproute2 with `ip netns`; otherwise it
exits 77 (CTest's SKIP_RETURN_CODE) with a message saying why. Python standard library only.

Usage: multihost.py [--build DIR] [--source-root DIR] [--only abcd] [--keep-logs]
Exit status: 0 all scenarios passed, 1 a scenario failed, 77 skipped.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
SUBNET = "10.77.0"
HOSTS = {"coord": 1, "brain": 2, "w1": 11, "w2": 12}
COORD_PORT = 50051
BRAIN_PORTS = {"judge": 50052, "analyzer": 50053, "orchestrator": 50054,
               "optimization_manager": 50055}
WORKER_PORT = 50061
METRICS_PORT = 9464
INTERNAL_TOKEN = "multihost-internal-token-0123456789"
USER_TOKEN = "multihost-user-token-0123456789ab"
CALL_TIMEOUT_S = 8        # coordinator --call-timeout-seconds (brain calls)
BRAIN_CUT_MAX_S = 150    # the longest scenario c keeps the brain host off
BRAIN_STALL_S = 4 * CALL_TIMEOUT_S  # ... once the job has waited on it (workers idle) this long
WORKER_CUT_S = 50         # how long scenario c keeps a worker host off (> lease + keepalive)


class Failure(Exception):
    pass


class Fatal(Failure):
    """A failure that waiting longer cannot cure (wait_for re-raises it at once)."""


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(argv, check=True, timeout=60, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise Failure(f"{' '.join(argv)} -> {r.returncode}: {r.stderr.strip()}")
    return r


def wait_for(what, pred, timeout, interval=0.5):
    """Polls pred() until it returns a true value; Failure after `timeout` seconds."""
    end = time.monotonic() + timeout
    last_exc = None
    while time.monotonic() < end:
        try:
            v = pred()
            if v:
                return v
        except Fatal:
            raise
        except Failure as e:  # a transient error of the probe itself
            last_exc = e
        time.sleep(interval)
    raise Failure(f"timed out after {timeout:.0f} s waiting for {what}"
                  + (f" (last error: {last_exc})" if last_exc else ""))


# ------------------------------------------------------------------------------------------
# Preconditions

def skip_reason():
    if os.geteuid() != 0:
        return "not root: network namespaces and veths need root (or CAP_NET_ADMIN+CAP_SYS_ADMIN)"
    if shutil.which("ip") is None:
        return "iproute2 'ip' not found (apt-get install -y iproute2)"
    name = f"kmhprobe{os.getpid()}"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if r.returncode != 0:
        return f"'ip netns add' does not work here: {r.stderr.strip()}"
    try:
        r = subprocess.run(["ip", "-n", name, "link", "add", "kmhprobe0", "type", "veth",
                            "peer", "name", "kmhprobe1"], capture_output=True, text=True)
        if r.returncode != 0:
            return f"cannot create veth pairs: {r.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    r = subprocess.run(["ip", "link", "add", f"kmhpb{os.getpid() % 100000}", "type", "bridge"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return f"cannot create a bridge: {r.stderr.strip()}"
    subprocess.run(["ip", "link", "del", f"kmhpb{os.getpid() % 100000}"], capture_output=True)
    return None


# ------------------------------------------------------------------------------------------
# The cluster

class Proc:
    def __init__(self, name, ns, popen, out_path, err_path):
        self.name, self.ns, self.popen = name, ns, popen
        self.out_path, self.err_path = out_path, err_path

    def alive(self):
        return self.popen.poll() is None

    def ready_line(self):
        try:
            with open(self.out_path) as f:
                for line in f:
                    try:
                        j = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(j, dict) and "port" in j:
                        return j
        except OSError:
            pass
        return None

    def log_lines(self):
        out = []
        try:
            with open(self.err_path, errors="replace") as f:
                for line in f:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
        except OSError:
            pass
        return out

    def tail(self, n=15):
        try:
            with open(self.err_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class Cluster:
    """The hosts (name -> last octet in `subnet`) joined by a bridge; the processes on them.
    deploy/tests/ha_failover.py builds its own hosts on this class."""

    def __init__(self, build, src, workdir, hosts=None, subnet=SUBNET, prefix="kmh"):
        self.build, self.src, self.dir = build, src, workdir
        self.hosts = dict(hosts or HOSTS)
        self.subnet = subnet
        tag = f"{os.getpid() % 100000}"
        self.tag = tag
        self.bridge = f"{prefix}{tag}br"
        self.ns = {h: f"{prefix}{tag}-{h}" for h in self.hosts}
        # The root-side end of each veth, <= 15 characters.
        self.veth = {h: f"{prefix}{tag}{h[0]}{h[-1]}" for h in self.hosts}
        self.procs = []           # every Proc ever started here
        self.by_name = {}
        self.made_ns, self.made_links = [], []
        self.python = os.path.join(src, ".venv", "bin", "python")
        self.tokens_file = os.path.join(workdir, "tokens")
        with open(self.tokens_file, "w") as f:
            f.write(f"{USER_TOKEN} multihost\n")

    def ip(self, host):
        return f"{self.subnet}.{self.hosts[host]}"

    def addr(self, host, port):
        return f"{self.ip(host)}:{port}"

    # --- network -------------------------------------------------------------------------

    def net_up(self):
        run(["ip", "link", "add", self.bridge, "type", "bridge"])
        self.made_links.append(self.bridge)
        run(["ip", "link", "set", self.bridge, "up"])
        for h, octet in self.hosts.items():
            ns, veth = self.ns[h], self.veth[h]
            run(["ip", "netns", "add", ns])
            self.made_ns.append(ns)
            run(["ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "p"])
            self.made_links.append(veth)
            run(["ip", "link", "set", veth + "p", "netns", ns])
            run(["ip", "-n", ns, "link", "set", veth + "p", "name", "eth0"])
            run(["ip", "-n", ns, "addr", "add", f"{self.subnet}.{octet}/24", "dev", "eth0"])
            run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            run(["ip", "link", "set", veth, "master", self.bridge])
            run(["ip", "link", "set", veth, "up"])
        # Every host reaches every other (ping is not always installed: a TCP probe through
        # python, which answers "connection refused" when the path works).
        for h in self.hosts:
            for other in self.hosts:
                if h != other:
                    wait_for(f"{h} to reach {other}", lambda h=h, o=other: self.reachable(h, o), 20)

    def reachable(self, src_host, dst_host):
        code = ("import socket,sys\n"
                "s=socket.socket(); s.settimeout(2)\n"
                "try:\n s.connect((sys.argv[1], 9))\nexcept ConnectionRefusedError: sys.exit(0)\n"
                "except OSError: sys.exit(1)\nsys.exit(0)\n")
        r = subprocess.run(["ip", "netns", "exec", self.ns[src_host], sys.executable, "-c", code,
                            self.ip(dst_host)], capture_output=True, timeout=10)
        return r.returncode == 0

    def link(self, host, up):
        run(["ip", "link", "set", self.veth[host], "up" if up else "down"])

    def teardown(self):
        for p in self.procs:
            if p.alive():
                try:
                    os.killpg(p.popen.pid, signal.SIGKILL)
                except OSError:
                    pass
        # Whatever still runs in our namespaces (harness children that left the group).
        for ns in self.made_ns:
            r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        for p in self.procs:
            try:
                p.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for ns in self.made_ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for l in self.made_links:
            subprocess.run(["ip", "link", "del", l], capture_output=True)
        self.made_ns, self.made_links = [], []

    # --- processes -----------------------------------------------------------------------

    def start(self, name, host, binary, flags, env=None, ready_timeout=90):
        exe = os.path.join(self.build, "services", binary)
        argv = ["ip", "netns", "exec", self.ns[host], exe] + flags
        out = os.path.join(self.dir, f"{name}.out")
        n = sum(1 for p in self.procs if p.name == name)
        err = os.path.join(self.dir, f"{name}.log" if n == 0 else f"{name}.{n}.log")
        e = dict(os.environ)
        # A tiny matvec (read by examples/matvec_small/problem.py in the harness child): Triton's
        # interpreter pays per program, and every matvec template launches about M x SPLIT_K
        # programs, so M=2 keeps each CPU measurement to seconds.
        e.update({"KAGENT_MATVEC_M": "2", "KAGENT_MATVEC_K": "64"})
        e.update(env or {})
        with open(out, "w") as fo, open(err, "w") as fe:
            popen = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                                     env=e, start_new_session=True)
        p = Proc(name, host, popen, out, err)
        self.procs.append(p)
        self.by_name[name] = p

        def ready():
            if not p.alive():
                raise Failure(f"{name} exited with {p.popen.returncode}:\n{p.tail()}")
            return p.ready_line()
        try:
            wait_for(f"{name} to start", ready, ready_timeout, 0.2)
        except Failure as e:
            raise Failure(f"{e}\n{p.tail()}") from None
        return p

    def common_flags(self, host, port, metrics_port=METRICS_PORT):
        return [f"--listen={self.addr(host, port)}",
                f"--metrics-listen={self.addr(host, metrics_port)}",
                f"--internal-token={INTERNAL_TOKEN}", "--drain-seconds=1",
                "--shutdown-grace-seconds=2", "--keepalive-seconds=5"]

    def start_brain(self):
        for i, (svc, port) in enumerate(BRAIN_PORTS.items()):
            binary = f"{svc}/kagent-{svc.replace('_', '-')}"
            flags = self.common_flags("brain", port, METRICS_PORT + i)
            if svc == "optimization_manager":
                flags.append(f"--python={self.python}")
            self.start(svc, "brain", binary, flags)

    def start_coordinator(self):
        flags = self.common_flags("coord", COORD_PORT) + [
            f"--db={os.path.join(self.dir, 'coordinator.db')}",
            f"--tokens-file={self.tokens_file}",
            f"--judge={self.addr('brain', BRAIN_PORTS['judge'])}",
            f"--analyzer={self.addr('brain', BRAIN_PORTS['analyzer'])}",
            f"--orchestrator={self.addr('brain', BRAIN_PORTS['orchestrator'])}",
            f"--optimization-manager={self.addr('brain', BRAIN_PORTS['optimization_manager'])}",
            f"--call-timeout-seconds={CALL_TIMEOUT_S}",
            "--generate-timeout-seconds=60", "--measure-timeout-seconds=240",
            "--no-worker-timeout-seconds=120"]
        return self.start("coordinator", "coord", "coordinator/kagent-coordinator", flags)

    def start_worker(self, host):
        flags = self.common_flags(host, WORKER_PORT) + [
            "--device=cpu", f"--worker-id={host}", f"--advertise={self.addr(host, WORKER_PORT)}",
            f"--coordinator={self.addr('coord', COORD_PORT)}", "--lease-renew-seconds=2",
            f"--python={self.python}", f"--harness-dir={os.path.join(self.src, 'python')}"]
        return self.start(host, host, "benchmark/kagent-benchmark", flags)

    # --- observation ---------------------------------------------------------------------

    def metrics(self, host, port=METRICS_PORT):
        """The Prometheus text of a service, fetched from inside its own host."""
        code = ("import sys,urllib.request\n"
                "sys.stdout.write(urllib.request.urlopen(sys.argv[1],timeout=5).read().decode())\n")
        url = f"http://{self.addr(host, port)}/metrics"
        r = subprocess.run(["ip", "netns", "exec", self.ns[host], sys.executable, "-c", code, url],
                           capture_output=True, text=True, timeout=15)
        if r.returncode != 0:
            raise Failure(f"scrape of {url} failed: {r.stderr.strip()[-300:]}")
        return r.stdout

    def metric(self, host, name, labels=None):
        """Sum of the samples of `name` whose labels include `labels`."""
        total = 0.0
        for line in self.metrics(host).splitlines():
            m = re.match(r"^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)", line)
            if not m or m.group(1) != name:
                continue
            got = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            if all(got.get(k) == v for k, v in (labels or {}).items()):
                total += float(m.group(3))
        return total

    def cli(self, *args, timeout=60, check=True):
        argv = ["ip", "netns", "exec", self.ns["coord"], os.path.join(self.build, "tools", "kagent"),
                "--server", self.addr("coord", COORD_PORT), "--token", USER_TOKEN] + list(args)
        return run(argv, check=check, timeout=timeout)

    def submit(self, name, rounds=1):
        ex = os.path.join(self.src, "examples", "matvec_small")
        r = self.cli("submit", os.path.join(ex, "problem.py"), "--kernel",
                     os.path.join(ex, "start_kernel.py"), "--rounds", str(rounds), "--beam", "1",
                     "--workers", "2", "--name", name)
        m = re.search(r"submitted (\S+)", r.stdout)
        if not m:
            raise Failure(f"submit said: {r.stdout} {r.stderr}")
        return m.group(1)

    def job_state(self, job):
        r = self.cli("get", job, check=False, timeout=20)
        m = re.search(r"^state\s+(\S+)(.*)$", r.stdout, re.M)
        if not m:
            raise Failure(f"kagent get {job}: {r.stdout.strip()} {r.stderr.strip()}")
        return m.group(1), m.group(2).strip()

    def wait_done(self, job, timeout):
        def finished():
            st, why = self.job_state(job)
            return (st, why) if st in ("DONE", "FAILED", "CANCELLED") else None
        st, why = wait_for(f"job {job} to finish", finished, timeout, 1.0)
        return st, why

    def export(self, job):
        d = os.path.join(self.dir, f"export-{job}")
        self.cli("export", job, d)
        with open(os.path.join(d, "candidates.json")) as f:
            cands = json.load(f).get("candidates", [])
        with open(os.path.join(d, "job.json")) as f:
            j = json.load(f)
        return j, cands

    def measured_tasks(self, job, workers=("w1", "w2"), screens=False):
        """task id -> [worker, ...] for every measurement a worker finished for `job`
        (with `screens`, every screen of its candidates' variants too)."""
        out = {}
        for w in workers:
            for p in self.procs:
                if p.name != w:
                    continue
                for e in p.log_lines():
                    msg = str(e.get("msg", ""))
                    if e.get("job_id") == job and (msg.startswith("measured:") or (
                            screens and msg.startswith("screened "))):
                        out.setdefault(e.get("task", "?"), []).append(w)
        return out

    def busy_worker(self):
        """The id of a worker the coordinator has a task running on, else None."""
        for w in ("w1", "w2"):
            if self.metric("coord", "kagent_gpu_worker_busy", {"worker": w}) >= 1:
                return w
        return None

    def wait_workers(self, n, timeout=60):
        wait_for(f"{n} live workers at the coordinator",
                 lambda: self.metric("coord", "kagent_gpu_workers", {"state": "alive"}) >= n,
                 timeout)

    def wait_round_busy(self, job, timeout, round_min=1):
        """Waits until `job` is in round >= round_min and a worker measures for it."""
        def busy():
            r = self.cli("get", job, check=False, timeout=20)
            m = re.search(r"^round\s+(\d+)", r.stdout, re.M)
            st = re.search(r"^state\s+(\S+)", r.stdout, re.M)
            if st and st.group(1) in ("DONE", "FAILED", "CANCELLED"):
                raise Fatal(f"job ended ({st.group(1)}) before the disruption")
            if not (m and int(m.group(1)) >= round_min and st and st.group(1) == "ROUNDS"):
                return None
            return self.busy_worker()
        return wait_for(f"job {job} to measure in round {round_min}", busy, timeout, 0.3)


# ------------------------------------------------------------------------------------------
# Scenarios

def check_job(c, job, results, label, require_unique=True):
    j, cands = c.export(job)
    ids = [x["id"] for x in cands]
    if len(ids) != len(set(ids)):
        raise Failure(f"{label}: candidate ids repeat: {ids}")
    unmeasured = [x["id"] for x in cands if not x.get("measurement")]
    if unmeasured:
        raise Failure(f"{label}: candidates without a measurement: {unmeasured}")
    tasks = c.measured_tasks(job)
    twice = {t: ws for t, ws in tasks.items() if len(ws) > 1}
    if require_unique and twice:
        raise Failure(f"{label}: tasks measured more than once: {twice}")
    results.setdefault("detail", {})[label] = {
        "candidates": len(cands), "measurements": sum(len(v) for v in tasks.values()),
        "by_worker": {w: sum(ws.count(w) for ws in tasks.values()) for w in ("w1", "w2")},
        "twice": twice}
    return j, cands, tasks


def scenario_a(c, results):
    t0 = time.monotonic()
    job = c.submit("multihost-a", rounds=1)
    st, why = c.wait_done(job, 300)
    if st != "DONE":
        raise Failure(f"job {job} ended {st} {why}")
    j, cands, tasks = check_job(c, job, results, "a")
    # Both workers take the job's GPU work: its measurements and the screens of its
    # candidates' variants (the coordinator gives a worker two tasks at once, so the
    # measurements alone may all land on one worker while the other screens).
    gpu_work = c.measured_tasks(job, screens=True)
    used = {w for ws in gpu_work.values() for w in ws}
    if used != {"w1", "w2"}:
        raise Failure(f"expected both workers to do the job's GPU work (measure, screen), got "
                      f"{sorted(used)}: {gpu_work}")
    return f"job {job} DONE in {time.monotonic() - t0:.1f} s, {len(cands)} candidates, " \
           f"{sum(len(v) for v in tasks.values())} measurements on {sorted(used)}, none twice"


def scenario_b(c, results):
    t0 = time.monotonic()
    job = c.submit("multihost-b", rounds=1)
    victim = c.wait_round_busy(job, 240)
    other = "w2" if victim == "w1" else "w1"
    before_other = c.metric(other, "kagent_benchmark_measurements_total")
    os.killpg(c.by_name[victim].popen.pid, signal.SIGKILL)
    c.by_name[victim].popen.wait(timeout=10)
    t_kill = time.monotonic()
    log(f"  b: SIGKILL {victim} while it measured (job {job}, {t_kill - t0:.1f} s in)")
    # The coordinator sees the worker gone (its connection reset) and moves the task.
    wait_for(f"the coordinator to take {victim} out of rotation",
             lambda: c.metric("coord", "kagent_gpu_workers", {"state": "alive"}) <= 1, 60, 0.3)
    t_out = time.monotonic() - t_kill
    st, why = c.wait_done(job, 300)
    if st != "DONE":
        raise Failure(f"job {job} ended {st} {why}")
    done = time.monotonic()
    after_other = c.metric(other, "kagent_benchmark_measurements_total")
    check_job(c, job, results, "b")
    # Bring the worker back for the next scenarios.
    c.start_worker(victim)
    c.wait_workers(2)
    return (f"job {job} DONE; {victim} killed in mid-measurement, out of rotation after "
            f"{t_out:.1f} s, {other} measured {after_other - before_other:.0f} more; job done "
            f"{done - t_kill:.1f} s after the kill ({done - t0:.1f} s in all)")


def scenario_c(c, results):
    t0 = time.monotonic()
    job = c.submit("multihost-c", rounds=2)
    # c1: the brain host off the network from the middle of round 1's measurements until the
    # job has waited on it (both workers idle) for four times the brain calls' deadline.
    c.wait_round_busy(job, 240)
    c.link("brain", False)
    t_bcut = time.monotonic()
    log(f"  c: brain host's link down in round 1 (brain call deadline {CALL_TIMEOUT_S} s)")
    idle_since = [None]

    def stalled():
        st, why = c.job_state(job)
        if st in ("DONE", "FAILED", "CANCELLED"):
            raise Fatal(f"job {job} ended {st} {why} while the brain host was cut off")
        now = time.monotonic()
        if c.busy_worker() is not None:
            idle_since[0] = None
        elif idle_since[0] is None:
            idle_since[0] = now
        return idle_since[0] is not None and now - idle_since[0] >= BRAIN_STALL_S
    try:
        wait_for("the job to wait on the brain host", stalled, BRAIN_CUT_MAX_S, 0.5)
    finally:
        c.link("brain", True)
    t_bup = time.monotonic()
    brain_cut = t_bup - t_bcut
    log(f"  c: brain link up after {brain_cut:.1f} s (workers idle for the last "
        f"{t_bup - idle_since[0]:.1f} s)")
    # c2: a worker host off the network in mid-measurement (round 2), long enough for its
    # lease to lapse and the in-flight call to fail while the link is still down.
    victim = c.wait_round_busy(job, 240, round_min=2)
    t_resume = time.monotonic() - t_bup
    c.link(victim, False)
    t_cut = time.monotonic()
    log(f"  c: round 2 measuring {t_resume:.1f} s after the brain link came back; "
        f"{victim}'s link down")
    wait_for(f"the coordinator to give up on {victim}",
             lambda: c.metric("coord", "kagent_gpu_workers", {"state": "alive"}) <= 1, 90, 0.5)
    t_detect = time.monotonic() - t_cut
    time.sleep(max(0.0, WORKER_CUT_S - (time.monotonic() - t_cut)))
    moved = [e for e in c.by_name["coordinator"].log_lines()
             if "moving it to another worker" in str(e.get("msg", "")) and e.get("job_id") == job
             and e.get("worker") == victim]
    c.link(victim, True)
    t_up = time.monotonic()
    c.wait_workers(2, 60)
    t_back = time.monotonic() - t_up
    log(f"  c: {victim} out of rotation after {t_detect:.1f} s, in-flight task "
        f"{'moved while cut off' if moved else 'not yet failed'}; link up after "
        f"{t_up - t_cut:.1f} s, registered again {t_back:.1f} s later")
    st, why = c.wait_done(job, 300)
    done = time.monotonic()
    if st != "DONE":
        raise Failure(f"job {job} ended {st} {why}")
    # A partition cannot cancel the cut worker's measurement: it may finish it, so a task may
    # be measured twice here (unlike a restart); reported, not required.
    check_job(c, job, results, "c", require_unique=False)
    return (f"job {job} DONE; brain cut {brain_cut:.0f} s (round 2 measuring {t_resume:.1f} s "
            f"after the link came back); worker cut {t_up - t_cut:.0f} s: out of rotation "
            f"after {t_detect:.1f} s, task moved {'during' if moved else 'after'} the cut, "
            f"re-registered {t_back:.1f} s after the link; job done {done - t_up:.1f} s "
            f"after the last link came back ({done - t0:.1f} s in all)")


def scenario_d(c, results):
    t0 = time.monotonic()
    counted = {w: c.metric(w, "kagent_benchmark_measurements_total") for w in ("w1", "w2")}
    job = c.submit("multihost-d", rounds=2)
    c.wait_round_busy(job, 240)
    coord = c.by_name["coordinator"]
    os.killpg(coord.popen.pid, signal.SIGKILL)
    coord.popen.wait(timeout=10)
    t_kill = time.monotonic()
    log(f"  d: SIGKILL coordinator in mid-round (job {job}, {t_kill - t0:.1f} s in)")
    time.sleep(2)
    c.start_coordinator()
    t_start = time.monotonic()
    c.wait_workers(2, 60)
    t_workers = time.monotonic() - t_start
    st, why = c.wait_done(job, 360)
    done = time.monotonic()
    if st != "DONE":
        raise Failure(f"job {job} ended {st} {why}")
    j, cands, tasks = check_job(c, job, results, "d")
    # The workers' measurement counters (their metrics ports) agree: as many measurements
    # during this job as distinct tasks, so none was run twice (a measurement cut short by the
    # kill is cancelled on the worker and not counted).
    total = sum(c.metric(w, "kagent_benchmark_measurements_total") - counted[w]
                for w in ("w1", "w2"))
    if total != len(tasks):
        raise Failure(f"the workers counted {total:.0f} measurements for {len(tasks)} tasks")
    return (f"job {job} DONE after a coordinator SIGKILL+restart; restarted in "
            f"{t_start - t_kill:.1f} s, workers re-registered {t_workers:.1f} s later, job done "
            f"{done - t_start:.1f} s after the restart ({done - t0:.1f} s in all); "
            f"{len(cands)} candidates, {sum(len(v) for v in tasks.values())} measurements of "
            f"{len(tasks)} distinct tasks, {total:.0f} on the workers' counters")


def run_scenario(c, key, scenarios, results, show):
    """Runs scenarios[key](c, results) and logs PASS or FAIL with its time (on failure the
    log tails of the processes named in `show`). True when it passed."""
    if key not in scenarios:
        raise Failure(f"unknown scenario {key!r}")
    t = time.monotonic()
    log(f"scenario {key}: start")
    try:
        msg = scenarios[key](c, results)
        log(f"PASS {key} ({time.monotonic() - t:.1f} s): {msg}")
        return True
    except (Failure, subprocess.TimeoutExpired) as e:
        log(f"FAIL {key} ({time.monotonic() - t:.1f} s): {e}")
        for p in c.procs:
            if p.name in show:
                print(f"--- {os.path.basename(p.err_path)} (tail)\n{p.tail(8)}", flush=True)
        return False


SCENARIOS = {"a": scenario_a, "b": scenario_b, "c": scenario_c, "d": scenario_d}


SERVICE_BINARIES = ("coordinator/kagent-coordinator", "benchmark/kagent-benchmark",
                    "judge/kagent-judge", "analyzer/kagent-analyzer",
                    "orchestrator/kagent-orchestrator",
                    "optimization_manager/kagent-optimization-manager")


def parse_args(doc, default_only, example):
    """The flags both namespace tests take. Returns (args, source root, build folder)."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--source-root", default=os.path.normpath(os.path.join(here, "..", "..")))
    ap.add_argument("--build", default=None, help="build folder (default SOURCE_ROOT/build)")
    ap.add_argument("--only", default=default_only, help=f"scenarios to run, e.g. '{example}'")
    ap.add_argument("--keep-logs", action="store_true", help="keep the work folder on success")
    args = ap.parse_args()
    src = os.path.abspath(args.source_root)
    return args, src, os.path.abspath(args.build or os.path.join(src, "build"))


def preflight(name, build, src):
    """None when the test can run here; else its exit status, after saying why: SKIP without
    root, `ip netns` or the venv's Python, 1 for a service binary not built."""
    why = skip_reason()
    if why:
        print(f"SKIP {name}: {why}")
        return SKIP
    for b in SERVICE_BINARIES:
        if not os.access(os.path.join(build, "services", b), os.X_OK):
            print(f"FAIL {name}: {build}/services/{b} not built")
            return 1
    if not os.access(os.path.join(src, ".venv", "bin", "python"), os.X_OK):
        print(f"SKIP {name}: {src}/.venv/bin/python missing (the CPU worker's torch+triton; "
              "scripts/setup.sh makes it)")
        return SKIP
    return None


def interrupt_on_signals():
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt, so teardown runs on each."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)


def main():
    args, src, build = parse_args(__doc__, "abcd", "ad")
    status = preflight("multihost", build, src)
    if status is not None:
        return status

    workdir = tempfile.mkdtemp(prefix="kagent-multihost-")
    c = Cluster(build, src, workdir)
    interrupt_on_signals()

    results = {}
    failed = []
    t_all = time.monotonic()
    try:
        log(f"network: bridge {c.bridge}, hosts {', '.join(c.ns.values())}; logs in {workdir}")
        c.net_up()
        c.start_brain()
        c.start_coordinator()
        c.start_worker("w1")
        c.start_worker("w2")
        c.wait_workers(2)
        log(f"cluster up in {time.monotonic() - t_all:.1f} s")
        for key in args.only:
            if run_scenario(c, key, SCENARIOS, results, ("coordinator", "w1", "w2")):
                continue
            failed.append(key)
            # Leave a sane cluster for the next scenario.
            for h in HOSTS:
                subprocess.run(["ip", "link", "set", c.veth[h], "up"], capture_output=True)
            for name, start in (("coordinator", c.start_coordinator),
                                ("w1", lambda: c.start_worker("w1")),
                                ("w2", lambda: c.start_worker("w2"))):
                if not c.by_name[name].alive():
                    start()
    except (Failure, subprocess.TimeoutExpired) as e:
        failed.append("setup")
        log(f"FAIL setup: {e}")
    except KeyboardInterrupt as e:
        failed.append("interrupted")
        log(f"interrupted: {e}")
    finally:
        c.teardown()
    if "detail" in results:
        log("measurements: " + json.dumps(results["detail"]))
    return finish(c, failed, t_all, args.keep_logs)


def finish(c, failed, t_all, keep_logs):
    """After teardown: warns of namespaces left behind, logs the total, removes the work
    folder unless something failed or `keep_logs`. Returns the exit status."""
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    if any(ns in left for ns in c.ns.values()):
        log("WARNING: namespaces left behind: " + left)
    log(f"total {time.monotonic() - t_all:.1f} s; " +
        ("all scenarios passed" if not failed else f"FAILED: {', '.join(failed)}"))
    if failed or keep_logs:
        log(f"logs kept in {c.dir}")
    else:
        shutil.rmtree(c.dir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
