"""How inputs and outputs cross between the supervisor and a candidate's process.

On a GPU, in shared GPU memory after a probe shows it works: the supervisor shares private
copies of a call's inputs and receive buffers for its outputs, each call's in a CUDA VMM
allocation of its own whose file descriptor reaches the child over its descriptor
channel (vmm.py; legacy CUDA IPC does not work inside the candidate's sandbox), and the
child copies GPU to GPU. Otherwise, and on the CPU, through
torch.save files in the child's private directory, loaded back with weights_only=True.
A mixin of measure.Supervisor (it uses the supervisor's child, log, result, request).
"""

import base64
import os
import pickle

import torch

from kagent_harness import protocol as P
from kagent_harness.sandbox import scratch_open


class Rejection(Exception):
    def __init__(self, verdict, reason):
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


def cpu(x):
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu")
    return x


def _dtype_name(dtype):
    return str(dtype).split(".", 1)[1]


class _Extent:
    """What vmm.layout needs of a tensor that does not exist yet."""

    def __init__(self, shape, stride, dtype):
        self.shape, self._stride = shape, stride
        self._itemsize = torch.empty((), dtype=dtype).element_size()

    def stride(self):
        return self._stride

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def element_size(self):
        return self._itemsize


def _contiguous_strides(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return list(reversed(strides))


class TransferMixin:
    def _probe_ipc(self):
        """Inputs and outputs travel between this process and the child through shared GPU
        memory when it works here (a 4 GiB input then costs a GPU copy, not ~10 s
        through a file); the probe sends a small tensor.

        What is shared is always a private copy in an allocation of its own (vmm.py: a
        CUDA VMM allocation whose file descriptor goes to the child over its descriptor
        channel), so the child never maps memory that holds anything else, and memory it
        keeps mapped is never handed to the reference's tensors."""
        self.use_ipc = False
        self._ipc_keep = None
        if self.device != "cuda" or not self.req.ipc_inputs:
            return
        if getattr(self.child, "fd_channel", None) is None:
            self.log.add("no descriptor channel to the candidate's process: inputs go "
                         "through files")
            return
        probe = torch.arange(1, 1025, dtype=torch.float32, device="cuda")
        try:
            field = self._ipc_field([probe])
        except Exception as e:  # noqa: BLE001
            self.log.add(f"shared GPU memory unavailable here ({e!r}): inputs go through "
                         "files")
            return
        reply = self.child.request(dict(cmd="ipc_probe", **field), phase="CUDA IPC probe")
        self._ipc_keep = None
        if reply.get("ipc") and abs(float(reply.get("sum", 0.0)) - 524800.0) < 1e-3:
            self.use_ipc = True
            self.log.add("inputs travel to the candidate's process in shared GPU memory "
                         "(CUDA VMM, descriptor passing)")
        else:
            self.log.add(f"shared GPU memory probe failed ({reply.get('error', 'wrong sum')}): "
                         "inputs go through files")

    def _share(self, values):
        """One new shared allocation holding a tensor for each of `values` that is a
        tensor or a (shape, stride, dtype) template (copied from the tensor, left for the
        caller to fill for a template), sent to the child; plain values pass as they are.
        Returns (what each value became here, the message field)."""
        from kagent_harness import vmm
        metas = [(list(v.shape), list(v.stride()), v.dtype) if isinstance(v, torch.Tensor)
                 else v if isinstance(v, tuple) else None for v in values]
        sizes = [_Extent(*m) if m is not None else None for m in metas]
        offsets, total = vmm.layout([s if s is not None else 0 for s in sizes])
        try:
            buf = vmm.SharedBuffer(total)
        except vmm.VmmError:
            # cuMemCreate does not go through torch's caching allocator, which does not
            # give the blocks it keeps back for it: once they are back, one more try.
            torch.cuda.empty_cache()
            buf = vmm.SharedBuffer(total)
        token = vmm.send_buffer(self.child.fd_channel, buf)
        here, items = [], []
        for v, m, off in zip(values, metas, offsets):
            if m is None:
                here.append(v)
                items.append(("value", v))
                continue
            view = buf.view(off, m[0], m[1], m[2])
            if isinstance(v, torch.Tensor):
                view.copy_(v.detach())
            here.append(view)
            items.append(("vmm", off, m[0], m[1], _dtype_name(m[2])))
        field = base64.b64encode(pickle.dumps({"token": token, "size": buf.size,
                                                "items": items})).decode("ascii")
        return here, field

    def _ipc_field(self, inputs):
        # Private copies: the child maps them, so it must never see the supervisor's own
        # tensors (it could change them before the reference runs).
        shared, field = self._share(inputs)
        torch.cuda.synchronize()
        self._ipc_keep = shared
        return {"inputs_ipc": field}

    def out_field(self, spec):
        """Receive buffers for the child's outputs, shaped and typed as `spec` ([[shape,
        dtype name], ...]: the reference's outputs) and filled with NaN (the maximum for
        integers), in one shared allocation, with the message field that shares them:
        (None, {}) when outputs must come through a file (no shared memory, no spec, bool
        outputs, which have no value that cannot be an answer). A child that writes
        nothing leaves the poison there."""
        if not getattr(self, "use_ipc", False) or not spec:
            return None, {}
        try:
            templates = []
            for shape, name in spec:
                dtype = getattr(torch, name, None)
                if not isinstance(dtype, torch.dtype) or dtype == torch.bool:
                    return None, {}
                shape = [int(n) for n in shape]
                templates.append((shape, _contiguous_strides(shape), dtype))
            bufs, field = self._share(templates)
            for b in bufs:
                if b.is_floating_point() or b.is_complex():
                    b.fill_(float("nan"))
                else:
                    b.fill_(torch.iinfo(b.dtype).max)
            torch.cuda.synchronize()
            return bufs, {"out_ipc": field}
        except Exception as e:  # noqa: BLE001 - the file path still works
            self.log.add(f"output receive buffers not shared ({e!r}): outputs through a file")
            return None, {}

    def take_outputs(self, bufs, reply, out_path, ref_out):
        """The child's outputs of one call, as tensors this process owns: private copies
        of the receive buffers when the child says it filled them, else the output file."""
        if bufs is not None and reply.get("outputs_via") == "ipc":
            got = [b.clone() for b in bufs]
            torch.cuda.synchronize()
            self.result["harness"]["outputs_via"] = "cuda ipc"
            return got
        self.result["harness"]["outputs_via"] = "file"
        return self._load_outputs(out_path, ref_out)

    def inputs_field(self, inputs, tag):
        """The message fields that hand `inputs` to the child: CUDA IPC handles when the
        probe passed and every input is a tensor on the GPU or a plain value, else a file
        (removed by release_inputs)."""
        if getattr(self, "use_ipc", False) and all(
                (isinstance(x, torch.Tensor) and x.is_cuda) or
                not isinstance(x, (torch.Tensor, list, tuple, dict)) for x in inputs):
            return self._ipc_field(inputs)
        path = os.path.join(self.workdir, f"in_{tag}.pt")
        # The candidate's code may have run in this directory: never through a link it
        # planted (this process may be root and sees the host).
        with scratch_open(path, write=True) as f:
            torch.save([cpu(x) for x in inputs], f)
        return {"inputs": path}

    def release_inputs(self, field):
        self._ipc_keep = None
        if "inputs" in field:
            try:
                os.unlink(field["inputs"])
            except OSError:
                pass


    def _load_outputs(self, path, ref_out):
        limit = 4 * sum(o.numel() * o.element_size() for o in ref_out) + (16 << 20)
        try:
            f = scratch_open(path, write=False)
        except FileNotFoundError:
            raise Rejection(P.REJECTED, "the candidate process wrote no output file")
        except OSError as e:
            raise Rejection(P.REJECTED, f"the output file is not a regular file of its own "
                            f"({e})")
        try:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise Rejection(P.REJECTED, f"output file of {size} bytes, far larger than "
                                "the reference's outputs")
            try:
                got = torch.load(f, weights_only=True, map_location="cpu")
            except Exception as e:  # noqa: BLE001
                raise Rejection(P.REJECTED, f"unreadable output file: {e}")
        finally:
            f.close()
            try:
                os.unlink(path)
            except OSError:
                pass
        if not isinstance(got, list) or not all(isinstance(t, torch.Tensor) for t in got):
            raise Rejection(P.REJECTED, "the output file does not hold a list of tensors")
        return [t.to(self.device) for t in got]

