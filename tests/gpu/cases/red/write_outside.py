# Tries to write outside its scratch directory: the shared /tmp and /dev/shm, the harness
# package (a module every later verdict would import), site-packages (a .pth runs at every
# interpreter start), the repository and root's home. Errors are swallowed: the suite
# checks that no file appeared.
import os
import site
import sys

MARK = "kagent-red-write"


def targets():
    out = ["/tmp/" + MARK, "/dev/shm/" + MARK, "/root/" + MARK, "/etc/" + MARK,
           "/var/tmp/" + MARK]
    harness = sys.modules.get("kagent_harness")
    if harness is not None and getattr(harness, "__file__", None):
        pkg = os.path.dirname(harness.__file__)
        out += [os.path.join(pkg, MARK + ".py"),
                os.path.join(os.path.dirname(os.path.dirname(pkg)), MARK)]
    for d in site.getsitepackages() + [site.getusersitepackages()]:
        out.append(os.path.join(d, MARK + ".pth"))
    return out


def attack():
    for path in targets():
        try:
            with open(path, "w") as f:
                f.write("import os; os.system('echo pwned')\n")
        except OSError:
            pass
