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


class _PhantomChild:
    """Answers the compile command as a child would; `phantom_ok` says whether it can
    make phantom stand-ins."""

    def __init__(self, phantom_ok):
        self.phantom_ok = phantom_ok
        self.sent = []
        self.log = None

    def remaining(self):
        return 600.0

    def send(self, msg):
        self.sent.append(msg)

    def recv(self, timeout=None, phase=""):
        if self.sent[-1].get("phantom") and not self.phantom_ok:
            return {"ok": True, "clean": False, "ops": 0, "phantom_error": "cuMemCreate failed"}
        return {"ok": True, "clean": True, "ops": 3, "seconds": 0.1,
                **({"phantom": {"reserved_mb": 8192, "materialized_mb": 0}}
                   if self.sent[-1].get("phantom") else {})}

    def checked(self, reply, what):
        return reply


def _gpu_supervisor(log, room):
    sup = Supervisor(P.Request({"problem_source": "x = 1", "device": "cpu",
                                "call_timeout_s": 1}), log,
                     env=Env("cpu", None, None, log, room))
    sup.device = "cuda"  # the GPU path, without a GPU
    sup.job = _Job()
    return sup


def test_on_the_gpu_a_dry_run_takes_phantom_stand_ins_and_no_room():
    log = P.Log()
    room = DryRunRoom(10 * GIB)
    assert room.take(6 * GIB, 0)             # no room for another 8 GiB of real stand-ins
    child = _PhantomChild(phantom_ok=True)
    got = _gpu_supervisor(log, room).compile_dry_run(child, "triton")
    assert got["clean"] and [m.get("phantom") for m in child.sent] == [True]
    assert "phantom stand-ins (8192 MiB reserved, 0 MiB kept" in log.tail()
    assert room.used == 6 * GIB and room.running == 1   # the room was not touched


def test_without_phantom_stand_ins_the_dry_run_falls_back_to_real_ones_in_the_room():
    log = P.Log()
    room = DryRunRoom(10 * GIB)
    child = _PhantomChild(phantom_ok=False)
    got = _gpu_supervisor(log, room).compile_dry_run(child, "triton")
    assert got["clean"] and [m.get("phantom") for m in child.sent] == [True, None]
    assert "no phantom stand-ins here (cuMemCreate failed): real ones" in log.tail()
    assert room.used == 0 and room.running == 0         # taken for the real run, given back


def test_a_dry_run_whose_kept_phantoms_could_not_be_made_real_fails_on_the_harness():
    # The candidate's process would alias memory in its real calls: prepare must not hand
    # it on (a harness failure: measure then prepares in the slot), never a verdict.
    import pytest

    class Unsafe(_PhantomChild):
        def recv(self, timeout=None, phase=""):
            return {"ok": True, "clean": True, "ops": 2, "phantom_unsafe": "VmmError: no memory",
                    "phantom": {"reserved_mb": 8, "materialized_mb": 0}}

    with pytest.raises(RuntimeError, match="could not be made real"):
        _gpu_supervisor(P.Log(), DryRunRoom(10 * GIB)).compile_dry_run(Unsafe(True), "triton")
