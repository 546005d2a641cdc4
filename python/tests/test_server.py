"""The harness server (`python -m kagent_harness serve`) as a worker runs it: a real
process on a Unix socket, on the CPU (Triton's interpreter), with its warm pool, the
job trial cache, prepare before measure, a screen, cancellation and release."""

import json
import shutil
import socket
import tempfile
import time

import pytest

from conftest import read, start_server

PROBLEM = "problem_relu_add.py"


def call(path, msg, timeout=300):
    from kagent_harness.server import call as server_call
    return server_call(path, msg, timeout)


def request(op, candidate=None, **extra):
    msg = {"op": op, "device": "cpu", "problem_source": read(PROBLEM), "trials": 5,
           "timing_reps": 3, "warmup_iters": 1, "warmup_ms": 0, "call_timeout_s": 30,
           "timeout_s": 180}
    if candidate:
        msg["kernel_source"] = read(candidate)
    msg.update(extra)
    return msg


@pytest.fixture(scope="module")
def server():
    d = tempfile.mkdtemp(prefix="kagent-srv-test-")
    path, proc, log = start_server(d, cache_mb=256)
    yield path, proc, d
    proc.terminate()
    proc.wait(timeout=30)
    log.close()
    shutil.rmtree(d, ignore_errors=True)


def test_ping_and_bad_requests(server):
    path, _, _ = server
    p = call(path, {"op": "ping"})
    assert p["ok"] and p["device"] == "cpu" and p["cache_limit_bytes"] == 256 << 20
    assert call(path, {"op": "nope"})["ok"] is False
    r = call(path, {"op": "measure", "device": "cpu"})  # no problem_source
    assert r["verdict"] == "INFRA_ERROR" and "problem_source" in r["correctness"]["reason"]


def test_a_jobs_trials_are_kept_and_reused(server):
    path, _, _ = server
    first = call(path, request("measure", "cand_relu_add_good.py", job_id="job-a"))
    assert first["verdict"] == "CORRECT", first["correctness"]["reason"] + first["log"]
    assert first["harness"]["trial_set"] == "built"
    second = call(path, request("measure", "cand_relu_add_good.py", job_id="job-a"))
    assert second["verdict"] == "CORRECT", second["correctness"]["reason"]
    assert second["harness"]["trial_set"] == "reused"
    assert call(path, {"op": "ping"})["cache_bytes"] > 0
    # The gate still catches what it caught: a wrong candidate on the kept trials, and a
    # candidate caching by pointer (the kept trials plus one drawn for it alone).
    wrong = call(path, request("measure", "cand_relu_add_wrong.py", job_id="job-a"))
    assert wrong["verdict"] == "INCORRECT"
    cache = call(path, request("measure", "cand_relu_add_cache_ptr.py", job_id="job-a"))
    assert cache["verdict"] == "REJECTED", cache["correctness"]["reason"]
    assert call(path, {"op": "release_job", "job_id": "job-a"})["released"] is True
    assert call(path, {"op": "release_job", "job_id": "job-a"})["released"] is False


