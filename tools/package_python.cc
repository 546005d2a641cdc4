// The static Python of an exported package (tools/package.h): the module's code after its
// generated header, and the package's pytest file.
#include "tools/package_python.h"

namespace kagent::package_python {

const char kModuleBody[] = R"py(import importlib
import itertools
import os
import threading
import weakref

import torch
import torch.nn as nn

from . import reference as _reference

__all__ = ["Model", "functional", "guard", "verified_inputs", "kernel_available", "FIGURES",
           "JOB_ID", "OP_NAME", "VERIFIED_DEVICE", "LANGUAGE", "DEPLOY", "START_KERNEL"]

_PATHS = ("kernel", "eager", "torch.compile")

# The verified kernel's source, as a file a second job takes as its starting kernel:
#   kagent submit problem.py --kernel <this folder>/kernel.py
START_KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel.py")

_lock = threading.Lock()
_signature = None   # per input: ("tensor", shape, stride, dtype) or ("value", v)
_outputs = None     # ([(shape, dtype)] of the reference's outputs, whether it returned one)
_handles = itertools.count(1)
kernel_calls = 0    # how many times the op ran the kernel (the tests read it)
_instances = weakref.WeakValueDictionary()  # handle -> the ModelNew an op call runs


def kernel_available():
    """Whether the kernel can run here: a CUDA device for a kernel verified on a GPU;
    Triton's interpreter (TRITON_INTERPRET=1) for one verified on the CPU worker."""
    if VERIFIED_DEVICE == "cuda":
        return torch.cuda.is_available()
    return LANGUAGE == "triton" and os.environ.get("TRITON_INTERPRET") == "1"


def _kernel():
    """The kernel's module (kernel.py), imported on first use: a CUDA C++ kernel compiles
    when imported, so importing this package never compiles anything."""
    return importlib.import_module(__name__ + ".kernel")


def _meta(fn, *args):
    with torch.device("meta"):
        return fn(*args)


def verified_inputs():
    """The inputs the kernel was verified on, from the problem's get_inputs() (built on
    the meta device, so no memory is taken): per input, ("tensor", shape, stride, dtype)
    or ("value", v) for a non-tensor."""
    global _signature, _outputs
    with _lock:
        if _signature is not None:
            return _signature
        try:
            inputs = _meta(_reference.get_inputs)
        except Exception:  # e.g. get_inputs() moves its tensors to a device: build them
            inputs = _reference.get_inputs()
        sig = [("tensor", tuple(x.shape), tuple(x.stride()), x.dtype)
               if isinstance(x, torch.Tensor) else ("value", x) for x in inputs]
        _signature, _outputs = sig, _output_signature(sig)
        return _signature


def _output_signature(sig):
    """The reference's outputs on the verified inputs, for the op's fake implementation:
    from a run on meta tensors, else (a reference that needs real data) from one real run
    on the CPU. None when its outputs are not tensors: then there is no op, and every call
    takes the reference."""
    def run(device):
        torch.manual_seed(0)
        if device == "meta":
            ref = _meta(_reference.Model, *_reference.get_init_inputs())
            inputs = [torch.empty_strided(s[1], s[2], dtype=s[3], device="meta")
                      if s[0] == "tensor" else s[1] for s in sig]
        else:
            ref = _reference.Model(*_reference.get_init_inputs())
            inputs = [x.cpu() if isinstance(x, torch.Tensor) else x
                      for x in _reference.get_inputs()]
        with torch.no_grad():
            return ref(*inputs)
    for device in ("meta", "cpu"):
        try:
            out = run(device)
        except Exception:
            continue
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if not all(isinstance(o, torch.Tensor) for o in outs):
            return None
        return [(tuple(o.shape), o.dtype) for o in outs], not isinstance(out, (tuple, list))
    return None


def guard(*inputs):
    """True when `inputs` are what the kernel was verified on: as many, the same shapes,
    strides, dtypes and device type, equal non-tensor values, and none that needs a
    gradient while grad mode is on (the kernel has no backward). Other inputs take the
    reference's computation."""
    sig = _signature if _signature is not None else verified_inputs()
    if _outputs is None or len(inputs) != len(sig) or not kernel_available():
        return False
    for x, s in zip(inputs, sig):
        if s[0] == "value":
            if isinstance(x, torch.Tensor) or x != s[1]:
                return False
        elif (not isinstance(x, torch.Tensor) or tuple(x.shape) != s[1]
              or tuple(x.stride()) != s[2] or x.dtype != s[3]
              or x.device.type != VERIFIED_DEVICE
              or (x.requires_grad and torch.is_grad_enabled())):
            return False
    return True


def _with_values(tensors):
    it = iter(tensors)
    return [next(it) if s[0] == "tensor" else s[1] for s in _signature]


@torch.library.custom_op(OP_NAME, mutates_args=())
def _op(handle: int, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    global kernel_calls
    kernel_calls += 1
    out = _instances[handle](*_with_values(tensors))
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    # A custom op's outputs may not alias its inputs.
    ptrs = {t.data_ptr() for t in tensors}
    return [o.clone() if o.data_ptr() in ptrs else o for o in outs]


@_op.register_fake
def _(handle, tensors):
    # Only guarded (verified) inputs reach the op: its outputs are the reference's.
    device = tensors[0].device if tensors else torch.device(VERIFIED_DEVICE)
    return [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in _outputs[0]]


class Model(nn.Module):
    """A drop-in for the problem's Model: the same constructor and forward. `deploy` (default
    DEPLOY, what the job recommends) picks the path: "kernel" runs the verified kernel
    through the custom op OP_NAME (so it works under torch.compile) on inputs that pass
    guard() and the reference Model on any other; "eager" always runs the reference Model;
    "torch.compile" runs it under torch.compile. The kernel's ModelNew and the reference
    are built from the constructor's arguments with one seed, as the harness built them
    when it verified the kernel."""

    def __init__(self, *args, seed=0, deploy=None, **kwargs):
        super().__init__()
        deploy = DEPLOY if deploy is None else deploy
        if deploy not in _PATHS:
            raise ValueError(f"deploy must be one of {_PATHS}, not {deploy!r}")
        self.deploy = deploy
        verified_inputs()
        torch.manual_seed(seed)
        self.reference = _reference.Model(*args, **kwargs)
        self._compiled = torch.compile(self.reference) if deploy == "torch.compile" else None
        self.kernel = None
        self._handle = 0
        if deploy == "kernel" and kernel_available():
            torch.manual_seed(seed)
            self.kernel = _kernel().ModelNew(*args, **kwargs)
            self._handle = next(_handles)
            _instances[self._handle] = self.kernel

    def forward(self, *inputs):
        if self.kernel is not None and guard(*inputs):
            outs = _op(self._handle, [x for x in inputs if isinstance(x, torch.Tensor)])
            return outs[0] if _outputs[1] else tuple(outs)
        if self._compiled is not None:
            return self._compiled(*inputs)
        return self.reference(*inputs)


_default = None


def functional(*inputs):
    """The op as a function: Model(*get_init_inputs()) applied to `inputs` (one instance,
    built on first use with the DEPLOY path, on the device of the first tensor input)."""
    global _default
    if _default is None:
        _default = Model(*_reference.get_init_inputs())
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), None)
    if device is not None:
        _default.to(device)
    return _default(*inputs)
)py";

