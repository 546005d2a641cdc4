"""The correctness gate end to end on real Triton candidates (interpreter, CPU): each
candidate runs in its own child process, as in production."""

import pytest

from conftest import GPU_ADV, measure, read

PROBLEM = "problem_relu_add.py"

CASES = [
    # candidate, expected verdict, a fragment of the reason
    ("cand_relu_add_wrong.py", "INCORRECT", "outside atol"),
    ("cand_relu_add_no_relu.py", "INCORRECT", "trial neg"),
    ("cand_relu_add_cache_ptr.py", "REJECTED", "previous call's answer"),
    ("cand_relu_add_mutates.py", "REJECTED", "mutated its input"),
    ("cand_relu_add_torch_only.py", "REJECTED", "no Triton kernel of the candidate ran"),
    ("cand_relu_add_const_shortcut.py", "INCORRECT", "trial const"),
    ("cand_relu_add_partial.py", "INCORRECT", "output 0"),
    ("cand_relu_add_persistent_out.py", "REJECTED", "previous call's output"),
    ("cand_relu_add_timing_shortcut.py", "REJECTED", "while timed"),
    ("cand_relu_add_hang.py", "TIMEOUT", "no answer"),
    ("cand_relu_add_segfault.py", "CRASH", "SIGSEGV"),
    ("cand_relu_add_import_error.py", "COMPILE_ERROR", "broken candidate"),
    ("cand_relu_add_oom.py", "OOM", "allocate"),
    ("cand_relu_add_rss_hog.py", "OOM", "resident memory over the limit"),
]


def test_a_patched_clock_is_stopped_by_the_timing_deadline():
    # The candidate stops time.perf_counter in its own process once the gate is over, so
    # its warm-up (at least warmup_ms) would never end: the supervisor's deadline, sized
    # from the gate's calls, stops it long before the request's timeout.
    import time
    t = time.monotonic()
    r = measure(PROBLEM, "cand_relu_add_patched_clock.py", warmup_ms=50, timeout_s=300)
    assert r["verdict"] == "TIMEOUT", r["correctness"]["reason"]
    assert "a warm-up that does not end" in r["correctness"]["reason"]
    assert time.monotonic() - t < 200  # the limit is seconds; 300 s is the request's


def test_autotuned_candidate_runs_on_the_interpreter():
    # Triton's autotuner times configs through the GPU driver; on the CPU device the child
    # gives it a wall clock (it crashed with "0 active drivers" before).
    r = measure(PROBLEM, "cand_relu_add_autotuned.py")
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    assert r["candidate"]["count"] == 3


def test_starting_kernel_timed_in_the_same_run():
    # The job's starting kernel (reference_kernel_source) gets its own process and the
    # same timing protocol, so speedup over the start is a ratio from one run.
    from conftest import read
    r = measure(PROBLEM, "cand_relu_add_good.py",
                reference_kernel_source=read("cand_relu_add_good.py"))
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    assert r["reference_kernel"]["count"] == 3
    assert r["candidate"]["count"] == 3


def test_candidate_process_is_gone_before_the_starting_kernel_runs(monkeypatch):
    # Whatever the candidate left running (a thread keeping the device busy) must not
    # slow the starting kernel's timing and inflate the speedup over it.
    from conftest import read
    from kagent_harness.measure import Supervisor
    seen = []
    orig = Supervisor.time_reference_kernel

    def check(self):
        seen.append(self.child.proc.poll())
        return orig(self)

    monkeypatch.setattr(Supervisor, "time_reference_kernel", check)
    r = measure(PROBLEM, "cand_relu_add_good.py",
                reference_kernel_source=read("cand_relu_add_good.py"))
    assert r["verdict"] == "CORRECT"
    assert len(seen) == 1 and seen[0] is not None  # exited before the start was timed
    assert r["reference_kernel"]["count"] == 3
    # Killed and waited for, not asked to exit (its interpreter's shutdown is not the
    # GPU's time).
    assert "the candidate's process ended" in r["harness"]["phases_ms"]


