"""What the gate holds on the device, trial by trial, and what it says when a problem does
not fit. There is no GPU here: the device-memory figures (torch.cuda.mem_get_info,
memory_reserved/allocated, empty_cache) and the shared-memory allocator are the doubles;
the gate itself runs for real on the CPU where it can."""

import types
import weakref

import pytest
import torch

from conftest import measure, read

GIB = 1 << 30


class FakeDevice:
    """torch.cuda's memory figures for a device of `total` bytes: what this process
    allocates and reserves is set by the test; empty_cache gives the reserved blocks
    back (counted)."""

    def __init__(self, monkeypatch, total, free, allocated=0, reserved=0):
        self.total, self.free = total, free
        self.allocated, self.reserved = allocated, reserved
        self.emptied = 0
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (self.free, self.total))
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a: self.allocated)
        monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: self.reserved)
        monkeypatch.setattr(torch.cuda, "empty_cache", self.empty_cache)
        monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)

    def empty_cache(self):
        self.emptied += 1
        self.free += self.reserved - self.allocated
        self.reserved = self.allocated


def test_a_trials_tensors_are_gone_before_the_next_trials_call(monkeypatch):
    # On an 80 GB H100 a 6 GiB tanh failed its fresh trial with an OOM because the
    # previous trial's reference outputs (kept for the "previous answer" diagnosis) and
    # the candidate's outputs were still alive while the next call ran. Every tensor of a
    # trial that the job does not keep must be gone when the next trial's inputs go out.
    from kagent_harness import measure as M
    seen = []     # weak references to the tensors of the trials before this one
    checked = []

    real_compare = M.compare
    real_inputs_field = M.Supervisor.inputs_field

    def compare(ref, got, atol, rtol):
        seen.extend(weakref.ref(t) for t in list(ref) + list(got))
        return real_compare(ref, got, atol, rtol)

    def inputs_field(self, inputs, tag):
        alive = [r for r in seen if r() is not None]
        checked.append((tag, len(alive)))
        seen.extend(weakref.ref(t) for t in inputs if isinstance(t, torch.Tensor))
        return real_inputs_field(self, inputs, tag)

    monkeypatch.setattr(M, "compare", compare)
    monkeypatch.setattr(M.Supervisor, "inputs_field", inputs_field)
    r = measure("problem_relu_add.py", "cand_relu_add_good.py", time_candidate=False)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    assert len(checked) == r["correctness"]["trials"] == 11
    assert all(n == 0 for _, n in checked), checked


def test_the_references_freed_blocks_go_back_before_the_candidates_call(monkeypatch):
    # On a trial whose reference runs first, its private copy of the inputs and its raw
    # outputs are freed when it returns; on a large problem those blocks go back to the
    # driver (release_between_trials) before the receive buffers are made and the call
    # is sent, not only at the next trial.
    from kagent_harness import measure as M
    from kagent_harness import trials as T
    events = []
    real_ref_of, real_out_field = T.JobTrials.ref_of, M.Supervisor.out_field

    def ref_of(self, trial, inputs):
        events.append("ref")
        return real_ref_of(self, trial, inputs)

    def out_field(self, poison):
        events.append("call")
        return real_out_field(self, poison)

    monkeypatch.setattr(T.JobTrials, "ref_of", ref_of)
    monkeypatch.setattr(M.Supervisor, "out_field", out_field)
    monkeypatch.setattr(M.Supervisor, "release_between_trials",
                        lambda self: events.append("release"))
    r = measure("problem_relu_add.py", "cand_relu_add_good.py", time_candidate=False)
    assert r["verdict"] == "CORRECT", r["correctness"]["reason"] + r["log"]
    calls, ref_first = 0, 0
    since = []
    for e in events:
        if e == "call":
            calls += 1
            if "ref" in since:
                ref_first += 1
                assert "release" in since[since.index("ref"):], events
            since = []
        else:
            since.append(e)
    assert calls == r["correctness"]["trials"] and 0 < ref_first < calls, events


def _gpu_supervisor(trial_bytes, use_ipc=True):
    from kagent_harness.measure import Supervisor
    sup = Supervisor.__new__(Supervisor)
    sup.device = "cuda"
    sup.use_ipc = use_ipc
    sup.job = types.SimpleNamespace(trial_bytes=trial_bytes)
    return sup