const char kTestFile[] = R"py(# Checks the package against the problem's reference: on the inputs the kernel was
# verified on (eager and under torch.compile, where the custom op must run the kernel),
# on inputs it was not (the reference's computation, the kernel untouched), and that
# kernel.py alone is a starting kernel (it defines ModelNew, which matches the reference).
#   TRITON_INTERPRET=1 python -m pytest <this folder>     (CPU-verified Triton kernels)
#   python -m pytest <this folder>                        (GPU-verified kernels, on a GPU)
import ast
import importlib.util
import sys

import pytest
import torch

from . import DEPLOY, FIGURES, LANGUAGE, START_KERNEL, VERIFIED_DEVICE, Model, functional, guard
from . import kernel_available, reference

package = sys.modules[__package__]  # its kernel_calls counts the op's kernel runs

if LANGUAGE == "cuda":
    _why = ("the kernel is CUDA C++ (torch.utils.cpp_extension.load_inline), verified on "
            f"{FIGURES['gpu_name']}: it compiles and runs only with nvcc and a CUDA device")
elif VERIFIED_DEVICE == "cuda":
    _why = (f"the kernel was verified on {FIGURES['gpu_name']} (cuda): this machine has no "
            "CUDA device, and the package does not run a GPU-verified kernel elsewhere")
else:
    _why = ("the kernel was verified under Triton's interpreter on the CPU: run the tests "
            "with TRITON_INTERPRET=1")
needs_kernel = pytest.mark.skipif(not kernel_available(), reason=_why)


def _tolerance(dtype):
    if FIGURES.get("atol") is not None and FIGURES.get("rtol") is not None:
        return FIGURES["atol"], FIGURES["rtol"]
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-2, 1e-2
    if dtype in (torch.float32, torch.complex64):
        return 1e-4, 1e-4
    if dtype in (torch.float64, torch.complex128):
        return 1e-7, 1e-7
    return 0.0, 0.0


