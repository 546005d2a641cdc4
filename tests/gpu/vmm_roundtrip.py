#!/usr/bin/env python3
"""Shared GPU memory (kagent_harness.vmm) between this process and a child in the
candidate's sandbox shape (bubblewrap: PID, user, network namespaces, as nobody when
root), for the layouts the harness sends: contiguous, transposed, channels-last, bf16,
int64, a zero-size tensor and a plain value, and receive buffers the child writes.

  PYTHONPATH=python python3 tests/gpu/vmm_roundtrip.py      (needs bwrap on PATH)
Prints one JSON line per check and exits non-zero when one fails.
"""

import base64
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import time

import torch

from kagent_harness import transfer, vmm

CHILD = r"""
import base64, json, os, pickle, socket, sys, torch
from kagent_harness import vmm
sock = socket.socket(fileno=int(sys.argv[1]))
inbox = vmm.FdInbox(sock)
spec = pickle.loads(base64.b64decode(sys.stdin.readline()))
out = {}
for name in ("inputs", "outputs"):
    s = spec[name]
    buf = inbox.take(s["token"], s["size"])
    views = [buf.view(o, sh, st, getattr(torch, dt)) for _, o, sh, st, dt in s["items"]]
    out[name] = views
sums = [float(v.double().sum()) for v in out["inputs"]]
layouts = [[list(v.shape), list(v.stride())] for v in out["inputs"]]
for v, x in zip(out["outputs"], out["inputs"][:len(out["outputs"])]):
    v.copy_(x.reshape(v.shape) * 2)
torch.cuda.synchronize()
print(json.dumps({"sums": sums, "layouts": layouts, "pid": os.getpid(), "uid": os.getuid()}))
"""


class _Sup(transfer.TransferMixin):
    def __init__(self, sock):
        self.child = type("C", (), {"fd_channel": sock})()


def main():
    torch.zeros(1, device="cuda")
    inputs = [torch.randn(64, 33, device="cuda"),
              torch.randn(40, 70, device="cuda").t(),
              torch.randn(2, 3, 8, 8, device="cuda").to(memory_format=torch.channels_last),
              torch.randn(129, device="cuda").to(torch.bfloat16),
              torch.arange(1000, device="cuda", dtype=torch.int64),
              torch.zeros(0, 5, device="cuda")]
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sup = _Sup(parent)
    t0 = time.perf_counter()
    shared_in, field_in = sup._share(inputs)
    templates = [(list(x.shape), transfer._contiguous_strides(list(x.shape)), x.dtype)
                 for x in inputs[:2]]
    shared_out, field_out = sup._share(templates)
    for b in shared_out:
        b.fill_(float("nan"))
    torch.cuda.synchronize()
    share_ms = (time.perf_counter() - t0) * 1e3
    spec = {"inputs": pickle.loads(base64.b64decode(field_in)),
            "outputs": pickle.loads(base64.b64decode(field_out))}
    argv = [sys.executable, "-c", CHILD, str(child.fileno())]
    bwrap = shutil.which("bwrap")
    if bwrap:
        sandbox = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net",
                   "--unshare-ipc", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                   "--tmpfs", "/tmp"]
        for n in sorted(os.listdir("/dev")):
            if n.startswith("nvidia"):
                sandbox += ["--dev-bind", "/dev/" + n, "/dev/" + n]
        if os.geteuid() == 0:
            sandbox = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"] + \
                sandbox + ["--unshare-user"]
        argv = sandbox + ["--"] + argv
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path[1:] + [os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")]))
    p = subprocess.run(argv, input=base64.b64encode(pickle.dumps(spec)).decode() + "\n",
                       capture_output=True, text=True, pass_fds=[child.fileno()], env=env,
                       timeout=120)
    ok = True
    if p.returncode != 0:
        print(json.dumps({"check": "child", "ok": False, "err": p.stderr[-1500:]}))
        return 1
    got = json.loads(p.stdout.strip().splitlines()[-1])
    print(json.dumps({"check": "child ran", "ok": True, "sandboxed": bool(bwrap),
                      "pid": got["pid"], "uid": got["uid"], "share_ms": round(share_ms, 2)}))
    for i, x in enumerate(inputs):
        want = float(x.double().sum())
        good = abs(got["sums"][i] - want) <= 1e-6 * max(1.0, abs(want)) and \
            got["layouts"][i] == [list(x.shape), list(x.stride())]
        ok &= good
        print(json.dumps({"check": f"input {i} {x.dtype} {list(x.shape)} {list(x.stride())}",
                          "ok": good, "sum": got["sums"][i], "want": want}))
    for i, b in enumerate(shared_out):
        good = torch.equal(b, inputs[i].reshape(b.shape) * 2)
        ok &= good
        print(json.dumps({"check": f"output {i} written by the child", "ok": good}))
    # Released when the last view goes (and the descriptor sent for it is closed: a
    # descriptor in flight holds the allocation, as a child's mapping does).
    parent2, child2 = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sup2 = _Sup(parent2)
    free0 = torch.cuda.mem_get_info()[0]
    big, field = sup2._share([torch.ones(256 << 20, device="cuda")])   # 1 GiB
    torch.cuda.synchronize()
    os.close(vmm.FdInbox(child2, 5).take_fd(pickle.loads(base64.b64decode(field))["token"]))
    free1 = torch.cuda.mem_get_info()[0]
    del big
    torch.cuda.synchronize()
    free2 = torch.cuda.mem_get_info()[0]
    good = free1 < free0 - (1 << 29) and free2 > free1 + (1 << 29)
    ok &= good
    print(json.dumps({"check": "1 GiB shared buffer released with its last view", "ok": good,
                      "free_gib": [round(f / 2**30, 2) for f in (free0, free1, free2)]}))
    # Cost of sharing a 4 GiB input (allocation, mapping, copy).
    x = torch.randn(1 << 30, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    shared, _ = sup._share([x])
    torch.cuda.synchronize()
    print(json.dumps({"check": "share 4 GiB", "ok": True,
                      "ms": round((time.perf_counter() - t0) * 1e3, 1)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
