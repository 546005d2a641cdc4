"""tests/gpu/compare_runs.py: two runs' tasks matched by problem and kind (no GPU)."""

import gzip
import json

import pytest

from conftest import gpu_script


@pytest.fixture(scope="module")
def cr():
    return gpu_script("compare_runs")


def _submitted(job, name):
    return json.dumps({"ts": "2026-12-06T00:00:00Z", "job_id": job,
                       "msg": f"job submitted: {name}"})


def _task(job, task, held, busy, phases, msg="measured: VERDICT_CORRECT 1 ms (prepared)",
          ts="2026-12-06T00:01:00Z"):
    return json.dumps({"ts": ts, "job_id": job, "task": f"{job}/{task}", "msg": msg,
                       "gpu_seconds": held, "gpu_busy_seconds": busy,
                       "phases": "; ".join(f"{n} {ms} ms" for n, ms in phases)})


def _run_a():
    return [_submitted("job-a1", "10_relu"), _submitted("job-a2", "20_sum"),
            _submitted("job-a3", "99_only_in_a"),
            _task("job-a1", "baseline", 4.0, 2.0, [("baselines", 2000), ("gate", 900)]),
            _task("job-a2", "baseline", 2.0, 1.0, [("baselines", 1000), ("gate", 500)]),
            _task("job-a2", "r1/w0", 1.0, 0.5, [("gate", 400)]),
            _task("job-a3", "baseline", 9.0, 1.0, [("baselines", 8000)]),
            "not json"]


def _run_b():
    # Other job ids, the same problems; 10_relu's baseline is twice as long.
    return [_submitted("job-b7", "20_sum"), _submitted("job-b8", "10_relu"),
            _task("job-b8", "baseline", 8.0, 2.0, [("baselines", 6000), ("gate", 900)]),
            _task("job-b7", "baseline", 2.0, 1.0, [("baselines", 1000), ("gate", 500)]),
            _task("job-b7", "profile", 1.0, 0.2, [], msg="profiled: ok")]


def test_tasks_are_matched_by_problem_and_kind(cr):
    a, b = cr.by_problem(_run_a()), cr.by_problem(_run_b())
    assert set(a) == {("10_relu", "baseline"), ("20_sum", "baseline"),
                      ("20_sum", "candidate"), ("99_only_in_a", "baseline")}
    res = cr.compare(a, b, top=5)
    assert set(res) == {"baseline"}  # the candidate and the profile ran in one run only
    base = res["baseline"]
    assert base["pairs"] == 2
    assert base["held"] == [3.0, 5.0] and base["busy"] == [1.5, 1.5]
    phases = {n: (va, vb) for n, va, vb in base["phases"]}
    assert phases["baselines"] == (1.5, 3.5) and phases["gate"] == (0.7, 0.7)
    assert base["phases"][0][0] == "baselines"  # the longest first


def test_per_problem_rows_and_the_command_line(cr, tmp_path, capsys):
    rows = cr.per_problem(cr.by_problem(_run_a()), cr.by_problem(_run_b()), "baselines")
    assert rows == [("10_relu", "baseline", 4.0, 8.0, 2.0, 6.0),
                    ("20_sum", "baseline", 2.0, 2.0, 1.0, 1.0)]
    paths = []
    for name, lines in (("a.log.gz", _run_a()), ("b.log", _run_b())):
        p = tmp_path / name
        opener = gzip.open if name.endswith(".gz") else open
        with opener(p, "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        paths.append(str(p))
    assert cr.main(paths + ["--per-problem", "baselines"]) == 0
    out = capsys.readouterr().out
    assert "baseline: 2 problems in both; held 3.00 s -> 5.00 s" in out
    assert "10_relu" in out and "99_only_in_a" not in out


def test_no_common_problem_is_said(cr, tmp_path, capsys):
    p = tmp_path / "a.log"
    p.write_text("\n".join(_run_a()) + "\n")
    q = tmp_path / "b.log"
    q.write_text(_submitted("job-z", "77_other") + "\n")
    assert cr.main([str(p), str(q)]) == 1
    assert "no problem ran in both logs" in capsys.readouterr().out