def test_a_large_trials_cached_blocks_go_back_to_the_driver(monkeypatch):
    # 12 GiB trials on an 80 GB device: what the supervisor's allocator keeps after a
    # trial is given back before the next one (the shared buffers and the candidate's
    # process cannot use it). Small trials keep their cache (no per-trial cost).
    dev = FakeDevice(monkeypatch, total=80 * GIB, free=10 * GIB, allocated=6 * GIB,
                     reserved=40 * GIB)
    _gpu_supervisor(12 * GIB).release_between_trials()
    assert dev.emptied == 1 and dev.free == 44 * GIB
    dev.reserved = 20 * GIB
    _gpu_supervisor(1 * GIB).release_between_trials()
    assert dev.emptied == 1 and dev.reserved == 20 * GIB


def test_a_trial_that_cannot_fit_the_device_is_the_harness_limit(monkeypatch):
    # 6 GiB in, 6 GiB out: at least 36 GiB in the supervisor and 24 GiB in the candidate's
    # process. That fits 80 GB; on a 40 GB device no candidate could pass, and the verdict
    # says it is the harness's limit (INFRA_ERROR: the measurement runs again elsewhere).
    from kagent_harness import protocol as P
    from kagent_harness.transfer import Rejection
    big = [torch.empty(0)]
    monkeypatch.setattr("kagent_harness.measure.nbytes", lambda xs: 6 * GIB)
    FakeDevice(monkeypatch, total=80 * GIB, free=70 * GIB)
    _gpu_supervisor(12 * GIB).check_working_set(big, big)
    FakeDevice(monkeypatch, total=40 * GIB, free=38 * GIB)
    with pytest.raises(Rejection) as e:
        _gpu_supervisor(12 * GIB).check_working_set(big, big)
    assert e.value.verdict == P.INFRA_ERROR
    assert "the harness's limit" in e.value.reason and "36.0 GiB" in e.value.reason


def test_a_candidates_oom_beside_a_full_supervisor_is_the_harness_limit(monkeypatch):
    # The candidate's process ran out of memory in a gate call. When what the supervisor
    # held left it less than its floor (2 x 12 GiB here), the harness is to blame; when
    # the supervisor left room, the OOM is the candidate's, with the figures in its reason.
    # `free` is the device's free memory once the candidate's process has ended.
    from kagent_harness import protocol as P
    from kagent_harness.sandbox import ChildFailure
    monkeypatch.setattr("kagent_harness.measure.nbytes", lambda xs: 6 * GIB)
    x = [torch.empty(0)]
    oom = ChildFailure(P.OOM, "gate trial fresh: OutOfMemoryError during the gate's call")
    FakeDevice(monkeypatch, total=80 * GIB, free=24 * GIB, allocated=30 * GIB,
               reserved=44 * GIB)
    f = _gpu_supervisor(12 * GIB).gate_oom(oom, x, x)
    assert f.verdict == P.INFRA_ERROR and "the harness's limit" in f.reason
    assert "56.0 GiB and other processes 0.0 GiB" in f.reason
    assert "OutOfMemoryError" in f.reason
    FakeDevice(monkeypatch, total=80 * GIB, free=50 * GIB, allocated=18 * GIB,
               reserved=18 * GIB)
    f = _gpu_supervisor(12 * GIB).gate_oom(oom, x, x)
    assert f.verdict == P.OOM and "30.0 GiB and other processes 0.0 GiB of the device's " \
        "80.0 GiB" in f.reason
    crash = ChildFailure(P.CRASH, "illegal memory access")
    assert _gpu_supervisor(12 * GIB).gate_oom(crash, x, x) is crash


def _with_cache(sup):
    """sup with a log and a trial cache whose shed_idle is counted (3 MiB each)."""
    from kagent_harness import protocol as P
    shed = []
    sup.log = P.Log()
    sup.env = types.SimpleNamespace(cache=types.SimpleNamespace(
        shed_idle=lambda: shed.append(1) or (3 << 20)))
    return sup, shed


