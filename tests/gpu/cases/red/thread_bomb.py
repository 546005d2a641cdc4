# Starts threads until it cannot, each sleeping.
import threading
import time


def attack():
    for _ in range(100000):
        try:
            threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
        except RuntimeError:
            break
