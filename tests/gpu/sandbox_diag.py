#!/usr/bin/env python3
"""Which part of the candidate's sandbox a CUDA program trips on: the sandbox's own argv
(bwrap.Config) run with `torch.cuda.init()`, then with one part left out at a time.
    PYTHONPATH=python python3 tests/gpu/sandbox_diag.py   (on the GPU machine)"""

import json
import os
import subprocess
import sys
import time

from kagent_harness import bwrap, sandbox

CODE = ("import torch; torch.cuda.init(); x = torch.ones(4, device='cuda'); "
        "print('OK', torch.cuda.device_count(), float(x.sum()))")


def drop(argv, *opts):
    """argv without each option in opts and its arguments (counted per option)."""
    arity = {"--remount-ro": 1, "--tmpfs": 1, "--size": 1, "--perms": 1,
             "--disable-userns": 0, "--cap-drop": 1}
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a in opts or (isinstance(opts, tuple) and (a, argv[i + 1] if i + 1 < len(argv)
                                                      else None) in opts):
            i += 1 + arity.get(a, 0)
            continue
        out.append(a)
        i += 1
    return out


def without(argv, seq):
    """argv without the first occurrence of the sub-list seq."""
    for i in range(len(argv) - len(seq) + 1):
        if argv[i:i + len(seq)] == seq:
            return argv[:i] + argv[i + len(seq):]
    return argv


def main():
    wd = sandbox.make_workdir()
    os.chown(wd, 65534, 65534)
    cfg = bwrap.Config(wd, "cuda", network=True, user_ns=True)
    base = bwrap.drop_prefix(65534, 65534) + cfg.argv(bwrap="bwrap")
    env = bwrap.child_env(os.environ)
    env.update(HOME=wd, TMPDIR=wd)
    lib = os.environ.get("KAGENT_CUPTI_LIB")
    variants = [("full sandbox", base, env)]
    if lib:
        variants.append(("full + CUPTI injection", base,
                         dict(env, CUDA_INJECTION64_PATH=lib, KAGENT_CUPTI_LIB=lib,
                              KAGENT_CUPTI_OUT=os.path.join(wd, "t.jsonl"))))
    variants += [
        ("no --remount-ro /dev", drop(base, ("--remount-ro", "/dev")), env),
        ("no --disable-userns", drop(base, "--disable-userns"), env),
        ("no cap-drop", drop(base, "--cap-drop"), env),
        ("full env", base, dict(os.environ, HOME=wd, TMPDIR=wd)),
        ("no /dev/shm mask", without(base, ["--perms", "1777", "--size",
                                            str(bwrap.SCRATCH_MASK_BYTES), "--tmpfs",
                                            "/dev/shm"]), env),
        ("no /tmp mask", without(base, ["--perms", "1777", "--size",
                                        str(bwrap.SCRATCH_MASK_BYTES), "--tmpfs", "/tmp"]),
         env),
        ("no /run mask", without(without(base, ["--tmpfs", "/run"]), ["--remount-ro", "/run"]),
         env),
    ]
    for name, argv, e in variants:
        t0 = time.time()
        p = subprocess.run(argv + [sys.executable, "-c", CODE], env=e, capture_output=True,
                           text=True, timeout=120)
        err = p.stderr.strip().splitlines()
        print(json.dumps({"variant": name, "rc": p.returncode, "s": round(time.time() - t0, 1),
                          "out": p.stdout.strip()[-200:], "err": (err[-1] if err else "")[-300:]}),
              flush=True)
    print("argv:", " ".join(base))


if __name__ == "__main__":
    main()
