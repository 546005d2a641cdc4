"""Mode `profile`: the candidate's forwards under the profiler's injection (ncu or CUPTI).

The profiler service runs `python -m kagent_harness profile` one-shot under ncu (or with
the CUPTI tracer injected); this mixin of measure.Supervisor loads the reference, starts
the candidate's process with the injection kept, and runs its profiled forwards inside
the NVTX range the profiler filters on. With a gate (gate.py, `--gate-dir`) it prepares
first and waits for the worker's GPU slot before it makes inputs or runs anything.
docs/harness.md, "The GPU gate", has the protocol.
"""

import time
import traceback

import torch

from kagent_harness import NVTX_RANGE
from kagent_harness import protocol as P
from kagent_harness.gate import NotGranted
from kagent_harness.pool import ChildSpec
from kagent_harness.sandbox import ChildFailure

# The most of a CUPTI trace handed over to the caller (as the worker reads at most).
TRACE_LIMIT = 256 << 20
# Starts of the profiled process whose sandbox could not be set up before the profile
# fails: the kagent-* entries it hides in the shared /tmp and /dev/shm come and go with
# every other candidate on the host (other workers' too), and two test suites on one
# host made two starts in a row fail (CI, 2026-12-06).
PROFILE_START_ATTEMPTS = 4


