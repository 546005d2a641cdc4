"""Loads the GPU code of a candidate's C++ extensions before the GPU slot, without running
anything on the GPU (the candidate's process calls it after the candidate's import).

Under CUDA's lazy module loading (torch's default) a kernel compiled into an extension is
loaded onto the GPU at its first launch, which is the gate's first call, with the GPU held.
`cudaFuncGetAttributes` on a kernel's host-side entry loads its module the same way and
launches nothing. An extension's kernels are not listed anywhere the process can ask, so
this tries every function its dynamic symbol table defines under a C++ name: the runtime
answers "invalid device function" for what is not a kernel (that error is taken back with
cudaGetLastError, so torch's next launch check does not see it).

Everything here runs in the candidate's process, within the candidate's reach: it decides
nothing and only saves time.
"""

import ctypes
import os
import struct
import time

_SHT_DYNSYM = 11
_STT_FUNC = 2
_MAX_SYMBOLS = 200000


def defined_functions(path):
    """Names of the functions `path` (an ELF64 little-endian shared object) defines in its
    dynamic symbol table; [] when it is not one."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    names = []
    for sh in sections:
        if sh[1] != _SHT_DYNSYM:
            continue
        strtab = sections[sh[6]]  # sh_link: its string table
        str_off, str_size = strtab[4], strtab[5]
        off, size, entsize = sh[4], sh[5], sh[9] or 24
        for i in range(min(size // entsize, _MAX_SYMBOLS)):
            st_name, st_info, _other, st_shndx, _value, _size = struct.unpack_from(
                "<IBBHQQ", data, off + i * entsize)
            if st_info & 0xF != _STT_FUNC or st_shndx == 0 or not st_name \
                    or st_name >= str_size:
                continue
            end = data.index(b"\0", str_off + st_name)
            names.append(data[str_off + st_name:end].decode("ascii", "replace"))
    return names


def _cudart():
    """The CUDA runtime library mapped into this process (the one torch and the extensions
    use), or None."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.split()[-1] if line.strip() else ""
                if "libcudart.so" in os.path.basename(path):
                    return ctypes.CDLL(path)
    except OSError:
        pass
    return None


def preload(paths):
    """Loads the kernels of the shared objects `paths` (already imported by this process);
    returns {"objects", "tried", "kernels", "seconds"} or {"error": ...}."""
    t0 = time.perf_counter()
    rt = _cudart()
    if rt is None:
        return {"error": "no CUDA runtime library in this process"}
    get_attrs = rt.cudaFuncGetAttributes
    get_attrs.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    get_attrs.restype = ctypes.c_int
    last_error = rt.cudaGetLastError
    last_error.restype = ctypes.c_int
    peek = rt.cudaPeekAtLastError
    peek.restype = ctypes.c_int
    if peek() != 0:
        # An error of the candidate's own is pending: taking ours back would take it too.
        return {"error": f"CUDA error {peek()} pending from the candidate's import"}
    attrs = ctypes.create_string_buffer(1024)  # cudaFuncAttributes is far smaller
    tried = kernels = objects = 0
    for path in paths:
        try:
            names = [n for n in defined_functions(path) if n.startswith("_Z")]
            lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | os.RTLD_LAZY)
        except OSError:
            continue
        objects += 1
        for name in names:
            try:
                fn = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
            except AttributeError:
                continue
            tried += 1
            if get_attrs(attrs, fn) == 0:
                kernels += 1
            else:
                last_error()
    return {"objects": objects, "tried": tried, "kernels": kernels,
            "seconds": round(time.perf_counter() - t0, 4)}


def extension_paths(root):
    """Shared objects under `root` that this process has mapped (its C++ extensions)."""
    root = os.path.realpath(root)
    found = []
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6:
                    continue
                path = os.path.realpath(parts[-1])
                if path.endswith(".so") and path.startswith(root + os.sep) \
                        and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found
