# Starts threads until it cannot, each named "kagent-red" and sleeping.
import ctypes
import threading
import time


def _sleeper():
    ctypes.CDLL(None).prctl(15, b"kagent-red", 0, 0, 0)   # PR_SET_NAME, this thread
    time.sleep(600)


def attack():
    for _ in range(100000):
        try:
            threading.Thread(target=_sleeper, daemon=True).start()
        except RuntimeError:
            break
