"""Loading KernelBench-style sources, seeding, building models and inputs.

The supervisor uses it for the reference (trusted: the problem is the job's own
reference) and the child uses it for the candidate. Nothing here runs candidate code in
the supervisor: load_source is only called on candidate source inside the child.
"""

import contextlib
import importlib.util
import os
import random
import sys
import textwrap
import threading

import torch

# The generators a seeded draw uses (Python's random, torch's CPU and CUDA generators,
# numpy's) belong to the process, and the supervisor serves several requests at once on
# threads. A seed-then-draw on one thread must not interleave with another's: a reference
# built under seed S while another job's inputs were seeded and drawn got weights no
# process seeded with S reproduces, and every candidate built from the seed alone (its
# parameter names differ from the reference's, so no state_dict is loaded) failed every
# element of the gate: problems/45, 60 and 62 through kagentd, 21 jobs at once, on an
# H100 (session 33), where one job alone passed. Every seeded draw holds SEEDED.
SEEDED = threading.RLock()


@contextlib.contextmanager
def seeded(seed):
    """Seeds every generator (set_seed) and keeps them to this thread for the block."""
    with SEEDED:
        set_seed(seed)
        yield


def set_seed(seed):
    """Seeds every generator a model constructor or get_inputs may draw from. Without
    SEEDED held, another thread may reseed or draw before this one draws: use seeded()."""
    seed = int(seed) % (2**63 - 1)
    random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device
    try:
        import numpy as np
        np.random.seed(seed % (2**32))
    except ImportError:  # numpy is optional
        pass


def load_source(source, module_name, directory):
    """Writes `source` to directory/module_name.py and imports it as `module_name`.

    A real file keeps inspect.getsource working, which triton.jit needs.
    """
    path = os.path.join(directory, module_name + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def check_problem(module):
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise ValueError(f"the problem defines no {name}")


def override_get_inputs(module, source):
    """Returns a get_inputs built from `source`: either a full `def get_inputs()` or the
    body of one. It runs in a copy of the problem module's globals (torch, sizes, ...)."""
    namespace = dict(vars(module))
    if "def get_inputs" not in source:
        source = "def get_inputs():\n" + textwrap.indent(textwrap.dedent(source), "    ")
    exec(compile(source, "<get_inputs_source>", "exec"), namespace)  # trusted: job's own
    fn = namespace.get("get_inputs")
    if not callable(fn):
        raise ValueError("get_inputs_source defines no get_inputs")
    return fn


def to_device(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def build_model(cls, init_inputs, seed, device):
    """KernelBench convention: seed, construct, move. Model and ModelNew built this way
    under the same seed get identical weights when they create parameters in the same
    order."""
    with seeded(seed):
        model = cls(*init_inputs)
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
    return model


def make_init_inputs(module, seed):
    with seeded(seed):
        return list(module.get_init_inputs())


def make_inputs(get_inputs, seed, device, on_device=True):
    """The problem's get_inputs() under `seed`, moved to `device`.

    On a GPU (`on_device`), get_inputs runs with the GPU as torch's default device, so a
    KernelBench-style `torch.rand(M, N)` is drawn there, seeded (the CUDA generator),
    instead of on the host and copied (a 6 GiB input took a minute that way). Tensors a
    problem makes on the host anyway (numpy, an explicit device="cpu") are moved after.
    The same seed gives the same values every time, in this process and any other."""
    with seeded(seed):
        if device == "cuda" and on_device:
            with torch.device("cuda"):
                values = list(get_inputs())
        else:
            values = list(get_inputs())
    return [to_device(x, device) for x in values]


def flatten_outputs(out):
    """A forward's result as a flat list of tensors (numbers become 0-d tensors)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            flat.extend(flatten_outputs(o))
        return flat
    if isinstance(out, (int, float, bool)):
        return [torch.tensor(out)]
    raise TypeError(f"forward returned an unsupported type {type(out).__name__}")
