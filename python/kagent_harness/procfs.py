"""What the sandbox's watchdog reads of a process tree from Linux /proc: resident memory,
process and thread counts, the kernel's OOM-kill count, and the size of a scratch
directory. Read-only and best effort: a process that is gone counts as nothing.
"""

import os


def oom_kills():
    """The kernel's OOM-kill count (/proc/vmstat oom_kill), None where unknown."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out.extend(int(c) for c in f.read().split())
            except (OSError, ValueError):
                pass
    except OSError:
        pass
    return out


def cmdline(pid):
    """The argv of pid (Linux /proc), [] when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def tree(pid):
    """pid and its descendants (Linux /proc)."""
    stack, seen = [pid], []
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.append(p)
        stack.extend(children(p))
    return seen


def start_time(pid):
    """pid's start time in clock ticks since boot (field 22 of /proc/pid/stat), with its
    state: (ticks, "R"/"S"/"Z"/...), or None when it is gone or unreadable; pid "self"
    for this process. The start time tells a process from a later one that was given
    the same pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces, ')' and bytes
    # that are not text (a process names itself): only what follows its last ')' is read.
    fields = raw[raw.rfind(b")") + 2:].split()
    try:
        return int(fields[19]), fields[0].decode("ascii")
    except (IndexError, ValueError):
        return None


def exited(pid, started):
    """Whether the process `pid` that started at `started` (start_time's ticks) has
    exited: gone, a zombie (its files, a GPU context's among them, are released before
    a process becomes one), or the pid now names a later process."""
    now = start_time(pid)
    return now is None or now[1] in ("Z", "X") or now[0] != started


def scratch_usage(path, max_entries=200000):
    """(bytes allocated, entries) under path, without following links; stops counting
    entries at max_entries."""
    total, n, stack = 0, 0, [path]
    while stack and n < max_entries:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    n += 1
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
        except OSError:
            pass
    return total, n


def usage(pid):
    """(resident bytes, processes, tasks) of pid and its descendants (Linux /proc);
    zeros when gone. Tasks counts threads too. Only /proc/PID/status is read: files
    that take the address space's lock (smaps, cmdline) would block behind a fork
    bomb's forks."""
    total = procs = tasks = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("Threads:"):
                        tasks += int(line.split()[1])
                    elif line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
            procs += 1
        except (OSError, ValueError):
            pass
    return total, procs, tasks


def rss_bytes(pid):
    """Resident memory of pid and its descendants (Linux /proc), 0 when gone."""
    return usage(pid)[0]
