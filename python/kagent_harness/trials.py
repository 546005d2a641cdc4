"""A job's trial set: the reference built once, its trial inputs and reference outputs
made once and kept on the device while the job has candidates in flight.

The supervisor (never the candidate) owns everything here. A JobTrials holds
  - the problem module, the reference Model built under the job's build seed, the init
    inputs and the reference's state_dict as files for the candidates' processes;
  - the gate's trial plan: `trials` seeded trials, the wide-distribution variants and
    the timing inputs, each with a seed drawn from os.urandom and never sent anywhere;
  - per trial, materialised on first use: the inputs (generated on the device from the
    seed) and the reference's outputs (the reference run on a private copy of them),
    kept when the cache's byte budget allows, else made again on the next use from the
    same seed (the same values: generation is seeded);
  - the facts learnt from the reference once: whether it mutates or aliases its inputs,
    which wide trials it is not finite on, its op signature, its torch.compile'd form.
Every candidate is gated on the job's trials plus one trial with a fresh seed of its
own (TrialSet.fresh_trial), so one that memorises the answers it saw gains nothing.

TrialCache bounds the bytes kept over all jobs and evicts the least recently used job
that no request is using. Thread-safe: JobTrials.lock serialises the materialisation of
one job's tensors; the cache has its own lock.
"""

import collections
import hashlib
import math
import random
import shutil
import threading

import torch

from kagent_harness import loader
from kagent_harness.compare import all_finite, overlaps
from kagent_harness.sandbox import make_workdir

WIDE_VARIANTS = ("neg", "scale10", "randn", "const")
# Device memory kept free beside the kept trials, in units of one trial's inputs plus
# outputs (see JobTrials._room_for).
ROOM_FACTOR = 10


def sysrand_seed(rng):
    return rng.randrange(1, 2**62)


def nbytes(values):
    return sum(x.numel() * x.element_size() for x in values if isinstance(x, torch.Tensor))


def is_degenerate(inputs):
    """True when a floating input with more than one element is constant."""
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel() > 1:
            if bool((x == x.flatten()[0]).all()):
                return True
    return False


def variant(inputs, kind, seed):
    """A wide-distribution transform of the floating inputs (integer and bool inputs
    unchanged): neg (-x), scale10 (x10), randn (standard normal), const (0.75)."""
    out = []
    with loader.seeded(seed):
        for x in inputs:
            if isinstance(x, torch.Tensor) and x.is_floating_point():
                if kind == "neg":
                    x = -x
                elif kind == "scale10":
                    x = x * 10
                elif kind == "randn":
                    x = torch.randn_like(x)
                elif kind == "const":
                    x = torch.full_like(x, 0.75)
            out.append(x)
    return out


