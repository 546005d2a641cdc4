"""Built extensions kept by the candidate's source: a CUDA C++ candidate (load_inline) is
built once per source, not once per process (issue 20: a CUTLASS kernel takes 1-2 minutes
of nvcc; a job's baseline, profile and final run each start a process for the same
source).

Supervisor side; the candidate's side is prebuilt.py. The protocol, per process:
  - before the process is told to load (measure.write_candidate), `seed` copies the entry
    of the candidate's source, if there is one, into WORKDIR/kagent_prebuilt/ (the modules
    and a manifest naming each by its load_inline call's key);
  - in the process, prebuilt.py's load_inline loads a module the manifest names for the
    same call instead of building it, builds the others as before, and lists what it
    built in WORKDIR/kagent_builds.json;
  - on the process's "ready" reply (import and construction done, before it is given any
    input), `store` copies the modules that file lists into a new entry of that source.

What an entry may hold is whatever the process of that source put there: it is keyed by a
hash of the whole candidate source (with the torch and CUDA versions and the device)
computed here, never by a name the process gives, so a candidate can only reach a later
process of exactly its own source, which would run the same code; one made after it was
given inputs (the store happens at "ready", before any) cannot leave anything behind. Files
are copied only when they are regular files inside the process's workdir reached through
no link (_open_inside), at most MAX_MODULE_BYTES each. The entries live in a private directory of the supervisor
(make_workdir: 0700, hidden from every sandbox), at most `limit_bytes` in all, least
recently used first out. Thread-safe; a failure here is logged, never a verdict.
"""

import hashlib
import json
import os
import shutil
import stat
import threading
import time

PREBUILT_DIR = "kagent_prebuilt"     # in a candidate's workdir: what seed copied
BUILDS_FILE = "kagent_builds.json"   # in a candidate's workdir: what its process built
MANIFEST = "manifest.json"
MAX_MODULES = 8
MAX_MODULE_BYTES = 512 * 1024 * 1024
DEFAULT_LIMIT_BYTES = 1 << 30


def build_cache_limit():
    """The server's bound on kept modules, in bytes: KAGENT_BUILD_CACHE_BYTES (0 turns the
    cache off), default 1 GiB (a CUTLASS module is 2-10 MB)."""
    try:
        return max(0, int(os.environ.get("KAGENT_BUILD_CACHE_BYTES", DEFAULT_LIMIT_BYTES)))
    except ValueError:
        return DEFAULT_LIMIT_BYTES


def source_key(source, language, device):
    """The entry of a candidate: its source, its language and what a built module depends
    on (torch's and CUDA's versions, the device's name and compute capability)."""
    import torch
    parts = ["kagent-build-cache-v1", language or "", torch.__version__,
             str(torch.version.cuda), device]
    if device == "cuda" and torch.cuda.is_available():
        parts += [torch.cuda.get_device_name(), str(torch.cuda.get_device_capability())]
    h = hashlib.sha256("\0".join(parts).encode())
    h.update(b"\0" + source.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _open_inside(workdir, path):
    """A read-only descriptor of `path` (absolute, or relative to `workdir`) when it names
    a regular file inside workdir, reached without following any link (each component
    opened with O_NOFOLLOW from the one before, so a process swapping a component for a
    link meanwhile gets nothing); None otherwise. Never blocks on a FIFO."""
    rel = os.path.relpath(os.path.normpath(os.path.join(workdir, path)), workdir)
    parts = rel.split(os.sep)
    if rel.startswith("..") or os.path.isabs(rel) or not parts or "" in parts:
        return None
    flags_dir = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(workdir, flags_dir)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            nxt = os.open(part, flags_dir, dir_fd=fd)
            os.close(fd)
            fd = nxt
        out = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(out).st_mode):
        os.close(out)
        return None
    return out


def _read_inside(workdir, path, limit):
    """The bytes of a regular file inside workdir (_open_inside), None when it is not one
    or is over `limit` bytes."""
    fd = _open_inside(workdir, path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    return data if len(data) <= limit else None


def _copy_inside(workdir, path, dst, limit):
    """Copies a regular file inside workdir (_open_inside) to dst when it is at most
    `limit` bytes; its size, or None."""
    fd = _open_inside(workdir, path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        if os.fstat(f.fileno()).st_size > limit:
            return None
        with open(dst, "wb") as out:
            shutil.copyfileobj(f, out, 1 << 20)
        return os.fstat(f.fileno()).st_size


class BuildCache:
    def __init__(self, root, limit_bytes, log):
        self.root = root
        self.limit = int(limit_bytes)
        self.log = log
        self._lock = threading.Lock()
        self._entries = {}   # key -> [bytes, last use (monotonic)]
        self.hits = self.stores = 0

    def seed(self, key, workdir):
        """Copies the entry of `key` into workdir/PREBUILT_DIR; True when there was one."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or self.limit <= 0:
                return False
            entry[1] = time.monotonic()
            src = os.path.join(self.root, key)
            try:
                shutil.copytree(src, os.path.join(workdir, PREBUILT_DIR))
            except OSError as e:
                self.log.add(f"build cache: the entry {key[:12]} was not copied ({e})")
                return False
            self.hits += 1
            return True

    def store(self, key, workdir):
        """Keeps the modules workdir/BUILDS_FILE lists as the entry of `key`, unless it has
        one; returns how many."""
        if self.limit <= 0:
            return 0
        text = _read_inside(workdir, BUILDS_FILE, 1 << 20)
        try:
            built = json.loads(text).get("modules", [])[:MAX_MODULES]
        except (TypeError, ValueError, AttributeError):
            return 0
        with self._lock:
            if key in self._entries:
                return 0
        tmp = os.path.join(self.root, f".{key}.{threading.get_ident()}")
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        modules, total = [], 0
        for i, m in enumerate(built):
            try:
                path, name, call = str(m["path"]), str(m["name"]), str(m["key"])
            except (KeyError, TypeError):
                continue
            if not name.isidentifier():
                continue
            size = _copy_inside(workdir, path, os.path.join(tmp, f"{i}.so"), MAX_MODULE_BYTES)
            if size is None:
                continue
            modules.append({"key": call, "name": name, "file": f"{i}.so"})
            total += size
        if not modules or total > self.limit:
            shutil.rmtree(tmp, ignore_errors=True)
            return 0
        with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as f:
            json.dump({"modules": modules}, f)
        for dirpath, _dirs, files in os.walk(tmp):
            os.chmod(dirpath, 0o755)  # readable by a candidate running as another user
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o644)
        with self._lock:
            if key in self._entries:
                shutil.rmtree(tmp, ignore_errors=True)
                return 0
            self._evict(self.limit - total)
            os.rename(tmp, os.path.join(self.root, key))
            self._entries[key] = [total, time.monotonic()]
            self.stores += 1
        self.log.add(f"build cache: kept {len(modules)} built module(s), {total / 2**20:.1f} "
                     f"MiB, for source {key[:12]}")
        return len(modules)

    def _evict(self, room):
        """Drops least recently used entries until at most `room` bytes are kept (lock held)."""
        kept = sum(e[0] for e in self._entries.values())
        for key, _ in sorted(self._entries.items(), key=lambda kv: kv[1][1]):
            if kept <= room:
                break
            kept -= self._entries.pop(key)[0]
            shutil.rmtree(os.path.join(self.root, key), ignore_errors=True)

    def bytes(self):
        with self._lock:
            return sum(e[0] for e in self._entries.values())

    def close(self):
        with self._lock:
            self._entries.clear()
            shutil.rmtree(self.root, ignore_errors=True)
