"""How inputs and outputs cross between the supervisor and a candidate's process.

On a GPU, by CUDA IPC after a probe shows it works: the supervisor shares private copies
of a call's inputs and receive buffers for its outputs (allocated in a memory pool that
holds nothing else), the child copies GPU to GPU. Otherwise, and on the CPU, through
torch.save files in the child's private directory, loaded back with weights_only=True.
A mixin of measure.Supervisor (it uses the supervisor's child, log, result, request).
"""

import base64
import os
import pickle

import torch

from kagent_harness import protocol as P


class Rejection(Exception):
    def __init__(self, verdict, reason):
        super().__init__(reason)
        self.verdict = verdict
        self.reason = reason


def cpu(x):
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu")
    return x


def new_ipc_pool(log):
    """A private CUDA memory pool for what is shared with candidates' processes, or None
    (then everything goes through files)."""
    try:
        return torch.cuda.MemPool()
    except (AttributeError, RuntimeError) as e:
        log.add(f"no private CUDA memory pool here ({e!r}): inputs and outputs go "
                "through files")
        return None


class TransferMixin:
    def _probe_ipc(self):
        """Inputs and outputs travel between this process and the child by CUDA IPC when
        it works here (a 4 GiB input then costs a GPU copy, not ~10 s through a file);
        the probe sends a small tensor.

        Everything shared is allocated in a private memory pool (torch.cuda.MemPool)
        that holds nothing else: the child can keep a shared allocation mapped (or map
        it again from the handle) after it is freed here, so the memory behind it must
        never be handed to the reference's tensors."""
        self.use_ipc = False
        self._ipc_keep = None
        if self.device != "cuda" or not self.req.ipc_inputs:
            return
        if getattr(self, "ipc_pool", None) is None:
            # One pool per request: finish() drops it, so its memory goes back to the
            # device (the candidate's process may need it) once the request is over.
            self.ipc_pool = new_ipc_pool(self.log)
            if self.ipc_pool is None:
                return
        probe = torch.arange(1, 1025, dtype=torch.float32, device="cuda")
        try:
            field = self._ipc_field([probe])
        except Exception as e:  # noqa: BLE001
            self.log.add(f"CUDA IPC unavailable here ({e!r}): inputs go through files")
            return
        reply = self.child.request(dict(cmd="ipc_probe", **field), phase="CUDA IPC probe")
        self._ipc_keep = None
        if reply.get("ipc") and abs(float(reply.get("sum", 0.0)) - 524800.0) < 1e-3:
            self.use_ipc = True
            self.log.add("inputs travel to the candidate's process by CUDA IPC")
        else:
            self.log.add(f"CUDA IPC probe failed ({reply.get('error', 'wrong sum')}): "
                         "inputs go through files")

    def _ipc_field(self, inputs):
        # Private copies: the child maps them, so it must never see the supervisor's own
        # tensors (it could change them before the reference runs).
        with torch.cuda.use_mem_pool(self.ipc_pool):
            shared = [x.detach().clone() if isinstance(x, torch.Tensor) else x
                      for x in inputs]
        torch.cuda.synchronize()
        self._ipc_keep = shared
        return {"inputs_ipc": self._ipc_handles(shared)}

    @staticmethod
    def _ipc_handles(tensors):
        from torch.multiprocessing.reductions import reduce_tensor
        items = []
        for x in tensors:
            if isinstance(x, torch.Tensor):
                fn, args = reduce_tensor(x)
                items.append(("cuda_ipc", fn, args))
            else:
                items.append(x)
        return base64.b64encode(pickle.dumps(items)).decode("ascii")

    def out_field(self, spec):
        """Receive buffers for the child's outputs, shaped and typed as `spec` ([[shape,
        dtype name], ...]: the reference's outputs) and filled with NaN (the maximum for
        integers), in the private pool, with the message field that shares them: (None,
        {}) when outputs must come through a file (no IPC, no spec, bool outputs, which
        have no value that cannot be an answer). A child that writes nothing leaves
        the poison there."""
        if not getattr(self, "use_ipc", False) or not spec:
            return None, {}
        try:
            bufs = []
            with torch.cuda.use_mem_pool(self.ipc_pool):
                for shape, name in spec:
                    dtype = getattr(torch, name, None)
                    if not isinstance(dtype, torch.dtype) or dtype == torch.bool:
                        return None, {}
                    b = torch.empty([int(n) for n in shape], dtype=dtype, device="cuda")
                    if b.is_floating_point() or b.is_complex():
                        b.fill_(float("nan"))
                    else:
                        b.fill_(torch.iinfo(dtype).max)
                    bufs.append(b)
            torch.cuda.synchronize()
            return bufs, {"out_ipc": self._ipc_handles(bufs)}
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
        torch.save([cpu(x) for x in inputs], path)
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
            size = os.path.getsize(path)
        except OSError:
            raise Rejection(P.REJECTED, "the candidate process wrote no output file")
        if size > limit:
            raise Rejection(P.REJECTED, f"output file of {size} bytes, far larger than the "
                            "reference's outputs")
        try:
            got = torch.load(path, weights_only=True, map_location="cpu")
        except Exception as e:  # noqa: BLE001
            raise Rejection(P.REJECTED, f"unreadable output file: {e}")
        finally:
            os.unlink(path)
        if not isinstance(got, list) or not all(isinstance(t, torch.Tensor) for t in got):
            raise Rejection(P.REJECTED, "the output file does not hold a list of tensors")
        return [t.to(self.device) for t in got]

