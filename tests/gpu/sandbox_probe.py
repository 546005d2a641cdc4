#!/usr/bin/env python3
"""What the GPU machine allows a candidate's sandbox, printed one line per probe.

Run on the GPU machine (bwrap on PATH, e.g. from a gpu-bundle): python3 sandbox_probe.py
It checks, each in a fresh process:
  - CUDA and a Triton kernel inside bubblewrap (PID, network, IPC, mount namespaces, a
    read-only root, a private scratch), as root and as nobody in a user namespace;
  - whether a legacy CUDA IPC handle (what torch.multiprocessing shares) opens across a
    PID namespace, and whether a VMM allocation exported as a POSIX file descriptor does;
  - whether ncu profiles a kernel launched inside the sandbox.
Nothing here changes the GPU's settings.
"""

import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRATCH = tempfile.mkdtemp(prefix="kagent-probe-")
os.chmod(SCRATCH, 0o777)


def bwrap_argv(pid=True, user=False, net=True, uid=None):
    argv = []
    if uid is not None:
        argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]
    argv += [shutil.which("bwrap"), "--die-with-parent", "--unshare-ipc", "--unshare-uts"]
    if pid:
        argv.append("--unshare-pid")
    if net:
        argv.append("--unshare-net")
    if user:
        argv.append("--unshare-user")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev"]
    for name in sorted(os.listdir("/dev")):
        if name.startswith("nvidia"):
            argv += ["--dev-bind", "/dev/" + name, "/dev/" + name]
    argv += ["--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm",
             "--bind", SCRATCH, SCRATCH, "--chdir", SCRATCH,
             "--setenv", "HOME", SCRATCH, "--setenv", "TMPDIR", SCRATCH,
             "--setenv", "TRITON_CACHE_DIR", SCRATCH + "/triton", "--"]
    return argv


CUDA_AND_TRITON = r"""
import os, time, torch, triton, triton.language as tl
t0 = time.time()
@triton.jit
def k(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)
x = torch.arange(1000, device="cuda", dtype=torch.float32); y = torch.empty_like(x)
k[(4,)](x, y, 1000, B=256); torch.cuda.synchronize()
print("OK", float(y.sum()), "uid", os.getuid(), "pid", os.getpid(), "ppid", os.getppid(),
      "procs", len([p for p in os.listdir("/proc") if p.isdigit()]),
      "s", round(time.time() - t0, 2))
"""


def run(name, argv, timeout=180, **kw):
    t0 = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
        out = (p.stdout.strip().splitlines() or [""])[-1]
        err = p.stderr.strip()[-600:]
        print(json.dumps({"probe": name, "rc": p.returncode, "s": round(time.time() - t0, 2),
                          "out": out[-400:], "err": err if p.returncode else err[-200:]}),
              flush=True)
        return p
    except subprocess.TimeoutExpired:
        print(json.dumps({"probe": name, "rc": "timeout"}), flush=True)
        return None


def legacy_ipc():
    import torch
    from torch.multiprocessing.reductions import reduce_tensor
    t = torch.arange(1, 1025, dtype=torch.float32, device="cuda")
    fn, args = reduce_tensor(t)
    path = os.path.join(SCRATCH, "ipc.pkl")
    with open(path, "wb") as f:
        pickle.dump((fn, args), f)
    os.chmod(path, 0o644)
    code = ("import pickle, torch; fn, a = pickle.load(open(%r, 'rb')); "
            "print('OK', float(fn(*a).sum()))" % path)
    for label, argv in (("no sandbox", []), ("bwrap, no pid ns", bwrap_argv(pid=False)),
                        ("bwrap, pid ns", bwrap_argv(pid=True))):
        run("legacy cuda ipc: " + label, argv + [sys.executable, "-c", code])
    del t


