# Forks until it cannot; every child names itself "kagent-red" and sleeps. The sandbox's
# limits stop it, its verdict is its own, and the suite checks that none of its processes
# outlive it.
import ctypes
import os
import time


def attack():
    libc = ctypes.CDLL(None)
    for _ in range(100000):
        try:
            if os.fork() == 0:
                libc.prctl(15, b"kagent-red", 0, 0, 0)   # PR_SET_NAME
                time.sleep(600)
                os._exit(0)
        except OSError:
            break
