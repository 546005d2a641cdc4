"""prepare.DryRunRoom: the compile dry runs' device memory, shared by one server's
preparations (docs/harness.md, "The harness server")."""

import threading
import time

from kagent_harness import protocol as P
from kagent_harness.measure import Env, Supervisor
from kagent_harness.prepare import DryRunRoom, dry_run_room_limit

GIB = 1 << 30


def test_dry_runs_share_the_room_and_one_alone_always_fits():
    room = DryRunRoom(10 * GIB)
    assert room.take(6 * GIB, 0)
    assert not room.take(6 * GIB, 0.05)      # 12 GiB in flight would pass the limit
    assert room.take(4 * GIB, 0)             # 10 GiB: at the limit
    room.give(6 * GIB)
    room.give(4 * GIB)
    assert room.used == 0 and room.running == 0
    assert room.take(25 * GIB, 0)            # larger than the limit, but alone
    room.give(25 * GIB)


def test_a_waiting_dry_run_goes_in_when_room_is_given_back():
    room = DryRunRoom(10 * GIB)
    assert room.take(8 * GIB, 0)
    got = []
    t = threading.Thread(target=lambda: got.append(room.take(8 * GIB, 30)))
    t.start()
    time.sleep(0.2)
    assert not got                           # still waiting
    room.give(8 * GIB)
    t.join(10)
    assert got == [True] and room.used == 8 * GIB


def test_no_limit_on_the_cpu():
    room = DryRunRoom(dry_run_room_limit("cpu"))
    assert room.limit == 0
    assert room.take(100 * GIB, 0) and room.take(100 * GIB, 0)


class _Child:
    def remaining(self):
        return 600.0

    def send(self, msg):  # the dry run must not start without room
        raise AssertionError("compile sent without room")


class _Job:
    input_spec = [{"shape": [4], "dtype": "float32"}]
    trial_bytes = 8 * GIB


def test_a_dry_run_without_room_is_skipped_and_says_so():
    log = P.Log()
    room = DryRunRoom(10 * GIB)
    assert room.take(6 * GIB, 0)             # another preparation's dry run
    sup = Supervisor(P.Request({"problem_source": "x = 1", "device": "cpu",
                                "call_timeout_s": 1}), log,
                     env=Env("cpu", None, None, log, room))
    sup.job = _Job()
    assert sup.compile_dry_run(_Child(), "triton") is None
    assert "compile dry run skipped: no device memory for its 8192 MiB" in log.tail()
    assert room.used == 6 * GIB and room.running == 1
