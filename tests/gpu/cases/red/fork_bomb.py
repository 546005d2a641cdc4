# Forks until it cannot; every child sleeps. The sandbox's process limit stops it, its
# verdict is its own, and the suite checks that none of its processes outlive it.
import os
import time


def attack():
    for _ in range(100000):
        try:
            if os.fork() == 0:
                time.sleep(600)
                os._exit(0)
        except OSError:
            break
