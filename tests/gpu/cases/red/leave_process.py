# Leaves a detached process behind (a new session, its own process group) that sleeps
# and holds 8 GiB of GPU memory: nothing of it may be left after the verdict.
import subprocess
import sys

CODE = ("import time, torch; x = torch.empty(8 << 30, dtype=torch.uint8, device='cuda'); "
        "torch.cuda.synchronize(); time.sleep(600)  # kagent-red-sleeper")


def attack():
    subprocess.Popen([sys.executable, "-c", CODE], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    import time
    time.sleep(8)   # let it take the memory
