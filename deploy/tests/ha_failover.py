#!/usr/bin/env python3
"""Coordinator failover test: two coordinator replicas on one PostgreSQL, in network namespaces.

Six "hosts" (network namespaces) on a bridge, as in deploy/tests/multihost.py (whose Cluster
this builds on):

  db     10.78.0.5   PostgreSQL (Debian's server binaries, a throwaway cluster, trust auth)
  c1     10.78.0.1   kagent-coordinator --leader-election
  c2     10.78.0.2   kagent-coordinator --leader-election
  brain  10.78.0.3   kagent-judge, -analyzer, -orchestrator, -optimization-manager; the CLI
  w1     10.78.0.11  kagent-benchmark --device cpu --coordinator=c1,c2
  w2     10.78.0.12  kagent-benchmark --device cpu --coordinator=c1,c2

One replica takes the leader lease; the other follows. Scenarios, each a job on
examples/matvec_small submitted through the follower (which forwards it to the leader):

  e  SIGKILL the leader in mid-round: the follower takes the lease once it expires (within
     the 30 s the issue allows), resumes the job from its last completed step, and the job
     ends DONE once; no task is measured twice (the workers' logs and counters).
  f  cut the leader off from the database only (a blackhole route to db inside its host, so
     it still reaches the workers and clients): it cannot renew, steps down and exits with
     status 75 before its lease can expire; the other replica takes over and the job ends
     DONE once, nothing measured twice; the old leader's writes after the cut are fenced.

Before e the killed replica of a previous run is not there; between e and f the killed one is
started again and follows. Every wait is bounded; on every exit path the processes, the
namespaces, the veths and the bridge are removed.

Needs root, iproute2, setpriv and .venv/bin/python (else exit 77, CTest's SKIP_RETURN_CODE),
the built services and the PostgreSQL server binaries (scripts/setup.sh; without either the
test fails, it does not skip).

Usage: ha_failover.py [--build DIR] [--source-root DIR] [--only ef] [--keep-logs]
Exit status: 0 all scenarios passed, 1 a scenario failed, 77 skipped.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import multihost as mh  # noqa: E402  (the namespaces, processes and probes)

from multihost import Failure, log, run, wait_for  # noqa: E402

HOSTS = {"c1": 1, "c2": 2, "brain": 3, "db": 5, "w1": 11, "w2": 12}
SUBNET = "10.78.0"
PG_PORT = 5432
LEASE_S = 6                 # --leader-lease-seconds: step down after 0.8 of it
TAKEOVER_MAX_S = 30         # the bound: a follower leads within 30 s of a loss
EXIT_LOST_LEADERSHIP = 75   # services/coordinator/coordinator_setup.h


def pg_bindir():
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(re.sub(r"\D", "", d.split("/")[-2]) or 0), reverse=True)
    for d in dirs:
        if all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "postgres", "psql")):
            return d
    return None


class HaCluster(mh.Cluster):
    def __init__(self, build, src, workdir):
        super().__init__(build, src, workdir, hosts=HOSTS, subnet=SUBNET, prefix="kha")
        self.pg = None

    # --- PostgreSQL on the db host --------------------------------------------------------

    def start_postgres(self):
        bindir = pg_bindir()
        if bindir is None:
            raise Failure("PostgreSQL server binaries not found under /usr/lib/postgresql "
                          "(scripts/setup.sh installs Debian's postgresql)")
        data = os.path.join(self.dir, "pgdata")
        os.makedirs(data)
        os.chmod(self.dir, 0o755)
        shutil.chown(data, "postgres", "postgres")
        as_pg = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
        run(as_pg + [os.path.join(bindir, "initdb"), "-D", data, "-U", "kagent", "--auth=trust",
                     "-E", "UTF8", "--locale=C"], timeout=120, cwd="/")
        with open(os.path.join(data, "pg_hba.conf"), "a") as f:
            f.write(f"host all all {SUBNET}.0/24 trust\n")
        log_path = os.path.join(self.dir, "postgres.log")
        with open(log_path, "w") as fo:
            shutil.chown(log_path, "postgres", "postgres")
            popen = subprocess.Popen(
                ["ip", "netns", "exec", self.ns["db"]] + as_pg +
                [os.path.join(bindir, "postgres"), "-D", data, "-k", data, "-h", self.ip("db"),
                 "-p", str(PG_PORT), "-c", "fsync=off"],
                stdout=fo, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd="/")
        p = mh.Proc("postgres", "db", popen, log_path, log_path)
        self.procs.append(p)
        self.pg = p

        def ready():
            if not p.alive():
                raise mh.Fatal(f"postgres exited with {popen.returncode}:\n{p.tail()}")
            r = subprocess.run(["ip", "netns", "exec", self.ns["db"]] + as_pg +
                               [os.path.join(bindir, "psql"), "-h", self.ip("db"), "-p",
                                str(PG_PORT), "-U", "kagent", "-d", "postgres", "-Atc",
                                "SELECT 1"], capture_output=True, text=True, timeout=10, cwd="/")
            return r.returncode == 0
        wait_for("postgres to accept connections", ready, 60, 0.3)
        run(["ip", "netns", "exec", self.ns["db"]] + as_pg +
            [os.path.join(bindir, "psql"), "-h", self.ip("db"), "-p", str(PG_PORT), "-U",
             "kagent", "-d", "postgres", "-c", "CREATE DATABASE kagent"], cwd="/")

    def psql(self, sql):
        r = run(["ip", "netns", "exec", self.ns["db"], "setpriv", "--reuid=postgres",
                 "--regid=postgres", "--init-groups", os.path.join(pg_bindir(), "psql"), "-h",
                 self.ip("db"), "-p", str(PG_PORT), "-U", "kagent", "-d", "kagent", "-Atc", sql],
                cwd="/", timeout=20)
        return r.stdout

    def db_url(self):
        return f"postgresql://kagent@{self.ip('db')}:{PG_PORT}/kagent"

    # --- coordinators and workers ---------------------------------------------------------

    def start_replica(self, host):
        flags = self.common_flags(host, mh.COORD_PORT) + [
            "--leader-election", f"--leader-lease-seconds={LEASE_S}",
            f"--advertise={self.addr(host, mh.COORD_PORT)}",
            f"--tokens-file={self.tokens_file}",
            f"--judge={self.addr('brain', mh.BRAIN_PORTS['judge'])}",
            f"--analyzer={self.addr('brain', mh.BRAIN_PORTS['analyzer'])}",
            f"--orchestrator={self.addr('brain', mh.BRAIN_PORTS['orchestrator'])}",
            f"--optimization-manager={self.addr('brain', mh.BRAIN_PORTS['optimization_manager'])}",
            f"--call-timeout-seconds={mh.CALL_TIMEOUT_S}",
            "--generate-timeout-seconds=60", "--measure-timeout-seconds=240",
            "--no-worker-timeout-seconds=120"]
        # The URL through the environment, as the docs advise (it may hold a password).
        return self.start(host, host, "coordinator/kagent-coordinator", flags,
                          env={"KAGENT_DB": self.db_url()})

    def start_worker(self, host):
        flags = self.common_flags(host, mh.WORKER_PORT) + [
            "--device=cpu", f"--worker-id={host}",
            f"--advertise={self.addr(host, mh.WORKER_PORT)}",
            f"--coordinator={self.addr('c1', mh.COORD_PORT)},{self.addr('c2', mh.COORD_PORT)}",
            "--lease-renew-seconds=2",
            f"--python={self.python}", f"--harness-dir={os.path.join(self.src, 'python')}"]
        return self.start(host, host, "benchmark/kagent-benchmark", flags)

    def replicas_alive(self):
        return [h for h in ("c1", "c2") if h in self.by_name and self.by_name[h].alive()]

    def leader(self):
        """The replica whose kagent_coordinator_leader is 1, None when none; Failure when two."""
        leading = []
        for h in self.replicas_alive():
            try:
                if self.metric(h, "kagent_coordinator_leader") >= 1:
                    leading.append(h)
            except Failure:
                pass
        if len(leading) > 1:
            raise mh.Fatal(f"two replicas lead at once: {leading}")
        return leading[0] if leading else None

    def follower(self):
        lead = self.leader()
        others = [h for h in self.replicas_alive() if h != lead]
        return others[0] if others else None

    # --- the client, from the brain host (it never loses its link) ------------------------

    def cli_at(self, replica, *args, timeout=60, check=True):
        argv = ["ip", "netns", "exec", self.ns["brain"],
                os.path.join(self.build, "tools", "kagent"),
                "--server", self.addr(replica, mh.COORD_PORT), "--token", mh.USER_TOKEN] + list(args)
        return run(argv, check=check, timeout=timeout)

    def cli(self, *args, timeout=60, check=True):
        # Reads go to any live replica: a follower answers them from the database.
        live = self.replicas_alive()
        return self.cli_at(live[-1], *args, timeout=timeout, check=check)

    def busy_worker(self):
        lead = self.leader()
        if lead is None:
            return None
        for w in ("w1", "w2"):
            if self.metric(lead, "kagent_gpu_worker_busy", {"worker": w}) >= 1:
                return w
        return None

    def wait_workers(self, n, timeout=60):
        def alive():
            lead = self.leader()
            return lead is not None and self.metric(
                lead, "kagent_gpu_workers", {"state": "alive"}) >= n
        wait_for(f"{n} live workers at the leader", alive, timeout)


def submit_via_follower(c, name):
    follower = wait_for("a follower", c.follower, 30)
    ex = os.path.join(c.src, "examples", "matvec_small")
    r = c.cli_at(follower, "submit", os.path.join(ex, "problem.py"), "--kernel",
                 os.path.join(ex, "start_kernel.py"), "--rounds", "2", "--beam", "1",
                 "--workers", "2", "--name", name)
    m = re.search(r"submitted (\S+)", r.stdout)
    if not m:
        raise Failure(f"submit through the follower {follower} said: {r.stdout} {r.stderr}")
    return m.group(1), follower


JOB_FINISHED = 6  # kagent.v1.JobEventType JOB_EVENT_JOB_FINISHED


def finished_once(c, job, label):
    """The job's event log, read from the database: exactly one JOB_FINISHED, and sequence
    numbers 1..N without a gap or a repeat (no replica wrote past its term)."""
    q = (f"SELECT COUNT(*), COALESCE(MAX(sequence), 0), COUNT(DISTINCT sequence), "
         f"COUNT(*) FILTER (WHERE type = {JOB_FINISHED}) FROM job_events WHERE job_id = '{job}'")
    out = c.psql(q).strip().split("|")
    count, top, distinct, finished = (int(x) for x in out)
    if finished != 1 or not (count == top == distinct):
        raise Failure(f"{label}: job {job}'s events: {count} rows, max sequence {top}, "
                      f"{distinct} distinct, {finished} JOB_FINISHED")
    return count


def counters(c):
    return {w: c.metric(w, "kagent_benchmark_measurements_total") for w in ("w1", "w2")}


def check_once(c, job, before, results, label):
    mh.check_job(c, job, results, label)  # candidates distinct and measured, no task twice
    tasks = c.measured_tasks(job)
    total = sum(c.metric(w, "kagent_benchmark_measurements_total") - before[w]
                for w in ("w1", "w2"))
    if total != len(tasks):
        raise Failure(f"{label}: the workers counted {total:.0f} measurements for "
                      f"{len(tasks)} tasks")
    return len(tasks)


def job_in_round(c, name):
    """Submits a job through the follower and waits until it measures in round 1: the moment
    to disrupt the leader. Returns (job, follower, leader, the workers' counters before)."""
    before = counters(c)
    job, follower = submit_via_follower(c, name)
    c.wait_round_busy(job, 240)
    return job, follower, c.leader(), before


def done_once(c, job, before, results, label):
    """Waits for the job to end DONE and checks it finished once with every task measured once.
    Returns (tasks, events, when it ended)."""
    st, why = c.wait_done(job, 360)
    done = time.monotonic()
    if st != "DONE":
        raise Failure(f"job {job} ended {st} {why}")
    return check_once(c, job, before, results, label), finished_once(c, job, label), done


def scenario_e(c, results):
    job, follower, old, before = job_in_round(c, "ha-e")
    proc = c.by_name[old]
    os.killpg(proc.popen.pid, signal.SIGKILL)
    proc.popen.wait(timeout=10)
    t_kill = time.monotonic()
    log(f"  e: SIGKILL leader {old} in mid-round (job {job} submitted through {follower})")
    new = wait_for("the follower to take the lease", c.leader, TAKEOVER_MAX_S + 5, 0.2)
    t_take = time.monotonic() - t_kill
    if new == old or t_take > TAKEOVER_MAX_S:
        raise Failure(f"takeover by {new} after {t_take:.1f} s")
    n, events, done = done_once(c, job, before, results, "e")
    results["takeover_after_kill_s"] = round(t_take, 1)
    # The killed replica comes back as a follower.
    c.start_replica(old)
    wait_for(f"{old} to follow", lambda: c.follower() == old, 30)
    return (f"job {job} DONE; leader {old} SIGKILLed, {new} led {t_take:.1f} s later "
            f"(lease {LEASE_S} s), job done {done - t_kill:.1f} s after the kill; "
            f"{n} tasks, each measured once; {events} events, one finish; {old} back as a follower")


def scenario_f(c, results):
    job, follower, old, before = job_in_round(c, "ha-f")
    proc = c.by_name[old]
    run(["ip", "-n", c.ns[old], "route", "add", "blackhole", f"{c.ip('db')}/32"])
    t_cut = time.monotonic()
    log(f"  f: leader {old} cut off from the database (blackhole route), job {job}")
    try:
        wait_for(f"{old} to step down and exit", lambda: not proc.alive(), LEASE_S + 10, 0.2)
        t_exit = time.monotonic() - t_cut
        if proc.popen.returncode != EXIT_LOST_LEADERSHIP:
            raise Failure(f"{old} exited with {proc.popen.returncode}, not "
                          f"{EXIT_LOST_LEADERSHIP}:\n{proc.tail()}")
        new = wait_for("the other replica to take the lease", c.leader, TAKEOVER_MAX_S + 5, 0.2)
        t_take = time.monotonic() - t_cut
    finally:
        subprocess.run(["ip", "-n", c.ns[old], "route", "del", "blackhole", f"{c.ip('db')}/32"],
                       capture_output=True)
    if new == old or t_take > TAKEOVER_MAX_S:
        raise Failure(f"takeover by {new} after {t_take:.1f} s")
    n, events, done = done_once(c, job, before, results, "f")
    fenced = [e for e in proc.log_lines() if "fenced" in str(e.get("msg", ""))]
    stepped = [e for e in proc.log_lines() if "stepping down" in str(e.get("msg", ""))]
    if not stepped:
        raise Failure(f"{old} did not log its step-down:\n{proc.tail()}")
    results["exit_after_cut_s"] = round(t_exit, 1)
    results["takeover_after_cut_s"] = round(t_take, 1)
    return (f"job {job} DONE; leader {old} cut off from the database: stepped down and exited "
            f"{EXIT_LOST_LEADERSHIP} after {t_exit:.1f} s ({len(fenced)} fenced writes logged), "
            f"{new} led {t_take:.1f} s after the cut; job done {done - t_cut:.1f} s after it; "
            f"{n} tasks, each measured once; {events} events, one finish")


SCENARIOS = {"e": scenario_e, "f": scenario_f}


def main():
    args, src, build = mh.parse_args(__doc__, "ef", "e")
    status = mh.preflight("ha_failover", build, src)
    if status is not None:
        return status
    if shutil.which("setpriv") is None:
        print("SKIP ha_failover: setpriv (util-linux) not found")
        return mh.SKIP

    workdir = tempfile.mkdtemp(prefix="kagent-ha-")
    c = HaCluster(build, src, workdir)
    mh.interrupt_on_signals()

    results, failed = {}, []
    t_all = time.monotonic()
    try:
        log(f"network: bridge {c.bridge}, hosts {', '.join(c.ns.values())}; logs in {workdir}")
        c.net_up()
        c.start_postgres()
        c.start_brain()
        c.start_replica("c1")
        wait_for("c1 to lead", lambda: c.leader() == "c1", 30, 0.2)
        c.start_replica("c2")
        c.start_worker("w1")
        c.start_worker("w2")
        c.wait_workers(2)
        wait_for("c2 to follow", lambda: c.follower() == "c2", 30)
        log(f"cluster up in {time.monotonic() - t_all:.1f} s (c1 leads, c2 follows)")
        for key in args.only:
            if not mh.run_scenario(c, key, SCENARIOS, results, ("c1", "c2", "w1", "w2")):
                failed.append(key)
                break  # the next scenario needs the two replicas this one left
    except (Failure, subprocess.TimeoutExpired) as e:
        failed.append("setup")
        log(f"FAIL setup: {e}")
        for p in c.procs:
            print(f"--- {os.path.basename(p.err_path)} (tail)\n{p.tail(10)}", flush=True)
    except KeyboardInterrupt as e:
        failed.append("interrupted")
        log(f"interrupted: {e}")
    finally:
        c.teardown()
    log("figures: " + json.dumps({k: v for k, v in results.items() if k != "detail"}))
    return mh.finish(c, failed, t_all, args.keep_logs)


if __name__ == "__main__":
    sys.exit(main())