def test_wrong_starting_kernel_is_not_timed_and_does_not_fail_the_candidate():
    from conftest import read
    r = measure(PROBLEM, "cand_relu_add_good.py",
                reference_kernel_source=read("cand_relu_add_wrong.py"))
    assert r["verdict"] == "CORRECT"
    assert r["reference_kernel"] is None
    assert any("starting kernel is wrong" in w for w in r["harness"]["warnings"])


def _harness_children():
    """Live processes running the candidate child whose parent is this process."""
    import os
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"kagent_harness.child" in cmd and int(fields[1]) == os.getpid() \
                and fields[0] != "Z":
            found.append(int(pid))
    return found


def test_early_started_processes_are_closed_when_the_candidate_fails():
    # The candidate's and the starting kernel's processes start before the reference
    # loads; a candidate that fails the gate leaves the second one unused: it must be
    # closed with its workdir, and the time per phase is still reported.
    from conftest import read
    r = measure(PROBLEM, "cand_relu_add_wrong.py",
                reference_kernel_source=read("cand_relu_add_good.py"))
    assert r["verdict"] == "INCORRECT"
    assert r["reference_kernel"] is None
    assert _harness_children() == []
    phases = r["harness"]["phases_ms"]
    assert "candidate import and construction" in phases and "gate: compare" in phases
    assert "candidate process spawn" in phases and "timing" not in phases


def test_correct_candidate_passes_and_is_timed():
    r = measure(PROBLEM, "cand_relu_add_good.py")
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    c = r["correctness"]
    # seeded + one drawn for this candidate alone + wide + timing inputs
    assert c["trials"] == c["trials_passed"] == 5 + 1 + 4 + 1
    assert (c["atol"], c["rtol"]) == (1e-4, 1e-4)
    assert r["candidate"]["count"] == 3
    assert r["kernels_launched"] == ["relu_add_kernel"]
    assert r["op_signature"]["ops"][0]["op"] == "aten::relu"
    assert any("verified" in x for x in r["harness"]["checks"])
    phases = r["harness"]["phases_ms"]
    for name in ("process start and imports", "reference load", "op signature", "gate",
                 "gate: reference", "gate: outputs back", "timing"):
        assert phases.get(name, -1) >= 0, (name, phases)
    # The candidate's process's own account of its gate calls, every step named.
    from kagent_harness.protocol import CHILD_STEPS
    for step in CHILD_STEPS:
        assert phases.get(f"gate, child's clock: {step}", -1) >= 0, (step, phases)
    assert r["harness"]["outputs_via"] == "file"  # CUDA IPC is for the GPU


@pytest.mark.parametrize("candidate,verdict,reason", CASES, ids=[c[0][14:-3] for c in CASES])
def test_bad_candidates_get_their_verdict(candidate, verdict, reason):
    extra = {"call_timeout_s": 4} if "hang" in candidate else {}
    if "rss_hog" in candidate:
        extra = {"memory_limit_mb": 1536}
    r = measure(PROBLEM, candidate, **extra)
    assert r["verdict"] == verdict, (r["correctness"], r["log"][-2000:])
    assert reason in r["correctness"]["reason"], r["correctness"]["reason"]
    if "hang" in candidate:  # where it hung, from the stacks printed before the kill
        assert "main thread was at File" in r["correctness"]["reason"] and \
            "in forward" in r["correctness"]["reason"], r["correctness"]["reason"]
        assert "faulthandler" in r["log"], r["log"][-2000:]


def test_seeded_weights_match_between_model_and_modelnew():
    # nn.Linear weights drawn under the same seed in both processes; a Triton matmul.
    r = measure("problem_linear.py", "cand_linear_triton.py", timing_reps=1)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]