def clone_inputs(inputs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def job_key(req, job_id):
    """What makes two requests share a trial set: the job, the problem's source, its
    shapes and the gate's plan. A request without a job id gets a key of its own."""
    h = hashlib.sha256()
    for part in (req.problem_source or "", req.get_inputs_source or "", req.shape_set,
                 str(req.seed), str(req.trials), str(req.wide_trials)):
        h.update(part.encode("utf-8", "replace"))
        h.update(b"\0")
    return (job_id or "", h.hexdigest())


class Trial:
    """One gate trial. `seed` and `alt_seed` are secret (this process only)."""

    def __init__(self, kind, label, seed, alt_seed):
        self.kind = kind          # "seeded", "wide", "timing" or "fresh"
        self.label = label
        self.seed = seed
        self.alt_seed = alt_seed  # the variant's own seed (wide; timing's randn fallback)
        self.inputs = None        # kept device tensors, or None
        self.ref_out = None       # kept reference outputs, or None
        self.ref_rms = None       # rms(ref_out) while ref_out is kept (JobTrials.rms_of)
        self.skipped = None       # wide: True once the reference is known not finite
        self.randn_instead = None  # timing: True once get_inputs is known constant


class JobTrials:
    """The reference and trials of one job on one device. See the module comment."""

    def __init__(self, key, req, device, log, cache=None):
        self.key = key
        self.device = device
        self.log = log
        self.cache = cache
        self.lock = threading.RLock()
        self.rng = random.SystemRandom()
        self.problem_source = req.problem_source
        self.get_inputs_source = req.get_inputs_source
        self.requested_seed = req.seed
        self.loaded = False
        self.refdir = None
        self.kept_bytes = 0
        self.users = 0
        self.inputs_on_device = True
        self.ref_mutates = None
        self.ref_aliases = False
        self.signature = None
        self.compiled = None
        self.compiled_failed = None
        self.model64 = None       # ref64's widened copy of the model (False: none)
        # The fastest of eager and torch.compile (median ms) in this supervisor's last
        # baselines of the job; None before any (timing_checks.short_timing_reason).
        self.pytorch_best_ms = None
        # Per kernel source (measure._source_key): its own kernels' GPU time per gate
        # call (ms) in this supervisor's last traced gate of it for this job.
        self.own_busy_ms = {}
        self.init_path = None
        self.state_path = None
        self.input_spec = None
        self.trial_bytes = 0       # one trial's inputs + reference outputs, once known
        self.room_logged = False
        plan = [("seeded", str(i)) for i in range(req.trials)]
        if req.wide_trials:
            plan += [("wide", v) for v in WIDE_VARIANTS]
        plan.append(("timing", "timing inputs"))
        self.trials = [Trial(k, label, sysrand_seed(self.rng), sysrand_seed(self.rng))
                       for k, label in plan]
        self.closed = False
        self.released = False  # forgotten by its cache (release_job); closed once unused

    # -- the reference ----------------------------------------------------------------
    def load(self):
        """Loads the problem and builds the reference (once). Raises what the problem
        raises; the caller reports it as the reference's failure."""
        with self.lock:
            if self.loaded:
                return
            self.refdir = make_workdir()
            name = "kagent_problem_%x" % self.rng.getrandbits(32)
            self.problem = loader.load_source(self.problem_source, name, self.refdir)
            loader.check_problem(self.problem)
            self.get_inputs = self.problem.get_inputs
            if self.get_inputs_source:
                self.get_inputs = loader.override_get_inputs(self.problem,
                                                            self.get_inputs_source)
            self.init_seed = self.requested_seed if self.requested_seed is not None \
                else sysrand_seed(self.rng)
            self.init_inputs = loader.make_init_inputs(self.problem, self.init_seed)
            self.model = loader.build_model(self.problem.Model, self.init_inputs,
                                            self.init_seed, self.device)
            self.loaded = True

    def child_files(self):
        """(init inputs file, state_dict file or None): what a candidate's process builds
        ModelNew from, written once per job into this job's own folder."""
        import os
        with self.lock:
            if self.init_path is None:
                path = os.path.join(self.refdir, "init_inputs.pt")
                torch.save([x.detach().to("cpu") if isinstance(x, torch.Tensor) else x
                            for x in self.init_inputs], path)
                self.init_path = path
                if isinstance(self.model, torch.nn.Module) and self.model.state_dict():
                    spath = os.path.join(self.refdir, "ref_state.pt")
                    torch.save({k: v.detach().cpu()
                                for k, v in self.model.state_dict().items()}, spath)
                    self.state_path = spath
            return self.init_path, self.state_path

    def ref(self, inputs):
        """The reference's outputs on `inputs` (run as given: pass a copy to keep them)."""
        out = self.model(*inputs)
        outs = [o.detach().clone() for o in loader.flatten_outputs(out)]
        if self.device == "cuda":
            torch.cuda.synchronize()
        return outs

    def ref64(self, inputs):
        """The reference's outputs on `inputs` computed in float64 (the model and the
        floating inputs widened; its floating outputs in float64), for a wide trial where
        the fp32 reference itself may be off (docs/harness.md, the wide trials). None
        when the reference cannot run so: an op without float64, a floating output not
        in float64 (the problem fixes its dtype), no memory."""
        import copy
        with self.lock:
            if self.model64 is None:
                try:
                    m = copy.deepcopy(self.model)
                    self.model64 = m.double() if isinstance(m, torch.nn.Module) else m
                except Exception as e:  # noqa: BLE001 - the problem's own module
                    self.log.add(f"no float64 reference ({type(e).__name__}: {e})")
                    self.model64 = False
            if self.model64 is False:
                return None
            wide = None
            try:
                # Widening copies the floating inputs (the kept ones stay untouched); the
                # others are cloned, in case the reference writes them.
                wide = [(x.detach().to(torch.float64, copy=True) if x.is_floating_point()
                         else x.clone())
                        if isinstance(x, torch.Tensor) else x for x in inputs]
                raw = loader.flatten_outputs(self.model64(*wide))
                outs = [o.detach() for o in raw]
                if self.device == "cuda":
                    torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - an op without float64, no memory
                self.log.add(f"the float64 reference failed ({type(e).__name__}: {e})")
                if self.device == "cuda":
                    torch.cuda.empty_cache()
                return None
            finally:
                del wide
            if any(isinstance(o, torch.Tensor) and o.is_floating_point() and
                   o.dtype != torch.float64 for o in outs):
                self.log.add("the float64 reference returned a narrower float: not used")
                return None
            return outs

    def _ref_with_flags(self, inputs):
        """Outputs on a copy of `inputs`, learning once whether the reference mutates or
        aliases its inputs (then a candidate may too)."""
        work = clone_inputs(inputs)
        if self.ref_mutates is not None:
            return self.ref(work)
        raw = loader.flatten_outputs(self.model(*work))
        self.ref_aliases = any(overlaps(o, x) for o in raw for x in work
                               if isinstance(x, torch.Tensor))
        outs = [o.detach().clone() for o in raw]
        if self.device == "cuda":
            torch.cuda.synchronize()
        self.ref_mutates = any(isinstance(x, torch.Tensor) and not torch.equal(x, c)
                               for x, c in zip(work, inputs))
        return outs

    # -- inputs -------------------------------------------------------------------------
    def make_inputs(self, seed):
        """get_inputs() under `seed` on the device (see loader.make_inputs). Should the
        problem's get_inputs fail with the GPU as the default device, the job falls
        back to the host for good (the log says so), so its values stay reproducible."""
        if self.inputs_on_device and self.device == "cuda":
            try:
                return loader.make_inputs(self.get_inputs, seed, self.device, on_device=True)
            except Exception as e:  # noqa: BLE001 - the problem's own code
                self.inputs_on_device = False
                self.log.add(f"get_inputs failed with the GPU as the default device "
                             f"({type(e).__name__}: {e}); inputs are made on the host "
                             "for this job")
        return loader.make_inputs(self.get_inputs, seed, self.device, on_device=False)

    def _materialise_inputs(self, trial):
        if trial.kind == "wide":
            return variant(self.make_inputs(trial.seed), trial.label, trial.alt_seed)
        inputs = self.make_inputs(trial.seed)
        if trial.kind == "timing":
            if trial.randn_instead is None:
                trial.randn_instead = False
                if is_degenerate(inputs):
                    alt = variant(inputs, "randn", trial.alt_seed)
                    if all_finite(self.ref(clone_inputs(alt))):
                        self.log.add("get_inputs gives a constant tensor: timing on randn "
                                     "inputs of the same shapes instead (a constant-input "
                                     "shortcut gains nothing)")
                        trial.randn_instead = True
            if trial.randn_instead:
                inputs = variant(inputs, "randn", trial.alt_seed)
        return inputs

    def inputs_of(self, trial):
        """The trial's inputs (a fresh trial's never kept). Kept ones are shared by every
        candidate of the job: the caller must never hand them to anything that writes
        (the reference runs on a copy; the candidate's process gets its own copy)."""
        with self.lock:
            if trial.inputs is not None:
                return trial.inputs
            inputs = self._materialise_inputs(trial)
            self.trial_bytes = max(self.trial_bytes, nbytes(inputs))
            if trial.kind != "fresh" and self._keep(nbytes(inputs)):
                trial.inputs = inputs
            return inputs

    def ref_of(self, trial, inputs):
        """The reference's outputs for the trial (kept or computed on a copy of
        `inputs`); for a wide trial, also decides whether it is skipped."""
        with self.lock:
            if trial.ref_out is not None:
                return trial.ref_out
            out = self._ref_with_flags(inputs)
            if nbytes(inputs) + nbytes(out) > self.trial_bytes:
                self.trial_bytes = nbytes(inputs) + nbytes(out)
                self._fit_room()
            if trial.kind == "wide" and trial.skipped is None:
                trial.skipped = not all_finite(out)
                if trial.skipped:
                    self.log.add(f"trial {trial.label}: skipped, the reference is not "
                                 "finite there")
            if trial.kind != "fresh" and self._keep(nbytes(out)):
                trial.ref_out = out
            return out

    def rms_of(self, trial, out):
        """rms(out) for the reference outputs `out` of `trial`: computed once while the
        trial keeps them (every candidate's gate asks for it again), else each time."""
        with self.lock:
            if trial.ref_out is out and trial.ref_rms is not None:
                return trial.ref_rms
            value = rms(out)
            if trial.ref_out is out:
                trial.ref_rms = value
            return value

    def timing_trial(self):
        return self.trials[-1]

    def timing_inputs_copy(self):
        """A private copy of the timing inputs (baselines and the starting kernel run
        on it: a reference that writes its inputs must not change the kept ones)."""
        return clone_inputs(self.inputs_of(self.timing_trial()))

    def fresh_trial(self):
        """A seeded trial with seeds of its own, never kept: one per candidate."""
        return Trial("fresh", "fresh", sysrand_seed(self.rng), sysrand_seed(self.rng))

    def gate_plan(self):
        """The trials one candidate is gated on, in order: the job's seeded trials with
        a fresh one at position 1 (an odd trial: the candidate's call is dispatched first
        and, its reference never kept, the reference runs while it works), the wide
        ones, then the timing inputs."""
        seeded = [t for t in self.trials if t.kind == "seeded"]
        rest = [t for t in self.trials if t.kind != "seeded"]
        return seeded[:1] + [self.fresh_trial()] + seeded[1:] + rest

    def describe_inputs(self, inputs):
        """What a candidate's process needs to build stand-ins of `inputs` for a compile
        dry run: tensor shapes, strides, dtypes and devices (no values), plain values as
        they are."""
        from kagent_harness.compare import dtype_name
        spec = []
        for x in inputs:
            if isinstance(x, torch.Tensor):
                spec.append({"shape": list(x.shape), "stride": list(x.stride()),
                             "dtype": dtype_name(x.dtype), "device": x.device.type})
            elif isinstance(x, (bool, int, float, str)) or x is None:
                spec.append({"value": x})
            else:
                return None  # nested inputs: no dry run
        return spec

    def spec_without_values(self):
        """The timing inputs' spec (describe_inputs) before any trial exists, from the
        problem's get_inputs run on torch's meta device: shapes, strides and dtypes with
        no value computed and nothing run on the GPU (a factory call that names a
        device gets the meta device instead: _MetaFactories). None when get_inputs does
        not run so (it reads values, or makes its inputs outside torch) or when the
        timing inputs would be randn stand-ins of a constant get_inputs (same spec).
        Used by prepare before the job's first measurement has made the real inputs."""
        with self.lock:
            if self.input_spec is not None:
                return self.input_spec
            if getattr(self, "_meta_spec", False) is not False:
                return self._meta_spec
            self._meta_spec = None
            try:
                with torch.device("meta"), _MetaFactories():
                    values = list(self.get_inputs())
                spec = self.describe_inputs(values)
                if spec is not None:
                    for s in spec:
                        if "shape" in s:
                            s["device"] = self.device
                self._meta_spec = spec
            except Exception as e:  # noqa: BLE001 - the problem's code: no early spec
                self.log.add(f"the timing inputs' shapes are not known before the first "
                             f"measurement ({type(e).__name__}: {e})")
            return self._meta_spec

    def remember_input_spec(self):
        """Records the timing inputs' spec once they exist (for later prepares)."""
        with self.lock:
            t = self.timing_trial()
            if self.input_spec is None and t.inputs is not None:
                self.input_spec = self.describe_inputs(t.inputs)
            return self.input_spec

    # -- memory -----------------------------------------------------------------------
    def _keep(self, n):
        if self.cache is None or n <= 0 or self.closed or self.released:
            return False
        if not self._room_for(n):
            return False
        if self.cache.reserve(self, n):
            self.kept_bytes += n
            return True
        return False

    def _room_for(self, n):
        """Whether the device can spare `n` more bytes for kept trials: a measurement of
        this job needs about ROOM_FACTOR x one trial's inputs and outputs besides (its
        copies for the candidate's process, receive buffers, the comparison; the process's
        own copies), and never less than a quarter of the device."""
        if self.device != "cuda":
            return True
        free, total = torch.cuda.mem_get_info()
        free += torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
        need = max(total // 4, ROOM_FACTOR * self.trial_bytes)
        if free - n < need:
            if not self.room_logged:
                self.room_logged = True
                self.log.add(f"trial cache: not keeping more of this job's trials "
                             f"({free >> 30} GiB free, {need >> 30} GiB kept free for a "
                             f"measurement of {self.trial_bytes >> 20} MiB trials)")
            return False
        return True

    def _fit_room(self):
        """Forgets the kept tensors once the device cannot spare them beside a measurement
        (_room_for) of trials now known to be larger: the first ones are kept before a
        trial's outputs exist (the timing inputs, for the op signature, before any
        reference output). Called with the lock held; only a cached job keeps any."""
        if self.kept_bytes and not self._room_for(0):
            freed = self.cache.shed(self)
            self.log.add(f"trial cache: dropped this job's {freed >> 20} MiB of kept trials "
                         f"(a trial is {self.trial_bytes >> 20} MiB)")

    def forget_tensors(self):
        """Forgets every kept tensor without taking the lock (TrialCache's use, on a job
        no request is using, or with the lock held); returns the bytes."""
        freed = self.kept_bytes
        for t in self.trials:
            t.inputs = None
            t.ref_out = t.ref_rms = None
        self.kept_bytes = 0
        return freed

    def drop_tensors(self):
        """Forgets every kept tensor (they are made again on the next use)."""
        with self.lock:
            return self.forget_tensors()

    def close(self):
        with self.lock:
            self.closed = True
            self.drop_tensors()
            self.compiled = None
            self.model = None
            self.model64 = None
            if self.refdir:
                shutil.rmtree(self.refdir, ignore_errors=True)
                self.refdir = None


class _MetaFactories(torch.overrides.TorchFunctionMode):
    """Within the block, a torch call's `device=` argument becomes the meta device, so a
    get_inputs that names its device (`device="cuda"`) still makes meta tensors."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if "device" in kwargs and kwargs["device"] is not None:
            kwargs["device"] = "meta"
        if getattr(func, "__name__", "") in ("to", "cuda") and args and \
                isinstance(args[0], torch.Tensor):
            return args[0]  # a meta tensor stays one
        return func(*args, **kwargs)


class TrialCache:
    """The jobs' trial sets on one device, within `limit_bytes` of kept tensors.

    get() returns the job's JobTrials (made on first use) with its user count raised;
    put it back with done(). reserve() makes room by dropping the tensors of the least
    recently used jobs that no request is using; a job over the limit on its own keeps
    what fits. release(job_id) closes every trial set of a job. Thread-safe."""

    def __init__(self, limit_bytes, log):
        self.limit = max(0, int(limit_bytes))
        self.log = log
        self._lock = threading.Lock()
        self._jobs = collections.OrderedDict()  # key -> JobTrials, least recent first
        self.used = 0

    def get(self, req, job_id, device, log):
        key = job_key(req, job_id)
        with self._lock:
            jt = self._jobs.get(key) if job_id else None
            if jt is None:
                jt = JobTrials(key, req, device, log, cache=self if job_id else None)
                if job_id:
                    self._jobs[key] = jt
                    state = "built"
                else:
                    state = "one-off"
            else:
                self._jobs.move_to_end(key)
                jt.log = log
                state = "reused"
            jt.users += 1
        return jt, state

    def done(self, jt):
        with self._lock:
            jt.users = max(0, jt.users - 1)
            last = jt.users == 0 and (jt.cache is None or jt.released)
        if last:
            jt.close()

    def reserve(self, jt, n):
        with self._lock:
            if n > self.limit:
                return False
            for key in list(self._jobs):
                if self.used + n <= self.limit:
                    break
                other = self._jobs[key]
                if other is jt or other.users > 0 or other.kept_bytes == 0:
                    continue
                # Another job's tensors; its lock is not taken here (it has no users).
                freed = other.forget_tensors()
                self.used -= freed
                self.log.add(f"trial cache: dropped {freed >> 20} MiB of job "
                             f"{key[0] or '?'} (least recently used)")
            if self.used + n > self.limit:
                return False
            self.used += n
            return True

    def shed(self, jt):
        """Forgets jt's kept tensors and gives their bytes back (jt's lock held by the
        caller); returns the bytes."""
        with self._lock:
            freed = jt.forget_tensors()
            if not jt.released:
                self.used -= freed
            return freed

    def shed_idle(self):
        """Forgets the kept tensors of every job no request is using and gives their
        blocks back to the driver (after the supervisor ran out of device memory, so that
        the retry has room); returns the bytes."""
        with self._lock:
            freed = 0
            for jt in self._jobs.values():
                if jt.users == 0 and jt.kept_bytes:
                    n = jt.forget_tensors()
                    self.used -= n
                    freed += n
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        return freed

    def release(self, job_id):
        """Forgets the job's trial sets; one a request is still using is closed when that
        request is done with it (done())."""
        with self._lock:
            keys = [k for k in self._jobs if k[0] == job_id]
            jts = [self._jobs.pop(k) for k in keys]
            for jt in jts:
                self.used -= jt.kept_bytes
                jt.released = True
            idle = [jt for jt in jts if jt.users == 0]
        for jt in idle:
            jt.close()
        if jts and torch.cuda.is_available():
            torch.cuda.empty_cache()
        return bool(jts)

    def stats(self):
        with self._lock:
            return {"jobs": len(self._jobs), "cache_bytes": self.used,
                    "cache_limit_bytes": self.limit}

    def close(self):
        with self._lock:
            jts = list(self._jobs.values())
            self._jobs.clear()
            self.used = 0
        for jt in jts:
            jt.close()


def default_limit_bytes(device):
    """A quarter of the device's memory on a GPU; 2 GiB on the CPU."""
    if device == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.get_device_properties(0).total_memory // 4)
    return 2 << 30


def rms(outputs):
    """Root mean square over the floating outputs (0 when there are none)."""
    total, n = 0.0, 0
    for o in outputs:
        if o.is_floating_point() and o.numel():
            f = o.detach().float()
            f = torch.where(torch.isfinite(f), f, torch.zeros_like(f))
            total += float((f * f).sum())
            n += o.numel()
    return math.sqrt(total / n) if n else 0.0