def test_other_jobs_kept_trials_go_when_a_trial_needs_their_room(monkeypatch):
    # Session 36's H100 run: 6 GiB activations (12 GiB trials, a 24 GiB floor in the
    # candidate's process) failed all three attempts with the supervisor holding 46-59
    # GiB, other jobs' kept trials among it. Before the candidate's call, the device must
    # spare its floor, this process's cached blocks counted; else the idle jobs' kept
    # trials go. With room to spare nothing is dropped.
    from kagent_harness import protocol as P
    from kagent_harness.sandbox import ChildFailure
    monkeypatch.setattr("kagent_harness.measure.nbytes", lambda xs: 6 * GIB)
    x = [torch.empty(0)]
    FakeDevice(monkeypatch, total=80 * GIB, free=20 * GIB, allocated=30 * GIB,
               reserved=33 * GIB)
    sup, shed = _with_cache(_gpu_supervisor(12 * GIB))
    sup.check_working_set(x, x)      # 20 + 3 cached < 24 + 1: shed
    assert shed == [1]
    assert "needs 24.0 GiB for this trial and 23.0 GiB are free: dropped 3 MiB" in \
        sup.log.tail(""), sup.log.tail("")
    FakeDevice(monkeypatch, total=80 * GIB, free=30 * GIB, allocated=30 * GIB,
               reserved=30 * GIB)
    sup, shed = _with_cache(_gpu_supervisor(12 * GIB))
    sup.check_working_set(x, x)
    assert shed == []
    # A candidate's OOM judged the harness's limit drops them too, for the worker's retry;
    # its own OOM does not.
    oom = ChildFailure(P.OOM, "gate trial 0: OutOfMemoryError during the gate's call")
    FakeDevice(monkeypatch, total=80 * GIB, free=24 * GIB, allocated=30 * GIB,
               reserved=44 * GIB)
    sup, shed = _with_cache(_gpu_supervisor(12 * GIB))
    assert sup.gate_oom(oom, x, x).verdict == P.INFRA_ERROR and shed == [1]
    FakeDevice(monkeypatch, total=80 * GIB, free=50 * GIB, allocated=18 * GIB,
               reserved=18 * GIB)
    sup, shed = _with_cache(_gpu_supervisor(12 * GIB))
    assert sup.gate_oom(oom, x, x).verdict == P.OOM and shed == []


def test_a_candidates_oom_beside_other_processes_is_the_harness_limit(monkeypatch):
    # Seen on the H100 with 16 tasks in flight: the supervisor held 45 GiB, prepared
    # candidates' processes 17 GiB, and a starting kernel that needs 16 GiB got the OOM.
    # The candidate's process is ended before the device is read, and the driver given
    # time to take its memory back.
    from kagent_harness import protocol as P
    from kagent_harness.sandbox import ChildFailure
    monkeypatch.setattr("kagent_harness.measure.nbytes", lambda xs: 6 * GIB)
    x = [torch.empty(0)]
    oom = ChildFailure(P.OOM, "gate trial 0: OutOfMemoryError during the gate's call")
    dev = FakeDevice(monkeypatch, total=80 * GIB, free=2 * GIB, allocated=18 * GIB,
                     reserved=18 * GIB)

    class Child:  # the candidate's process, holding 14 GiB until it is killed
        killed = False

        def kill(self):
            Child.killed = True

        class proc:
            @staticmethod
            def wait(timeout=None):
                dev.free = 20 * GIB  # its memory back; 30 GiB are other processes'

    sup = _gpu_supervisor(12 * GIB)
    sup.child = Child()
    f = sup.gate_oom(oom, x, x)
    assert Child.killed
    assert f.verdict == P.INFRA_ERROR, f.reason
    assert "the supervisor held 30.0 GiB and other processes 30.0 GiB" in f.reason


def test_an_oom_that_would_have_fit_but_for_other_processes_is_the_harness_limit(monkeypatch):
    # Seen on the H100 (2026-12-06): a starting kernel whose floor is 8 GiB had 10.61 GiB
    # in use and tried 1 GiB more, beside a supervisor holding 42.6 GiB and other
    # processes 25.2 GiB of 79.2: its floor "fitted", so it was judged the candidate's
    # OOM and its job failed. What it asked for would have fit without the others.
    from kagent_harness import protocol as P
    from kagent_harness.sandbox import ChildFailure
    monkeypatch.setattr("kagent_harness.measure.nbytes", lambda xs: 2 * GIB)
    x = [torch.empty(0)]
    text = ("gate trial fresh: OutOfMemoryError during the gate's call of forward: CUDA out "
            "of memory. Tried to allocate 1024.00 MiB. GPU 0 has a total capacity of 79.18 "
            "GiB of which 867.25 MiB is free. Including non-PyTorch memory, this process has "
            "10.61 GiB memory in use.")
    oom = ChildFailure(P.OOM, text)

    def judged(others_gib, asked_text=text):
        # `free`: what the device has once the candidate's process has ended.
        FakeDevice(monkeypatch, total=80 * GIB, free=(80 - 42 - others_gib) * GIB,
                   allocated=38 * GIB, reserved=38 * GIB)
        return _gpu_supervisor(4 * GIB).gate_oom(ChildFailure(P.OOM, asked_text), x, x)

    f = judged(26)            # 42 held (38 + 4 shared) + 11.6 asked + 1 fits 80; + 26 not
    assert f.verdict == P.INFRA_ERROR and "asked for 11.6 GiB" in f.reason, f.reason
    f = judged(0)             # nobody else: the candidate's own OOM
    assert f.verdict == P.OOM and "asked for 11.6 GiB" in f.reason
    f = judged(1)             # others that did not make the difference: still its own
    assert f.verdict == P.OOM
    huge = text.replace("1024.00 MiB", "200.00 GiB")
    f = judged(25, huge)      # 200 GiB would not fit any device: the candidate's
    assert f.verdict == P.OOM
    assert oom.verdict == P.OOM


