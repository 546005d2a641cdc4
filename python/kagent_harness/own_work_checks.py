"""The supervisor's checks of the own-kernel rule on each gate call.

ownwork.py holds the rule itself (what the candidate's process records, and the verdict
over it); this mixin of measure.Supervisor applies it: what the gate calls are compared
with (the reference's compute ops and the largest tensor it reads), each call's recorded
ops, and on the GPU the CUPTI trace of every gate call (own kernels ran, no library
matrix product, convolution or attention, the own kernels' share of the GPU time).
docs/harness.md, "Own-kernel rule", lists what is allowed and rejected. It uses the
supervisor's signature(), model, own_names, trace_path and result.
"""

import math

import torch

from kagent_harness import kernels as K
from kagent_harness import ownwork as W
from kagent_harness import protocol as P
from kagent_harness.transfer import Rejection


class OwnWorkChecksMixin:
    def _own_work_setup(self):
        """What the rule compares a gate call's ops with: the reference's non-glue ops
        (its op signature) and the numel of the largest tensor the reference reads
        besides the call's inputs (its parameters and buffers)."""
        self.gate_ops = []
        try:
            self.ref_ops = W.reference_compute_ops(self.signature())
        except Exception as e:  # noqa: BLE001 - heavy/reduction rules still hold
            self.ref_ops = set()
            self.result["harness"]["warnings"].append(
                f"own-kernel rule without the reference's ops (signature failed: {e})")
        m = self.model
        self.ref_param_numel = max((t.numel() for t in list(m.parameters()) +
                                    list(m.buffers())), default=0) \
            if isinstance(m, torch.nn.Module) else 0

    def _own_work_checks(self, reply, what, inputs):
        summary = reply.get("op_record")
        largest = max([self.ref_param_numel] + [x.numel() for x in inputs
                                                if isinstance(x, torch.Tensor)])
        v = W.judge_ops(summary, self.ref_ops, largest, what)
        if not v:
            raise Rejection(P.REJECTED, v.reason)
        self.gate_ops.append(summary)

    @staticmethod
    def _profiler_times(reply):
        out = []
        for item in (reply.get("profiler_kernel_ms") or [])[:200]:
            if isinstance(item, list) and len(item) == 2 and \
                    isinstance(item[1], (int, float)) and math.isfinite(item[1]):
                out.append((str(item[0]), max(0.0, float(item[1]))))
        return out

    def _own_gpu_time(self, kernels, what, ops, share_rule=True):
        """The GPU half of the rule on one gate call's [(kernel name, GPU ms)]: no
        library matrix-product/convolution/attention kernel, the own kernels' share of
        the GPU work, and no library kernel in a call whose recording is empty (the
        recorder was bypassed). Returns the call's split of GPU time."""
        busy, heavy = W.split_busy(kernels, lambda n: K.is_own(n, self.own_names))
        v = W.judge_kernels(busy, heavy, what, share_rule=share_rule)
        if not v:
            raise Rejection(P.REJECTED, v.reason)
        lib = busy["library"] + busy["glue"]
        if ops is not None and lib > 0 and not ops.get("ops"):
            raise Rejection(P.REJECTED, f"{what}: {W.TAMPERED} (library kernels ran for "
                            f"{lib:.3f} ms but the recorder saw no op at all)")
        return {k: round(v_, 6) for k, v_ in busy.items()}

    def _check_own_names(self, names, what):
        if not names:
            raise Rejection(P.REJECTED, f"{what}: forward launched no GPU kernel")
        if not any(K.is_own(n, self.own_names) for n in names):
            raise Rejection(P.REJECTED, f"{what}: only library kernels ran "
                            f"({', '.join(names[:6])}): the hot path is not the candidate's "
                            "own kernels")

    def _check_cupti_gate(self):
        trace = K.read_trace(self.trace_path)
        if trace is None:
            self.result["harness"]["warnings"].append("CUPTI trace file missing")
            return set()
        calls = K.analyze_gate(trace, self.own_names)
        self.result["harness"]["cupti_gate_calls"] = len(calls)
        names = set()
        for i, call in enumerate(calls):
            names.update(call["names"])
            self._check_own_names(call["names"], f"gate call {i} (CUPTI)")
        shares = []
        for i, call in enumerate(calls):
            # The first call may autotune and compile: it is held to the heavy-kernel
            # rule, the share rule starts at the second (unless it is the only one).
            ops = self.gate_ops[i] if i < len(self.gate_ops) else None
            shares.append(self._own_gpu_time(sorted(call["busy_by_name"].items()),
                                             f"gate call {i} (CUPTI)", ops,
                                             share_rule=i > 0 or len(calls) == 1))
        self.result["harness"]["own_gpu_share"] = shares
        self.gate_own_min_cupti = min((c["own"] for c in calls), default=None)
        # GPU time of the candidate's own kernels per gate call (the first call excluded:
        # autotuning); the timed calls must do comparable work.
        busy = sorted(c["own_busy_ms"] for c in calls[1:]) or [c["own_busy_ms"] for c in calls]
        self.gate_own_busy_cupti = busy[len(busy) // 2] if busy else None
        self.result["harness"]["checks"].append(
            f"CUPTI: {len(calls)} gate calls traced, own kernels in each")
        return names