VMM = r'''
import ctypes, os, sys, torch
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUresult {r}")
class Loc(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]
class Flags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]
class Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", Loc), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", Flags)]
class Access(ctypes.Structure):
    _fields_ = [("location", Loc), ("flags", ctypes.c_int)]
torch.zeros(1, device="cuda")
prop = Prop(); prop.type = 1; prop.requestedHandleTypes = 1; prop.location = Loc(1, 0)
gran = ctypes.c_size_t()
ck(cu.cuMemGetAllocationGranularity(ctypes.byref(gran), ctypes.byref(prop), 0), "granularity")
n = 1024; size = ((n * 4 + gran.value - 1) // gran.value) * gran.value
def mapped(handle):
    ptr = ctypes.c_uint64()
    ck(cu.cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                              ctypes.c_uint64(0), ctypes.c_ulonglong(0)), "reserve")
    ck(cu.cuMemMap(ptr, ctypes.c_size_t(size), ctypes.c_size_t(0), handle,
                   ctypes.c_ulonglong(0)), "map")
    acc = Access(Loc(1, 0), 3)
    ck(cu.cuMemSetAccess(ptr, ctypes.c_size_t(size), ctypes.byref(acc), ctypes.c_size_t(1)),
       "access")
    class W:
        __cuda_array_interface__ = {"shape": (n,), "typestr": "<f4", "data": (ptr.value, False),
                                    "version": 3, "strides": None}
    return torch.as_tensor(W(), device="cuda")
if sys.argv[1] == "export":
    h = ctypes.c_uint64()
    ck(cu.cuMemCreate(ctypes.byref(h), ctypes.c_size_t(size), ctypes.byref(prop),
                      ctypes.c_ulonglong(0)), "create")
    t = mapped(h)
    t.copy_(torch.arange(1, n + 1, dtype=torch.float32, device="cuda"))
    torch.cuda.synchronize()
    fd = ctypes.c_int(-1)
    ck(cu.cuMemExportToShareableHandle(ctypes.byref(fd), h, 1, ctypes.c_ulonglong(0)), "export")
    import subprocess
    child = sys.argv[2:] + [sys.executable, __file__, "import", str(fd.value)]
    p = subprocess.run(child, pass_fds=[fd.value], capture_output=True, text=True, timeout=120)
    print(p.stdout.strip() or ("FAIL " + p.stderr.strip()[-400:]))
else:
    fd = int(sys.argv[2]); h = ctypes.c_uint64()
    ck(cu.cuMemImportFromShareableHandle(ctypes.byref(h), ctypes.c_void_p(fd), 1), "import")
    t = mapped(h)
    print("OK", float(t.sum()), "procs", len([p for p in os.listdir("/proc") if p.isdigit()]))
'''


def vmm_fd():
    path = os.path.join(SCRATCH, "vmm.py")
    with open(path, "w") as f:
        f.write(VMM)
    os.chmod(path, 0o644)
    for label, prefix in (("no sandbox", []), ("bwrap, pid ns", bwrap_argv(pid=True)),
                          ("bwrap, pid+user ns, nobody", bwrap_argv(pid=True, user=True,
                                                                    uid=65534))):
        run("vmm posix fd: " + label, [sys.executable, path, "export"] + prefix)


def ncu_inside():
    ncu = shutil.which("ncu") or next(
        (os.path.join(r, "ncu") for r, _, fs in os.walk("/opt/nvidia") if "ncu" in fs), None)
    if not ncu:
        print(json.dumps({"probe": "ncu", "rc": "no ncu found"}))
        return
    code = os.path.join(SCRATCH, "cuda_triton.py")
    with open(code, "w") as f:
        f.write(CUDA_AND_TRITON)
    os.chmod(code, 0o644)
    for label, prefix in (("no sandbox", []), ("bwrap pid ns, shared net", bwrap_argv(net=False)),
                          ("bwrap pid+net ns", bwrap_argv())):
        run("ncu: " + label, [ncu, "--target-processes", "all", "--metrics",
                              "gpu__time_duration.sum", "--csv"] + prefix +
            [sys.executable, code], timeout=240)


def main():
    print(json.dumps({"probe": "host", "uname": os.uname().release,
                      "bwrap": shutil.which("bwrap"),
                      "userns": open("/proc/sys/user/max_user_namespaces").read().strip(),
                      "dev": sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))}))
    run("bwrap version", [shutil.which("bwrap"), "--version"])
    run("bwrap true", bwrap_argv() + ["true"])
    code = os.path.join(SCRATCH, "cuda_triton.py")
    with open(code, "w") as f:
        f.write(CUDA_AND_TRITON)
    os.chmod(code, 0o644)
    run("cuda+triton: no sandbox", [sys.executable, code])
    run("cuda+triton: bwrap as root", bwrap_argv() + [sys.executable, code])
    run("cuda+triton: bwrap, user ns, as nobody",
        bwrap_argv(user=True, uid=65534) + [sys.executable, code])
    for probe in (legacy_ipc, vmm_fd) + ((ncu_inside,) if "--ncu" in sys.argv else ()):
        try:
            probe()
        except Exception as e:  # noqa: BLE001 - the next probe still runs
            print(json.dumps({"probe": probe.__name__, "error": repr(e)}), flush=True)


if __name__ == "__main__":
    main()