def test_a_shared_buffer_is_tried_again_once_torchs_cache_is_given_back(monkeypatch):
    # A CUDA VMM allocation is outside torch's caching allocator: when the driver has no
    # room because torch keeps freed blocks cached, the cache is given back and the
    # allocation tried once more (it fell back to a file, and the candidate's process
    # then needed a device copy of its 6 GiB output on top).
    from kagent_harness import vmm
    from kagent_harness.transfer import TransferMixin
    dev = FakeDevice(monkeypatch, total=80 * GIB, free=1 * GIB, reserved=30 * GIB)
    made = []

    class Buffer:
        """cuMemCreate on a device with 1 GiB free: a 2 GiB allocation fits only once
        torch's cached blocks are back."""

        def __init__(self, size):
            if dev.free < 2 * GIB:
                raise vmm.VmmError("cuMemCreate failed: CUresult 2 "
                                   "(CUDA_ERROR_OUT_OF_MEMORY)")
            self.size = size
            self.data = torch.zeros(size, dtype=torch.uint8)
            made.append(size)

        def view(self, offset, shape, stride, dtype):
            n = int(torch.tensor(shape).prod()) * torch.empty((), dtype=dtype).element_size()
            return self.data[offset:offset + n].view(dtype).as_strided(shape, stride)

    monkeypatch.setattr(vmm, "SharedBuffer", Buffer)
    monkeypatch.setattr(vmm, "send_buffer", lambda sock, buf: "token")
    host = types.SimpleNamespace(child=types.SimpleNamespace(fd_channel=None))
    x = torch.arange(8, dtype=torch.float32)
    here, field = TransferMixin._share(host, [x, 3])
    assert dev.emptied == 1 and len(made) == 1
    assert torch.equal(here[0], x) and here[1] == 3 and field


def test_outputs_through_a_file_make_no_device_copy():
    # Without receive buffers the candidate's process writes its outputs to a file: a
    # device output goes straight to the host (a device copy first needed as much again
    # of the device: the 6 GiB tanh's OOM).
    import os
    import tempfile
    from kagent_harness import child
    device_copies = []

    class DeviceOutput:
        """A candidate's output on the GPU (the seam: no GPU here)."""
        is_cuda = True

        def __init__(self, values):
            self.values = values

        def detach(self):
            return self

        def clone(self):
            device_copies.append(self)
            return DeviceOutput(self.values.clone())

        def cpu(self):
            return self.values.clone()

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.pt")
        y = torch.arange(6, dtype=torch.float32)
        z = torch.ones(2)  # an output on the host is copied there
        assert child._hand_back([DeviceOutput(y), z], {"out": path}, torch) == "file"
        got = torch.load(path, weights_only=True)
    assert device_copies == []
    assert torch.equal(got[0], y) and torch.equal(got[1], z)


def test_kept_trials_go_once_a_trial_is_known_too_large_for_them(monkeypatch):
    # The timing inputs are kept for the op signature before any reference output exists
    # (a trial's size is then its inputs alone); once the reference's outputs make the
    # trial too large for the room a measurement needs, they are dropped and their bytes
    # given back to the cache.
    from kagent_harness import loader
    from kagent_harness import protocol as P
    from kagent_harness.trials import TrialCache
    cache = TrialCache(1 << 40, P.Log())
    req = P.Request({"problem_source": read("problem_relu_add.py"), "device": "cpu"})
    jt, _ = cache.get(req, "job-m", "cpu", P.Log())
    jt.load()
    jt.device = "cuda"  # memory figures of a GPU (FakeDevice), tensors on the CPU
    monkeypatch.setattr(jt, "make_inputs", lambda seed: loader.make_inputs(
        jt.get_inputs, seed, "cpu", on_device=False))
    s = 16 * 64 * 4  # one input's bytes; two inputs, one output
    # A quarter of the device is 25 s: 26 s free after the inputs (2 s) keeps them
    # (10 x 2 s < 25 s); a 3 s trial needs 30 s.
    FakeDevice(monkeypatch, total=100 * s, free=28 * s)
    t = jt.timing_trial()
    inputs = jt.inputs_of(t)
    assert t.inputs is not None and jt.kept_bytes == 2 * s == cache.used
    jt.ref_of(t, inputs)
    assert jt.trial_bytes == 3 * s
    assert t.inputs is None and t.ref_out is None
    assert jt.kept_bytes == 0 and cache.used == 0
    cache.done(jt)
    cache.close()


