# Signals everything it can reach: its parent, every process it sees in /proc, and -1
# (every process it may signal). Inside its PID namespace it sees only its sandbox; the
# suite checks that the harness server survives and measures the next candidate.
import os
import signal


def attack():
    targets = {os.getppid()}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            targets.add(int(name))
    for pid in sorted(targets):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