class ProfileMixin:
    def run_profile(self, gate=None):
        """The candidate's profiled forwards (its process under the profiler's injection).
        With `gate` (gate.Gate, the one-shot `--gate-dir`), everything that needs no GPU
        slot comes first (the processes, the reference's and the candidate's
        construction, the candidate's compile dry run); then the run waits for the
        worker's go before it makes inputs or runs anything, and says when it is done
        with the GPU."""
        req = self.req
        t_start = time.monotonic()
        t_granted = None
        torch.set_grad_enabled(False)
        res = {"ok": False, "verdict": "", "reason": "", "nvtx_range": NVTX_RANGE,
               "profile_iters": req.profile_iters, "kernels_launched": [], "gpu_name": "",
               "log": ""}
        try:
            spec = ChildSpec.for_request(req, self.device, trace=False)
            from kagent_harness.pool import discard, spawn
            for attempt in range(1, PROFILE_START_ATTEMPTS + 1):
                self.use_child(spawn(spec, self.log, req.timeout_s, req.memory_limit_mb,
                                     keep_injection=True, extra_env=req.child_env))
                if attempt == 1:
                    with self.phases("reference load"):
                        self.load_reference()
                    res["gpu_name"] = self.result["gpu_name"]
                try:
                    self.start_child()
                    break
                except ChildFailure as f:
                    # A process that ended before it had the candidate's code (its
                    # sandbox could not be set up: profile mode lists the shared /tmp's
                    # kagent-* entries to hide, and one can vanish before bwrap mounts
                    # over it) is started again, with a new list.
                    if attempt == PROFILE_START_ATTEMPTS or self.child.loaded:
                        raise
                    self.log.add(f"{f.reason}: a new process (attempt {attempt + 1} of "
                                 f"{PROFILE_START_ATTEMPTS})")
                    self.child.kill()
                    discard(self.child)  # its workdir too
            if gate is not None:
                self.compile_dry_run(self.child, req.language)
                if req.cupti_counters and self.device == "cuda":
                    self.prepare_counters(req.cupti_counters)
                with self.phases("waiting for the GPU"):
                    gate.wait_for_gpu()
                res["gate_wait_s"] = gate.waited_s
                t_granted = time.monotonic()
                # The candidate's time limit counts from the grant, not from its start.
                self.child.deadline = time.monotonic() + req.timeout_s
            if req.signature:
                try:
                    with self.phases("op signature"):
                        res["op_signature"] = self.signature()
                except Exception as e:  # noqa: BLE001
                    self.log.add(f"op signature not recorded: {e!r}")
            with self.phases("profile: inputs"):
                inputs = self.timing_inputs()
                in_field = self.inputs_field(inputs, "profile")
            # The warm-up and profiled forwards, the profiler's replays included.
            with self.phases("profile: forwards"):
                cmd = {"cmd": "profile", **in_field, "iters": req.profile_iters,
                       "range": NVTX_RANGE, "warmup_iters": req.profile_warmup_iters}
                if req.cupti_counters:
                    cmd["counters"] = req.cupti_counters
                reply = self.child.request(cmd, phase="profile")
            self.release_inputs(in_field)
            if req.cupti_counters:
                res["cupti_counters"] = self.counters_result(reply.get("counters"))
            res["kernels_launched"] = [str(n) for n in reply.get("launch_names") or []][:100]
            res["ok"] = True
        except ChildFailure as f:
            res["verdict"], res["reason"] = f.verdict, f.reason
        except NotGranted as e:
            res["verdict"], res["reason"] = P.INFRA_ERROR, str(e)
        except Exception as e:  # noqa: BLE001
            self.log.add("profile error:\n" + traceback.format_exc())
            res["verdict"], res["reason"] = P.INFRA_ERROR, f"{type(e).__name__}: {e}"
        if self.child is not None:
            self.child.kill()  # its GPU work, if any, ends here
        if gate is not None:
            if t_granted is not None:
                self.phases.add("profile: the GPU held, in the harness",
                                (time.monotonic() - t_granted) * 1e3)
            gate.done()
        self._hand_over_trace()
        r = self.finish(t_start)
        res["phases_ms"] = r["harness"]["phases_ms"]
        res["log"] = r["log"]
        return res

    def _hand_over_trace(self):
        """The CUPTI backend's trace, written in the candidate's workdir (pool.spawn), to
        the file the caller named (KAGENT_CUPTI_OUT): at most TRACE_LIMIT bytes, never
        through a link the candidate planted. A missing trace is the caller's to report."""
        out = (self.req.child_env or {}).get("KAGENT_CUPTI_OUT")
        src = getattr(self.child, "trace_path", None) if self.child is not None else None
        if not out or not src:
            return
        from kagent_harness.sandbox import scratch_open
        try:
            with scratch_open(src, write=False) as f:
                data = f.read(TRACE_LIMIT)
        except OSError as e:
            self.log.add(f"CUPTI trace not handed over: {e}")
            return
        with open(out, "wb") as f:
            f.write(data)

    def prepare_counters(self, metrics):
        """The counters' host setup in the candidate's process before the GPU is held
        (cupti_counters.prepare: on the H100 the setup held the GPU 0.5-1.5 s of a
        profile's 1.7-2.5 s); a failure only leaves it to the collection, in the slot."""
        with self.phases("CUPTI counters: setup before the slot"):
            reply = self.child.request({"cmd": "counters_prepare", "counters": list(metrics)},
                                       phase="CUPTI counters: setup before the slot")
        got = reply.get("prepare") if isinstance(reply.get("prepare"), dict) else {}
        if got.get("ok"):
            self.log.add(f"CUPTI counters set up before the slot: {got.get('passes')} passes "
                         f"planned, {got.get('ms')} ms")
        else:
            self.log.add(f"CUPTI counters not set up before the slot "
                         f"({got.get('error') or 'no answer'}): the collection does it")

    def counters_result(self, counters):
        """The child's counter collection as the result's "cupti_counters" (ok, passes,
        error, ms), logged; a failed one is reported, never fatal: the trace stands."""
        if not isinstance(counters, dict):
            counters = {"ok": False, "passes": 0, "error": "the child ran no counter passes"}
        out = {"ok": bool(counters.get("ok")), "passes": int(counters.get("passes") or 0),
               "error": str(counters.get("error") or ""), "ms": counters.get("ms")}
        from kagent_harness import cupti_counters
        P.add_child_steps(self.phases, counters.get("steps_ms"), cupti_counters.STEPS,
                          "CUPTI counters")
        if out["ok"]:
            sized = ""
            if counters.get("max_ranges"):
                per = counters.get("kernels_per_forward")
                sized = (f", {counters['max_ranges']} ranges"
                         f" ({per} kernels per warm-up forward)" if per else
                         f", {counters['max_ranges']} ranges")
            self.log.add(f"CUPTI counters: {out['passes']} passes in {out['ms']} ms{sized}")
        else:
            self.log.add(f"CUPTI counters not collected: {out['error']}")
        return out