def test_a_fresh_trials_inputs_are_never_kept():
    # One candidate's own trial: its inputs are not the job's to keep (they were, and
    # their bytes stayed counted in the cache after the trial was gone, one set per
    # candidate, until the cache had no room left for the job's own trials).
    from kagent_harness import protocol as P
    from kagent_harness.trials import TrialCache
    cache = TrialCache(1 << 30, P.Log())
    req = P.Request({"problem_source": read("problem_relu_add.py"), "device": "cpu"})
    jt, _ = cache.get(req, "job-f", "cpu", P.Log())
    jt.load()
    fresh = jt.fresh_trial()
    jt.ref_of(fresh, jt.inputs_of(fresh))
    assert fresh.inputs is None and fresh.ref_out is None
    assert jt.kept_bytes == 0 and cache.used == 0
    seeded = jt.trials[0]
    jt.inputs_of(seeded)
    assert seeded.inputs is not None and cache.used == jt.kept_bytes > 0
    cache.done(jt)
    cache.close()


def test_out_of_device_memory_in_the_supervisor_drops_idle_jobs_trials(monkeypatch):
    # The supervisor's own work ran out of device memory (40_kl_div_fp32 on the H100, with
    # other processes holding 37 GiB): INFRA_ERROR, and the kept trials of every job no
    # request is using go, so that the worker's retry has room; a job in use keeps its own.
    import torch
    from conftest import measure
    from kagent_harness import measure as M
    from kagent_harness import protocol as P
    from kagent_harness.trials import TrialCache
    cache = TrialCache(1 << 30, P.Log())
    req = P.Request({"problem_source": read("problem_relu_add.py"), "device": "cpu"})
    idle, _ = cache.get(req, "job-idle", "cpu", P.Log())
    idle.load()
    idle.inputs_of(idle.trials[0])
    busy, _ = cache.get(req, "job-busy", "cpu", P.Log())
    busy.load()
    busy.inputs_of(busy.trials[0])
    cache.done(idle)
    assert idle.kept_bytes > 0 and busy.kept_bytes > 0
    kept_busy = busy.kept_bytes
    assert cache.shed_idle() > 0
    assert idle.kept_bytes == 0 and busy.kept_bytes == kept_busy == cache.used
    cache.done(busy)
    cache.close()

    shed = []
    monkeypatch.setattr(TrialCache, "shed_idle", lambda self: shed.append(1) or (3 << 20))

    def oom(self, ahead=False):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    monkeypatch.setattr(M.Supervisor, "time_baselines", oom)
    r = measure("problem_relu_add.py", "cand_relu_add_good.py", baselines=True)
    assert r["verdict"] == "INFRA_ERROR" and "OutOfMemoryError" in r["correctness"]["reason"]
    assert shed == [1] and "dropped 3 MiB of idle jobs' kept trials" in r["log"], r["log"][-800:]


def test_the_float64_reference_never_writes_the_kept_inputs():
    # ref64 widens the floating inputs into copies and clones the others: a reference
    # that writes its inputs in place leaves the job's kept trial inputs as they were,
    # float64 ones included (widening those would hand back the same tensor).
    import torch
    from kagent_harness import protocol as P
    from kagent_harness.trials import TrialCache
    cache = TrialCache(1 << 40, P.Log())
    req = P.Request({"problem_source": read("problem_scale_inplace_f64.py"), "device": "cpu"})
    jt, _ = cache.get(req, "job-f64", "cpu", P.Log())
    jt.load()
    t = jt.timing_trial()
    inputs = jt.inputs_of(t)
    before = [x.clone() for x in inputs]
    out = jt.ref64(inputs)
    assert out is not None and out[0].dtype == torch.float64
    assert torch.equal(out[0], before[0] * 3.0)
    assert all(torch.equal(a, b) for a, b in zip(inputs, before))
    cache.done(jt)
    cache.close()