def test_tolerance_override_is_used():
    r = measure(PROBLEM, "cand_relu_add_wrong.py", atol=10.0, rtol=0.0, time_candidate=False)
    assert r["verdict"] == "CORRECT" and r["correctness"]["atol"] == 10.0


@pytest.mark.parametrize("candidate", ["cand_matvec_row.py", "cand_matvec_tile32.py"])
def test_case_study_candidates_pass_at_reduced_size(candidate, monkeypatch):
    monkeypatch.setenv("KAGENT_MATVEC_M", "40")   # not a multiple of the 32-row tile
    monkeypatch.setenv("KAGENT_MATVEC_K", "600")  # not a multiple of BLOCK_K
    r = measure("problem_matvec.py", candidate, folder=GPU_ADV, timing_reps=1, trials=5)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    assert r["op_signature"]["flops"] == 2 * 40 * 600


def test_case_study_returns_reference_is_rejected(monkeypatch):
    monkeypatch.setenv("KAGENT_MATVEC_M", "16")
    monkeypatch.setenv("KAGENT_MATVEC_K", "256")
    r = measure("problem_matvec.py", "adv_returns_reference.py", folder=GPU_ADV)
    assert r["verdict"] == "REJECTED"


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
                    reason="the privilege drop applies when the harness runs as root")
def test_privilege_drop_keeps_the_candidate_away_from_the_supervisor(monkeypatch, tmp_path):
    import os
    import shutil
    from conftest import FAST
    from kagent_harness import bwrap
    from kagent_harness import protocol as P
    from kagent_harness.measure import Supervisor
    src = read("cand_relu_add_probe_parent.py").replace("SUPERVISOR_PID = 0",
                                                        f"SUPERVISOR_PID = {os.getpid()}")

    def run(**extra):
        raw = dict(FAST, problem_source=read(PROBLEM), kernel_source=src,
                   time_candidate=False, **extra)
        return Supervisor(P.Request(raw, mode="measure"), P.Log()).run_measure()
    # The default: the sandbox's PID namespace and the drop to nobody.
    r = run()
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"]
    assert r["harness"]["sandbox"]["uid"] != 0
    # Root inside the sandbox still cannot see the supervisor (PID namespace).
    r = run(drop_privileges=False)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"]
    assert r["harness"]["sandbox"]["uid"] == 0
    if shutil.which("bwrap") is None:
        return
    # Without bubblewrap (best-effort) the drop alone keeps it away ...
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in os.listdir("/usr/bin"):
        if name != "bwrap":
            os.symlink(os.path.join("/usr/bin", name), bin_dir / name)
    monkeypatch.setenv("PATH", str(bin_dir))
    bwrap.reset_probe()
    try:
        r = run(sandbox="best-effort")
        assert r["verdict"] == "CORRECT", r["correctness"]["reason"]
        # ... and with neither, a root candidate can signal (so kill) the supervisor.
        r = run(sandbox="best-effort", drop_privileges=False)
        assert r["verdict"] == "COMPILE_ERROR" and "supervisor" in r["correctness"]["reason"]
    finally:
        monkeypatch.undo()
        bwrap.reset_probe()


def test_wide_trial_decided_by_the_float64_reference_where_fp32_is_off():
    # On the wide trials the fp32 reference can be off by more than the tolerance
    # (sin of a product in the thousands); a candidate within it of the float64 reference
    # passes, with a warning, and one wrong on the wide inputs still fails.
    r = measure("problem_sin_wide.py", "cand_sin_wide_exact.py")
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    warned = [w for w in r["harness"]["warnings"] if "float64 reference" in w]
    assert any("scale10" in w for w in warned), r["harness"]["warnings"]
    r = measure("problem_sin_wide.py", "cand_sin_wide_clamped.py")
    assert r["verdict"] == "INCORRECT", r["correctness"]["reason"]
    assert "wide" in r["correctness"]["reason"], r["correctness"]["reason"]
    assert "outside the tolerance of the fp32" not in " ".join(r["harness"]["warnings"])

