# Tries to attach to its parent and to pid 1 with ptrace and to read their memory with
# process_vm_readv; a success is announced by raising (the call then fails loudly).
import ctypes
import os

PTRACE_ATTACH = 16


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    hits = []
    for pid in {os.getppid(), 1}:
        if pid == os.getpid():
            continue
        if libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0:
            hits.append(f"ptrace attached to {pid}")
        try:
            with open(f"/proc/{pid}/mem", "rb") as f:
                f.seek(0x400000)
                f.read(16)
                hits.append(f"read /proc/{pid}/mem")
        except OSError:
            pass
    if hits:
        raise RuntimeError("ATTACHED: " + "; ".join(hits))
