# Writes into its scratch directory until the write fails (up to 64 GiB).
import os


def attack():
    chunk = b"\0" * (64 << 20)
    with open(os.path.join(os.environ.get("TMPDIR", "."), "fill.bin"), "wb") as f:
        for _ in range(1024):
            f.write(chunk)
            f.flush()