def test_jobs_built_at_once_give_what_a_same_seeded_candidate_reproduces(server):
    """Two jobs whose references draw their weights slowly, prepared at once: each
    reference is built on its own server thread while the other draws, and a candidate
    that names its parameter otherwise (weights from the seed alone) must still match
    (loader.seeded; every element failed before, problems/45 through kagentd)."""
    import threading
    path, _, _ = server
    results = {}

    def measure(job):
        # Prepares run at once (measures take the GPU slot in turn): each builds its job's
        # reference, then the candidate's process, from the job's seed.
        msg = request("prepare", "cand_scale_seeded.py", job_id=job,
                      problem_source=read("problem_scale_slow_init.py"))
        p = call(path, msg)
        assert p["prepared"], p
        results[job] = call(path, dict(msg, op="measure", prepared=p["prepared"]))

    threads = [threading.Thread(target=measure, args=(j,)) for j in ("race-a", "race-b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for job, r in results.items():
        assert r["verdict"] == "CORRECT", f"{job}: {r['correctness']['reason']}"


def test_prepare_then_measure(server):
    path, _, _ = server
    call(path, request("measure", "cand_relu_add_good.py", job_id="job-p"))  # the trials
    p = call(path, request("prepare", "cand_relu_add_good.py", job_id="job-p"))
    assert p["ok"] and p["prepared"], p
    assert p["compiled"] is not None and p["compiled"]["clean"] is True, p
    r = call(path, request("measure", "cand_relu_add_good.py", job_id="job-p",
                           prepared=p["prepared"]))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"]
    assert r["harness"]["prepared"] is True
    phases = r["harness"]["phases_ms"]
    assert "candidate import and construction" not in phases
    # The harness's account of the held span: the whole request, with its named parts
    # (the gate, the timing, the finish) inside it.
    whole = phases["supervisor: the whole request"]
    assert whole >= phases["gate"] + phases["timing"] + \
        phases["finish: processes retired, memory released"] - 1.0, phases
    # With the job's starting kernel, its process is prepared too and used when timed.
    p = call(path, request("prepare", "cand_relu_add_good.py", job_id="job-p",
                           reference_kernel_source=read("cand_relu_add_good.py")))
    assert p["prepared"] and p["starting_kernel_prepared"] is True, p
    r = call(path, request("measure", "cand_relu_add_good.py", job_id="job-p",
                           prepared=p["prepared"],
                           reference_kernel_source=read("cand_relu_add_good.py")))
    assert r["verdict"] == "CORRECT" and r["reference_kernel"]["count"] == 3
    assert "starting kernel: import and construction" not in r["harness"]["phases_ms"]
    # A handle serves one measure.
    again = call(path, request("measure", "cand_relu_add_good.py", job_id="job-p",
                               prepared=p["prepared"]))
    assert again["verdict"] == "CORRECT" and again["harness"]["prepared"] is False
    # A prepared candidate whose measurement will not run is given back.
    p = call(path, request("prepare", "cand_relu_add_good.py", job_id="job-p"))
    held = call(path, {"op": "ping"})["prepared"]
    assert call(path, {"op": "release_prepared", "prepared": p["prepared"]})["released"]
    assert call(path, {"op": "ping"})["prepared"] == held - 1
    assert call(path, {"op": "release_prepared", "prepared": p["prepared"]})["released"] is False


def test_the_first_prepare_of_a_job_compiles_too(server):
    # Before the job's first measurement no trial exists: the dry run's stand-ins come
    # from get_inputs run on the meta device (shapes only, nothing on the device).
    path, _, _ = server
    p = call(path, request("prepare", "cand_relu_add_good.py", job_id="job-first"))
    assert p["prepared"] and p["compiled"] and p["compiled"]["clean"] is True, p
    r = call(path, request("measure", "cand_relu_add_good.py", job_id="job-first",
                           prepared=p["prepared"]))
    assert r["verdict"] == "CORRECT" and r["harness"]["prepared"] is True


def test_a_process_started_for_a_prepare_outlives_the_request_thread():
    """With no warm process ready, prepare starts one now; it must live until the
    measurement that uses it, though the request's thread ends with its answer (the
    parent-death signal follows the forking thread: pool.ChildPool starts such processes
    from threads of its own)."""
    d = tempfile.mkdtemp(prefix="kagent-srv-cold-")
    path, proc, log = start_server(d, extra_args=("--pool", "0"))
    try:
        p = call(path, request("prepare", "cand_relu_add_good.py", job_id="job-cold"))
        assert p["prepared"], p
        time.sleep(2)   # the prepare's connection thread has ended
        r = call(path, request("measure", "cand_relu_add_good.py", job_id="job-cold",
                               prepared=p["prepared"]))
        assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
        assert r["harness"]["prepared"] is True
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        shutil.rmtree(d, ignore_errors=True)


def test_a_broken_candidate_gets_its_verdict_in_prepare(server):
    path, _, _ = server
    p = call(path, request("prepare", "cand_relu_add_import_error.py", job_id="job-b"))
    assert p["prepared"] is None and p["result"]["verdict"] == "COMPILE_ERROR", p
    assert p["result"]["gpu_seconds"] == 0.0


def test_screen_ranks_variants(server):
    path, _, _ = server
    kernels = [{"source": read("cand_relu_add_good.py")},
               {"source": read("cand_relu_add_wrong.py")},
               {"source": read("cand_relu_add_import_error.py")}]
    r = call(path, {"op": "screen", "device": "cpu", "problem_source": read(PROBLEM),
                    "job_id": "job-s", "kernels": kernels, "timing_reps": 2})
    assert r["ok"], r
    ok = [x["ok"] for x in r["results"]]
    assert ok == [True, False, False], r["results"]
    assert r["results"][0]["median_ms"] > 0
    assert "INCORRECT" in r["results"][1]["reason"]
    assert "COMPILE_ERROR" in r["results"][2]["reason"]
    assert call(path, {"op": "screen", "kernels": []})["ok"] is False


def test_a_screen_gives_up_after_two_processes_ended_by_variants(server):
    # Each crash ends the variants' process; the next one would import and compile the
    # rest under the GPU slot, so after the second the rest are left unscreened.
    path, _, _ = server
    kernels = [{"source": read("cand_relu_add_segfault.py")},
               {"source": read("cand_relu_add_good.py")},
               {"source": read("cand_relu_add_segfault.py")},
               {"source": read("cand_relu_add_segfault.py")},
               {"source": read("cand_relu_add_good.py")}]
    r = call(path, {"op": "screen", "device": "cpu", "problem_source": read(PROBLEM),
                    "job_id": "job-crash", "kernels": kernels, "timing_reps": 2})
    assert r["ok"], r
    res = r["results"]
    assert [x["ok"] for x in res] == [False, True, False, False, False], res
    assert res[0]["reason"].startswith("CRASH") and res[2]["reason"].startswith("CRASH"), res
    for x in res[3:]:
        assert x["reason"].startswith("not screened: 2 of the screen's processes were ended "
                                      "by a variant's failure (variants 0, 2)"), x
    assert all("ended_process" not in x for x in res)


def test_a_prepared_screen_runs_in_its_prepared_process(server):
    path, _, _ = server
    kernels = [{"source": read("cand_relu_add_good.py")},
               {"source": read("cand_relu_add_wrong.py")},
               {"source": read("cand_relu_add_import_error.py")}]
    base = {"device": "cpu", "problem_source": read(PROBLEM), "job_id": "job-ps",
            "kernels": kernels, "timing_reps": 2}
    held = call(path, {"op": "ping"})["prepared"]
    p = call(path, {"op": "prepare_screen", **base})
    assert p["ok"] and p["prepared"].startswith("s-"), p
    assert "screen: import and construction" in p["phases_ms"], p
    assert "screen: compile dry runs" in p["phases_ms"], p
    assert call(path, {"op": "ping"})["prepared"] == held + 1
    r = call(path, {"op": "screen", **base, "prepared": p["prepared"]})
    assert r["ok"] and r["prepared"] is True, r
    assert [x["ok"] for x in r["results"]] == [True, False, False], r["results"]
    assert "INCORRECT" in r["results"][1]["reason"]
    assert "COMPILE_ERROR" in r["results"][2]["reason"]
    assert "screen: import and construction" not in r["phases_ms"], r["phases_ms"]
    assert r["phases_ms"]["supervisor: the whole request"] > 0, r["phases_ms"]
    assert call(path, {"op": "ping"})["prepared"] == held
    # A handle is used once; a used or unknown one screens from the start.
    again = call(path, {"op": "screen", **base, "prepared": p["prepared"]})
    assert again["ok"] and again["prepared"] is False
    assert [x["ok"] for x in again["results"]] == [True, False, False]
    # Prepared for other kernels: not used, and the screen is still right.
    p = call(path, {"op": "prepare_screen", **base})
    other = call(path, {"op": "screen", **base, "kernels": kernels[:1],
                        "prepared": p["prepared"]})
    assert other["ok"] and other["prepared"] is False and other["results"][0]["ok"], other
    assert "not used" in other["log"], other["log"]
    # A measurement never takes a screen's process, and an unused one is given back.
    p = call(path, {"op": "prepare_screen", **base})
    m = call(path, request("measure", "cand_relu_add_good.py", job_id="job-ps",
                           prepared=p["prepared"]))
    assert m["verdict"] == "CORRECT" and m["harness"]["prepared"] is False, m["log"]
    p = call(path, {"op": "prepare_screen", **base})
    assert call(path, {"op": "release_prepared", "prepared": p["prepared"]})["released"]
    assert call(path, {"op": "ping"})["prepared"] == held
    bad = call(path, {"op": "prepare_screen", **base, "kernels": []})
    assert bad["ok"] is False and "kernels" in bad["error"], bad
    assert call(path, {"op": "prepare_screen", **base, "job_id": ""})["prepared"] is None


def test_a_closed_connection_cancels_the_request(server):
    path, proc, _ = server
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall((json.dumps(request("measure", "cand_relu_add_hang.py", job_id="job-h",
                                  call_timeout_s=120)) + "\n").encode())
    time.sleep(8)
    s.close()
    # The hanging candidate's process is killed within seconds and the server serves on.
    t = time.monotonic()
    r = call(path, request("measure", "cand_relu_add_good.py", job_id="job-h"))
    assert r["verdict"] == "CORRECT"
    assert time.monotonic() - t < 100
    assert proc.poll() is None


def test_sigterm_ends_the_server_at_once_after_its_cleanup():
    """A worker's shutdown waits for its harness server: once the server has closed its
    socket and its candidate processes ("stopped" in its log) it exits without the
    interpreter's teardown, which took 1.3-3 s (torch's and the thread pools' exit handlers;
    0.04 s without it)."""
    import os
    import signal
    d = tempfile.mkdtemp(prefix="kagent-srv-stop-")
    path, proc, log = start_server(d)
    try:
        r = call(path, request("measure", "cand_relu_add_good.py", job_id="job-stop"))
        assert r["verdict"] == "CORRECT", r["correctness"]["reason"]
        proc.send_signal(signal.SIGTERM)
        log_path = os.path.join(d, "server.log")
        deadline = time.monotonic() + 30
        while b"stopped" not in open(log_path, "rb").read():
            assert time.monotonic() < deadline, open(log_path).read()
            time.sleep(0.02)
        stopped = time.monotonic()
        proc.wait(timeout=30)
        after = time.monotonic() - stopped
        assert proc.returncode == 0, open(log_path).read()
        assert not os.path.exists(path)
        assert after < 0.75, f"exited {after:.2f} s after its cleanup"
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
        shutil.rmtree(d, ignore_errors=True)


def test_the_socket_is_private_without_touching_the_umask():
    """The server's socket is 0600 from its first moment, made without changing the
    process's umask: a umask of 0177 set while the warm pool's threads made candidates'
    directories once left a candidate's torch_extensions at 0600 (its build denied)."""
    import os
    import threading
    from kagent_harness import server as srv_mod
    d = tempfile.mkdtemp(prefix="kagent-sock-test-")
    seen, stop = set(), threading.Event()

    def watch():
        while not stop.is_set():
            m = os.umask(0o022)
            os.umask(m)
            seen.add(m)

    t = threading.Thread(target=watch)
    before = os.umask(0o022)
    t.start()
    try:
        path = os.path.join(d, "harness.sock")
        srv = srv_mod._bind_private(path)
        try:
            st = os.stat(path)
            assert oct(st.st_mode & 0o777) == oct(0o600)
            assert srv.server_address == path
            assert sorted(os.listdir(d)) == ["harness.sock"]  # its private directory is gone
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(path)  # the renamed file still reaches the listening socket
            c.close()
        finally:
            srv.server_close()
    finally:
        stop.set()
        t.join()
        os.umask(before)
        shutil.rmtree(d, ignore_errors=True)
    assert seen == {0o022}, [oct(m) for m in seen]
