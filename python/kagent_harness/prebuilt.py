"""The candidate's side of the build cache (build_cache.py says what the supervisor does).

Installed in the candidate's process before its code is imported: torch's
`torch.utils.cpp_extension.load_inline` is wrapped so that a call whose arguments match a
module the supervisor copied into WORKDIR/kagent_prebuilt/ (an earlier process of the same
source built it) imports that module instead of building it again; any other call builds
as before, and what it built is listed in WORKDIR/kagent_builds.json for the supervisor.
Calls with is_python_module=False (a library loaded into torch.ops) and
`torch.utils.cpp_extension.load` (sources in files) are not cached.

Everything here is within the candidate's reach, like the rest of this process: it decides
nothing. The supervisor keys what it keeps by the whole source and copies only regular
files of this process's workdir (build_cache.py).
"""

import hashlib
import importlib.util
import inspect
import json
import os
import sys

from kagent_harness.build_cache import BUILDS_FILE, MANIFEST, PREBUILT_DIR

# What a load_inline call's key leaves out: how loudly it builds.
_NOT_KEYED = ("verbose",)


def call_key(bound_arguments):
    """The key of a load_inline call: a hash of its arguments (sources, flags, names)."""
    args = {k: v for k, v in bound_arguments.items() if k not in _NOT_KEYED}
    text = json.dumps(args, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Prebuilt:
    """The wrapper's state: the supervisor's manifest, what was loaded and built."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.loaded = 0
        self.built = []
        self.manifest = {}
        path = os.path.join(workdir, PREBUILT_DIR, MANIFEST)
        try:
            with open(path, encoding="utf-8") as f:
                for m in json.load(f).get("modules", []):
                    self.manifest[m["key"]] = m
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass

    def load(self, entry):
        """Imports the module of a manifest entry under the name it was built with."""
        path = os.path.join(self.workdir, PREBUILT_DIR, entry["file"])
        spec = importlib.util.spec_from_file_location(entry["name"], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[entry["name"]] = module
        self.loaded += 1
        return module

    def record(self, key, module):
        path = getattr(module, "__file__", None)
        if not path:
            return
        self.built.append({"key": key, "name": module.__name__,
                           "path": os.path.relpath(os.path.realpath(path),
                                                   os.path.realpath(self.workdir))})
        tmp = os.path.join(self.workdir, BUILDS_FILE + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"modules": self.built}, f)
        os.replace(tmp, os.path.join(self.workdir, BUILDS_FILE))


def install(workdir):
    """Wraps torch.utils.cpp_extension.load_inline for this process; returns the state
    (None when torch's extension builder cannot be imported)."""
    try:
        from torch.utils import cpp_extension
    except Exception:  # noqa: BLE001 - no extension builder: nothing to wrap
        return None
    original = cpp_extension.load_inline
    state = Prebuilt(workdir)
    signature = inspect.signature(original)

    def load_inline(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return original(*args, **kwargs)
        bound.apply_defaults()
        if not bound.arguments.get("is_python_module", True):
            return original(*args, **kwargs)
        key = call_key(bound.arguments)
        entry = state.manifest.get(key)
        if entry is not None:
            try:
                return state.load(entry)
            except Exception as e:  # noqa: BLE001 - build it instead
                sys.stderr.write(f"kagent: the prebuilt module {entry.get('name')} did not "
                                 f"load ({type(e).__name__}: {e}); building it\n")
        module = original(*args, **kwargs)
        try:
            state.record(key, module)
        except OSError as e:
            sys.stderr.write(f"kagent: the build of {bound.arguments.get('name')} was not "
                             f"listed for the build cache: {e}\n")
        return module

    load_inline.__wrapped__ = original
    load_inline.__doc__ = original.__doc__
    cpp_extension.load_inline = load_inline
    return state