def _close(actual, expected):
    actual = actual if isinstance(actual, (tuple, list)) else (actual,)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        atol, rtol = _tolerance(e.dtype)
        torch.testing.assert_close(a, e, atol=atol, rtol=rtol)


# The verified device when this machine has one; else the CPU, where every input takes
# the reference's path (the fallback test still runs).
DEVICE = VERIFIED_DEVICE if VERIFIED_DEVICE == "cpu" or torch.cuda.is_available() else "cpu"


def _verified_inputs(seed):
    torch.manual_seed(seed)
    return [x.to(DEVICE) if isinstance(x, torch.Tensor) else x for x in reference.get_inputs()]


def _models(deploy="kernel"):
    init = reference.get_init_inputs()
    model = Model(*init, deploy=deploy).to(DEVICE)
    torch.manual_seed(0)
    ref = reference.Model(*init).to(DEVICE)
    return model, ref


@needs_kernel
@torch.no_grad()
def test_verified_inputs_run_the_kernel_and_match_the_reference():
    model, ref = _models()
    for seed in (1, 2):
        inputs = _verified_inputs(seed)
        assert guard(*inputs)
        before = package.kernel_calls
        _close(model(*inputs), ref(*inputs))
        assert package.kernel_calls == before + 1
    inputs = _verified_inputs(3)
    _close(functional(*inputs), ref(*inputs))


@torch.no_grad()
def test_the_default_path_is_the_recommended_one():
    # DEPLOY is the job's recommendation (FIGURES["deploy"]): a PyTorch path the job found
    # faster than the kernel never runs the kernel; "kernel" runs it where it can.
    assert DEPLOY == (FIGURES["deploy"] or "kernel")
    model, ref = _models(deploy=None)
    assert model.deploy == DEPLOY
    inputs = _verified_inputs(7)
    before = package.kernel_calls
    _close(model(*inputs), ref(*inputs))
    ran_kernel = DEPLOY == "kernel" and kernel_available() and guard(*inputs)
    assert package.kernel_calls == before + (1 if ran_kernel else 0)
    with pytest.raises(ValueError):
        Model(*reference.get_init_inputs(), deploy="cuda graphs")


@needs_kernel
@torch.no_grad()
def test_under_torch_compile_the_op_runs_the_kernel():
    # aot_eager traces the op with its fake implementation, as inductor does, and
    # fullgraph=True fails on any graph break.
    model, ref = _models()
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    inputs = _verified_inputs(4)
    before = package.kernel_calls
    _close(compiled(*inputs), ref(*inputs))
    assert package.kernel_calls == before + 1


def _unverified_inputs(seed):
    """Inputs the kernel was not verified on that the reference accepts: every tensor's
    leading dimension one larger where the reference takes that, else the same values in
    another memory layout (the last two dimensions' strides swapped)."""
    inputs = _verified_inputs(seed)
    grown = [torch.cat([x, x[:1]]) if isinstance(x, torch.Tensor) and x.dim() > 0 else x
             for x in inputs]
    torch.manual_seed(0)
    try:
        reference.Model(*reference.get_init_inputs()).to(DEVICE)(*grown)
        return grown
    except Exception:
        return [x.transpose(-1, -2).contiguous().transpose(-1, -2)
                if isinstance(x, torch.Tensor) and x.dim() >= 2 else x for x in inputs]


@torch.no_grad()
def test_other_inputs_fall_back_to_the_reference():
    model, ref = _models()
    inputs = _unverified_inputs(5)
    assert not guard(*inputs)
    before = package.kernel_calls
    _close(model(*inputs), ref(*inputs))
    assert package.kernel_calls == before


@needs_kernel
@torch.no_grad()
def test_kernel_py_alone_is_a_starting_kernel():
    # A job's starting kernel is one Python source that defines ModelNew with the
    # problem's constructor and forward: kernel.py is that file, loaded here on its own.
    with open(START_KERNEL) as f:
        tree = ast.parse(f.read())
    assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
    spec = importlib.util.spec_from_file_location("kagent_start_kernel", START_KERNEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    init = reference.get_init_inputs()
    torch.manual_seed(0)
    candidate = module.ModelNew(*init).to(DEVICE)
    torch.manual_seed(0)
    ref = reference.Model(*init).to(DEVICE)
    inputs = _verified_inputs(6)
    _close(candidate(*inputs), ref(*inputs))


def test_figures_are_the_jobs():
    for key in ("job_id", "problem", "verdict", "gpu_name", "date", "median_ms",
                "speedup_vs_eager", "speedup_vs_compile", "speedup_vs_start"):
        assert key in FIGURES
    assert FIGURES["verdict"] == "VERDICT_CORRECT"
    assert package.__doc__ and FIGURES["job_id"] in package.__doc__
)py";

}  // namespace kagent::package_python
