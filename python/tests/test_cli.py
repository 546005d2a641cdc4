"""The JSON protocol through the real entry point: python -m kagent_harness."""

import json
import os
import subprocess
import sys
import time

from conftest import FAST, PYDIR, read


def run_cli(args, stdin=None, cwd=None):
    env = dict(os.environ, PYTHONPATH=PYDIR)
    return subprocess.run([sys.executable, "-m", "kagent_harness"] + args, input=stdin,
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_measure_with_files_and_baselines(tmp_path):
    req = dict(FAST, problem_source=read("problem_relu_add.py"),
               kernel_source=read("cand_relu_add_good.py"), baselines=["eager"],
               shape_set="wide", get_inputs_source="return [torch.rand(3, 100), torch.rand(3, 100)]")
    (tmp_path / "req.json").write_text(json.dumps(req))
    p = run_cli(["measure", "--request", str(tmp_path / "req.json"),
                 "--out", str(tmp_path / "res.json")])
    assert p.returncode == 0, p.stderr
    res = json.loads((tmp_path / "res.json").read_text())
    assert res["verdict"] == "CORRECT", res["log"]
    for key in ("correctness", "candidate", "eager", "compiled", "kernels_launched",
                "op_signature", "gpu_name", "log", "shape_set"):
        assert key in res
    assert res["eager"]["count"] == 3 and res["candidate"]["count"] == 3
    assert res["compiled"] is None and res["shape_set"] == "wide"
    assert res["op_signature"]["ops"][0]["inputs"][0]["shape"] == [3, 100]
    assert set(res["correctness"]) == {"trials", "trials_passed", "max_abs_error",
                                       "max_rel_error", "worst_index", "atol", "rtol", "reason"}
    assert set(res["candidate"]) == {"median_ms", "mean_ms", "p10_ms", "p90_ms", "min_ms",
                                     "max_ms", "count"}


def test_baselines_only_with_torch_compile_over_stdin():
    req = dict(FAST, problem_source=read("problem_relu_add.py"), baselines=True,
               signature=False)
    p = run_cli(["measure"], stdin=json.dumps(req))
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["verdict"] == "CORRECT", res["log"]
    assert res["eager"]["count"] == 3
    assert res["compiled"] is not None and res["compiled"]["count"] == 3, res["log"]


def test_signature_mode_over_stdin():
    req = {"problem_source": read("problem_linear.py"), "device": "cpu"}
    p = run_cli(["signature"], stdin=json.dumps(req))
    res = json.loads(p.stdout)
    assert res["ok"], res
    sig = res["op_signature"]
    assert sig["flops"] == 2 * 8 * 32 * 16
    assert any(op["op"] == "aten::addmm" for op in sig["ops"])


def test_profile_mode_runs_candidate_in_child():
    req = dict(FAST, problem_source=read("problem_relu_add.py"),
               kernel_source=read("cand_relu_add_good.py"), profile_iters=2)
    p = run_cli(["profile"], stdin=json.dumps(req))
    res = json.loads(p.stdout)
    assert res["ok"] and res["nvtx_range"] == "kagent_candidate", res
    assert res["kernels_launched"] == ["relu_add_kernel"]


def _start_gated_profile(tmp_path, kernel_source):
    req = dict(FAST, problem_source=read("problem_relu_add.py"), kernel_source=kernel_source,
               profile_iters=2)
    (tmp_path / "req.json").write_text(json.dumps(req))
    gate = tmp_path / "gate"
    gate.mkdir()
    env = dict(os.environ, PYTHONPATH=PYDIR)
    proc = subprocess.Popen([sys.executable, "-m", "kagent_harness", "profile", "--request",
                             str(tmp_path / "req.json"), "--out", str(tmp_path / "res.json"),
                             "--gate-dir", str(gate)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    return proc, gate


def _wait_for(path, proc, timeout=240):
    t0 = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < timeout, f"{path} never appeared"
        time.sleep(0.05)


def test_gated_profile_prepares_then_waits_for_the_worker_go(tmp_path):
    proc, gate = _start_gated_profile(tmp_path, read("cand_relu_add_good.py"))
    try:
        _wait_for(gate / "ready", proc)
        # Ready, and it waits: nothing profiled and no result until the worker says go.
        time.sleep(1.0)
        assert proc.poll() is None
        assert not (tmp_path / "res.json").exists() and not (gate / "done").exists()
        (gate / "go").write_text("go\n")
        proc.wait(timeout=240)
    finally:
        proc.kill()
    res = json.loads((tmp_path / "res.json").read_text())
    assert res["ok"] and res["kernels_launched"] == ["relu_add_kernel"], res
    assert (gate / "done").exists()
    phases = res["phases_ms"]
    assert "waiting for the GPU" in phases and "compile dry run" in phases, phases
    # The held part is named too: the inputs and the forwards under the profiler.
    assert "profile: inputs" in phases and "profile: forwards" in phases, phases
    # The harness's account of the held span, from the grant to done.
    assert phases["profile: the GPU held, in the harness"] >= \
        phases["profile: forwards"] - 1.0, phases
    assert res["gate_wait_s"] >= 1.0


def test_gated_profile_ends_without_the_gpu_on_stop(tmp_path):
    proc, gate = _start_gated_profile(tmp_path, read("cand_relu_add_good.py"))
    try:
        _wait_for(gate / "ready", proc)
        (gate / "stop").write_text("stop\n")
        proc.wait(timeout=120)
    finally:
        proc.kill()
    res = json.loads((tmp_path / "res.json").read_text())
    assert not res["ok"] and res["verdict"] == "INFRA_ERROR"
    assert "did not grant the GPU" in res["reason"]
    assert res["kernels_launched"] == []


def test_gated_profile_of_a_candidate_that_fails_to_build_never_asks_for_the_gpu(tmp_path):
    broken = read("cand_relu_add_good.py") + "\nraise RuntimeError('broken at import')\n"
    proc, gate = _start_gated_profile(tmp_path, broken)
    try:
        proc.wait(timeout=240)
    finally:
        proc.kill()
    res = json.loads((tmp_path / "res.json").read_text())
    assert not res["ok"] and res["verdict"] in ("COMPILE_ERROR", "CRASH"), res
    assert "broken at import" in res["reason"] + res["log"]
    assert not (gate / "ready").exists()


def test_profile_mode_gives_the_tracer_to_the_candidate_process_only(tmp_path):
    # Under the CUPTI backend only the candidate's process may load the tracer and write
    # the trace: the problem (loaded by the supervisor) and the candidate (in the child)
    # each record which of the tracer's variables they see.
    spy = ("import os, json\n"
           "with open(os.path.join({d!r}, {name!r}), 'w') as _f:\n"
           "    json.dump({{k: os.environ.get(k) for k in ('CUDA_INJECTION64_PATH', "
           "'KAGENT_CUPTI_OUT', 'KAGENT_CUPTI_LIB')}}, _f)\n")
    problem = spy.format(d=str(tmp_path), name="supervisor.json") + read("problem_relu_add.py")
    # The candidate's sandbox cannot write to tmp_path: it reports on its stderr, which
    # the result's log carries.
    # It also writes a line where its tracer would write the trace: the caller's file must
    # get it.
    child_spy = ("import os, json, sys\n"
                 "sys.stderr.write('KAGENT-SPY ' + json.dumps({k: os.environ.get(k) for k in "
                 "('CUDA_INJECTION64_PATH', 'KAGENT_CUPTI_OUT', 'KAGENT_CUPTI_LIB')}) + '\\n')\n"
                 "open(os.environ['KAGENT_CUPTI_OUT'], 'w').write('{\"kind\": \"spy\"}\\n')\n")
    cand = child_spy + read("cand_relu_add_good.py")
    req = dict(FAST, problem_source=problem, kernel_source=cand, network_isolation=False)
    env = dict(os.environ, PYTHONPATH=PYDIR, CUDA_INJECTION64_PATH="/nonexistent/tracer.so",
               KAGENT_CUPTI_OUT=str(tmp_path / "trace.jsonl"),
               KAGENT_CUPTI_LIB="/nonexistent/libkagent_cupti.so")
    p = subprocess.run([sys.executable, "-m", "kagent_harness", "profile"], input=json.dumps(req),
                       capture_output=True, text=True, env=env, timeout=300)
    res = json.loads(p.stdout)
    assert res["ok"], res
    sup = json.loads((tmp_path / "supervisor.json").read_text())
    line = next(ln for ln in res["log"].splitlines() if ln.startswith("KAGENT-SPY "))
    child = json.loads(line[len("KAGENT-SPY "):])
    assert sup == {"CUDA_INJECTION64_PATH": None, "KAGENT_CUPTI_OUT": None,
                   "KAGENT_CUPTI_LIB": "/nonexistent/libkagent_cupti.so"}
    # The candidate's process gets all three (its environment drops other KAGENT_*), the
    # trace's file in its own workdir: the caller's directory is hidden from its sandbox.
    assert child["CUDA_INJECTION64_PATH"] == "/nonexistent/tracer.so"
    assert child["KAGENT_CUPTI_LIB"] == "/nonexistent/libkagent_cupti.so"
    assert child["KAGENT_CUPTI_OUT"].endswith("/cupti_trace.jsonl")
    assert not child["KAGENT_CUPTI_OUT"].startswith(str(tmp_path))
    # What it wrote there is handed over to the caller's file.
    assert (tmp_path / "trace.jsonl").read_text() == '{"kind": "spy"}\n'
    assert not os.path.exists(child["KAGENT_CUPTI_OUT"])  # its workdir is gone


def test_gpuinfo_without_gpu_answers_json():
    p = run_cli(["gpuinfo"], stdin="{}")
    res = json.loads(p.stdout)
    assert "ok" in res


def test_bad_requests_still_answer_json():
    p = run_cli(["measure"], stdin="{not json")
    res = json.loads(p.stdout)
    assert res["verdict"] == "INFRA_ERROR" and "bad request" in res["correctness"]["reason"]
    p = run_cli(["measure"], stdin=json.dumps({"problem_source": "x", "trials": "many"}))
    assert p.returncode == 2
    assert json.loads(p.stdout)["verdict"] == "INFRA_ERROR"
    p = run_cli(["measure"], stdin=json.dumps({"problem_source": "import nothing_here\n",
                                               "device": "cpu"}))
    res = json.loads(p.stdout)
    assert res["verdict"] == "INFRA_ERROR" and "reference" in res["correctness"]["reason"]


def test_a_profiled_process_whose_sandbox_failed_is_started_again(monkeypatch):
    # Profile mode hides the shared /tmp's kagent-* entries; one that vanishes before
    # bwrap mounts over it ends the process before it has the candidate's code. Such a
    # start is tried again, up to PROFILE_START_ATTEMPTS in all (in process, on the CPU).
    from kagent_harness import measure as M
    from kagent_harness import profile_mode
    from kagent_harness import protocol as P
    from kagent_harness.sandbox import ChildFailure
    real = M.Supervisor.start_child
    fails = {"left": profile_mode.PROFILE_START_ATTEMPTS - 1}

    def flaky(self, *a, **k):
        if fails["left"] > 0:
            fails["left"] -= 1
            raise ChildFailure(P.CRASH, "bwrap: Can't remount readonly on /newroot/dev/shm/"
                               "kagent-x: No such file or directory")
        return real(self, *a, **k)
    monkeypatch.setattr(M.Supervisor, "start_child", flaky)
    from conftest import workdirs_of_this_process
    before = workdirs_of_this_process()
    req = P.Request(dict(FAST, problem_source=read("problem_relu_add.py"),
                         kernel_source=read("cand_relu_add_good.py"), profile_iters=2),
                    mode="profile")
    res = M.Supervisor(req, P.Log()).run_profile()
    assert res["ok"] and res["kernels_launched"] == ["relu_add_kernel"], res
    assert f"attempt {profile_mode.PROFILE_START_ATTEMPTS} of" in res["log"]
    # One failure more than that is the profile's.
    fails["left"] = profile_mode.PROFILE_START_ATTEMPTS
    res = M.Supervisor(req, P.Log()).run_profile()
    assert not res["ok"] and res["verdict"] == P.CRASH and "remount" in res["reason"]
    # The processes started again left no workdir behind.
    assert workdirs_of_this_process() <= before
