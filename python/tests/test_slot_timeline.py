"""tests/gpu/slot_timeline.py, the slot's account from a worker's log, on lines recorded
on the H200 (tests/fixtures/kagentd) and on hand-made lines with slot_wait_seconds."""

import json
import os

import pytest

from conftest import gpu_script

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(REPO, "tests", "fixtures", "kagentd", "h200_suite_slot_lines.jsonl")


@pytest.fixture(scope="module")
def st():
    return gpu_script("slot_timeline")


def test_recorded_lines_give_each_kind_and_the_occupancy(st):
    with open(FIXTURE, encoding="utf-8") as f:
        tasks = st.read_tasks(f)
    assert len(tasks) == 14
    assert {t["kind"] for t in tasks} <= set(st.KINDS)
    assert [t["start"] for t in tasks] == sorted(t["start"] for t in tasks)
    s = st.summarize(tasks, window=10)
    held = sum(t["held"] for t in tasks)
    assert s["held_s"] == round(held, 1)
    assert 0 < s["occupancy"] <= 1.0
    # Each window's share is within [0, 1] and the windows cover the span.
    assert all(0 <= w <= 1.0 for w in s["windows"])
    assert len(s["windows"]) == -(-s["span_s"] // 10)
    base = s["kinds"]["baseline"]
    assert base["count"] == sum(1 for t in tasks if t["kind"] == "baseline")
    assert base["wait_mean"] is None          # recorded before slot_wait_seconds
    assert "in_flight_mean" not in s


def _line(ts, task, held, prepare, wait, msg="measured: VERDICT_CORRECT 1 ms (prepared)"):
    return json.dumps({"ts": ts, "task": task, "msg": msg, "gpu_seconds": held,
                       "gpu_busy_seconds": held / 2, "prepare_seconds": prepare,
                       "slot_wait_seconds": wait})


def test_with_slot_waits_the_free_slot_while_tasks_prepare_is_counted(st):
    # Task a: prepares 0-4 s, holds 4-6 s. Task b: prepares 1-8 s, holds 8-9 s.
    # The slot is free while b prepares from 6 s to 8 s: 2 of the 9 one-second samples.
    lines = [_line("2026-12-05T00:00:06Z", "j/baseline", 2.0, 4.0, 0.0),
             _line("2026-12-05T00:00:09Z", "j/r1/w0", 1.0, 7.0, 0.0),
             "not json", json.dumps({"msg": "round generated", "ts": "2026-12-05T00:00:07Z"})]
    tasks = st.read_tasks(lines)
    assert [t["kind"] for t in tasks] == ["baseline", "candidate"]
    s = st.summarize(tasks, window=30)
    assert s["span_s"] == 5.0 and s["held_s"] == 3.0 and s["occupancy"] == 0.6
    # Sampled from the first grant (4 s) to the last release (9 s): 4, 5, 6, 7, 8.
    assert s["slot_free_while_tasks_prepared"] == 0.4
    assert s["in_flight_mean"] == 1.4  # 2, 2, 1, 1, 1
    assert s["kinds"]["candidate"]["wait_mean"] == 0.0
    assert s["kinds"]["baseline"]["busy_share"] == 0.5
    # The run's busy share: the tasks' busy seconds over their held seconds.
    assert s["busy_s"] == round(sum(t["busy"] for t in tasks), 1)
    assert s["busy_share"] == round(sum(t["busy"] for t in tasks) / 3.0, 2)


def test_a_task_answered_at_prepare_holds_no_slot(st):
    lines = [_line("2026-12-05T00:00:06Z", "j/r1/w0", 0, 4.0, 0.0,
                   msg="measured: VERDICT_COMPILE_ERROR 0 ms (at prepare, without the GPU)")]
    assert st.read_tasks(lines) == []
    assert st.summarize([]) == {"tasks": 0}


def test_phases_per_kind_and_the_held_seconds_outside_the_harness(st):
    assert st.parse_phases("gate 612 ms; timing 401 ms; odd; x 1.5 ms") == \
        {"gate": 0.612, "timing": 0.401, "x": 0.0015}
    assert st.parse_phases(None) == {}

    def with_phases(ts, task, held, phases, msg="measured: VERDICT_CORRECT 1 ms (prepared)"):
        d = json.loads(_line(ts, task, held, 1.0, 0.0, msg))
        d["phases"] = phases
        return json.dumps(d)

    lines = [with_phases("2026-12-05T00:00:02Z", "j/r1/w0", 2.0,
                         "supervisor: the whole request 1800 ms; gate 900 ms; timing 700 ms"),
             with_phases("2026-12-05T00:00:05Z", "j/r1/w1", 1.0,
                         "supervisor: the whole request 600 ms; gate 300 ms; timing 200 ms"),
             with_phases("2026-12-05T00:00:09Z", "", 3.0,
                         "profile: the GPU held, in the harness 2500 ms; waiting for the GPU "
                         "9000 ms", msg="profiled: ok"),
             with_phases("2026-12-05T00:00:12Z", "j/baseline", 2.0, "gate 500 ms")]
    s = st.summarize(st.read_tasks(lines), top_phases=2)
    cand = s["kinds"]["candidate"]
    # Per task: the whole request 1.2 s, the gate 0.6 s (top 2, longest first).
    assert cand["phases_s"] == [["supervisor: the whole request", 1.2], ["gate", 0.6]]
    # Held 2.0 and 1.0 s, of which the harness accounts for 1.8 and 0.6 s.
    assert cand["outside_harness_s"] == pytest.approx(0.3)
    assert s["kinds"]["profile"]["outside_harness_s"] == pytest.approx(0.5)
    assert s["kinds"]["baseline"]["outside_harness_s"] is None  # a line of before session 25


def test_a_profiles_held_time_as_the_worker_split_it_shows_as_phases(st):
    d = json.loads(_line("2026-12-07T00:00:09Z", "", 7.3, 0.15, 0.0, "profiled: ok"))
    d.update({"phases": "profile: the GPU held, in the harness 1547 ms",
              "grant_to_go_seconds": 0.002, "gpu_part_seconds": 1.6,
              "slot_release_seconds": 5.7})
    s = st.summarize(st.read_tasks([json.dumps(d)]), top_phases=4)
    assert s["kinds"]["profile"]["phases_s"] == [
        ["worker: the slot's release", 5.7], ["worker: go written to done seen", 1.6],
        ["profile: the GPU held, in the harness", 1.547],
        ["worker: slot granted to go written", 0.002]]
