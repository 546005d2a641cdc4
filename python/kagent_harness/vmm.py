"""GPU memory shared between the supervisor and a sandboxed candidate's process.

Legacy CUDA IPC handles (what torch.multiprocessing shares) do not open inside the
candidate's sandbox (measured on the H200: "mapping of buffer object failed" under
bubblewrap). The CUDA driver's virtual memory API does: a physical allocation made with
cuMemCreate is exported as a POSIX file descriptor, the descriptor crosses to the child
over a Unix socket (SCM_RIGHTS), and the child imports and maps it. A descriptor names
one allocation and nothing else; the candidate cannot reach any other memory of the
supervisor through it.

  supervisor:  buf = SharedBuffer(nbytes); view = buf.view(offset, shape, stride, dtype)
               token = send_buffer(sock, buf)          # one fd, tagged with a token
  child:       bufs = FdInbox(sock); mem = bufs.take(token, nbytes)  # a MappedBuffer
               view = mem.view(offset, shape, stride, dtype)

Lifetime: a SharedBuffer (or an imported MappedBuffer) is unmapped and released when the
last tensor viewing it is gone (each view holds a reference to it through torch's
__cuda_array_interface__ import). The physical memory lives until both processes have
released it, so a child that keeps a mapping cannot make the supervisor's allocator hand
that memory to anything else. Callers synchronize before dropping views (work queued on a
view must be done before its range is unmapped); the release also synchronizes the
context first.

All calls need the current thread's CUDA context to be the device's primary context (the
one torch uses); `_context()` makes it so.
"""

import ctypes
import json
import os
import secrets
import socket

_POSIX_FD = 1          # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_PINNED = 1            # CU_MEM_ALLOCATION_TYPE_PINNED
_LOC_DEVICE = 1        # CU_MEM_LOCATION_TYPE_DEVICE
_READWRITE = 3         # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_GRANULARITY_MIN = 0   # CU_MEM_ALLOC_GRANULARITY_MINIMUM
MAX_FDS_PER_MESSAGE = 8


class VmmError(RuntimeError):
    pass


class _Loc(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Prop(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", _Loc), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Loc), ("flags", ctypes.c_int)]


_cu = None


def _driver():
    global _cu
    if _cu is None:
        try:
            _cu = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise VmmError(f"the CUDA driver library is not loadable: {e}") from e
    return _cu


def _ck(result, what):
    if result != 0:
        name = ctypes.c_char_p()
        try:
            _driver().cuGetErrorName(result, ctypes.byref(name))
        except (AttributeError, OSError):
            pass
        raise VmmError(f"{what} failed: CUresult {result}"
                       + (f" ({name.value.decode()})" if name.value else ""))


def _context():
    """The ordinal of torch's current device, with its primary context current on this
    thread (torch makes it current lazily; the driver API needs it now)."""
    import torch
    ordinal = torch.cuda.current_device()
    cu = _driver()
    ctx = ctypes.c_void_p()
    _ck(cu.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if not ctx.value:
        dev = ctypes.c_int()
        _ck(cu.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
        _ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        _ck(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ordinal


def _prop(ordinal):
    p = _Prop()
    p.type = _PINNED
    p.requestedHandleTypes = _POSIX_FD
    p.location = _Loc(_LOC_DEVICE, ordinal)
    return p


def granularity(ordinal):
    g = ctypes.c_size_t()
    _ck(_driver().cuMemGetAllocationGranularity(ctypes.byref(g), ctypes.byref(_prop(ordinal)),
                                                 _GRANULARITY_MIN),
        "cuMemGetAllocationGranularity")
    return g.value


def round_up(nbytes, unit):
    """`nbytes` rounded up to a whole number of `unit`s, at least one."""
    return max(unit, (int(nbytes) + unit - 1) // unit * unit)


def create(size, ordinal):
    """The handle of a new physical allocation of `size` bytes (a multiple of the
    granularity) on device `ordinal`."""
    handle = ctypes.c_uint64()
    _ck(_driver().cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(size),
                              ctypes.byref(_prop(ordinal)), ctypes.c_ulonglong(0)),
        "cuMemCreate")
    return handle.value


def map_range(ptr, size, handle, ordinal):
    """Maps `size` bytes of the physical allocation `handle` at the reserved address
    `ptr`, readable and writable by the device (nothing left mapped on failure)."""
    cu = _driver()
    _ck(cu.cuMemMap(ctypes.c_uint64(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                    ctypes.c_uint64(handle), ctypes.c_ulonglong(0)), "cuMemMap")
    acc = _Access(_Loc(_LOC_DEVICE, ordinal), _READWRITE)
    try:
        _ck(cu.cuMemSetAccess(ctypes.c_uint64(ptr), ctypes.c_size_t(size), ctypes.byref(acc),
                              ctypes.c_size_t(1)), "cuMemSetAccess")
    except VmmError:
        cu.cuMemUnmap(ctypes.c_uint64(ptr), ctypes.c_size_t(size))
        raise


class ReleasedOnDelete:
    """A driver resource released once: by release() (after the context's work is done,
    so nothing queued still uses it) or when the object is collected. Subclasses set
    `_released = False` once they hold it and give `_release(driver)`."""

    _released = True

    def release(self):
        if self._released:
            return
        self._released = True
        cu = _driver()
        cu.cuCtxSynchronize()
        self._release(cu)

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 - interpreter shutdown; the process ends anyway
            pass


class _Mapping(ReleasedOnDelete):
    """A physical allocation mapped at a reserved range of this process, readable and
    writable by the device; unmapped and released by release()."""

    def __init__(self, handle, size, ordinal):
        cu = _driver()
        self.handle, self.size, self.ordinal = handle, size, ordinal
        self.ptr = ctypes.c_uint64()
        _ck(cu.cuMemAddressReserve(ctypes.byref(self.ptr), ctypes.c_size_t(size),
                                   ctypes.c_size_t(0), ctypes.c_uint64(0),
                                   ctypes.c_ulonglong(0)), "cuMemAddressReserve")
        try:
            map_range(self.ptr.value, size, handle, ordinal)
        except VmmError:
            cu.cuMemAddressFree(self.ptr, ctypes.c_size_t(size))
            raise
        self._released = False

    def _release(self, cu):
        cu.cuMemUnmap(self.ptr, ctypes.c_size_t(self.size))
        cu.cuMemAddressFree(self.ptr, ctypes.c_size_t(self.size))
        cu.cuMemRelease(ctypes.c_uint64(self.handle))


class _Bytes:
    """What torch.as_tensor imports: the mapping's bytes. It holds the mapping, and the
    tensor holds it, so the range stays mapped while any view exists."""

    def __init__(self, mapping):
        self._mapping = mapping
        self.__cuda_array_interface__ = {"shape": (mapping.size,), "typestr": "|u1",
                                         "data": (mapping.ptr.value, False), "version": 3,
                                         "strides": None}


class _Buffer:
    def __init__(self, mapping):
        import torch
        self.mapping = mapping
        self.size = mapping.size
        self._bytes = torch.as_tensor(_Bytes(mapping), device=f"cuda:{mapping.ordinal}")

    def view(self, offset, shape, stride, dtype):
        """A tensor of `dtype` with `shape` and `stride` (elements) starting `offset`
        bytes into the buffer; ValueError when it does not fit."""
        import torch
        itemsize = torch.empty((), dtype=dtype).element_size()
        shape, stride = [int(s) for s in shape], [int(s) for s in stride]
        if len(shape) != len(stride) or any(s < 0 for s in shape + stride):
            raise ValueError("bad shape or stride")
        extent = 1 + sum((n - 1) * st for n, st in zip(shape, stride)) if all(shape) else 0
        offset = int(offset)
        if offset < 0 or offset % itemsize or offset + extent * itemsize > self.size:
            raise ValueError(f"view of {extent} x {itemsize} bytes at {offset} does not fit "
                             f"a buffer of {self.size}")
        flat = self._bytes[offset:offset + max(extent, 1) * itemsize].view(dtype)
        return flat.as_strided(shape, stride)


class SharedBuffer(_Buffer):
    """A new exportable allocation of at least `nbytes` on torch's current device."""

    def __init__(self, nbytes):
        ordinal = _context()
        size = round_up(nbytes, granularity(ordinal))
        handle = create(size, ordinal)
        try:
            mapping = _Mapping(handle, size, ordinal)
        except VmmError:
            _driver().cuMemRelease(ctypes.c_uint64(handle))
            raise
        super().__init__(mapping)

    def export_fd(self):
        """A new file descriptor for the allocation; the caller closes it."""
        fd = ctypes.c_int(-1)
        _ck(_driver().cuMemExportToShareableHandle(ctypes.byref(fd),
                                                   ctypes.c_uint64(self.mapping.handle),
                                                   _POSIX_FD, ctypes.c_ulonglong(0)),
            "cuMemExportToShareableHandle")
        return fd.value


class MappedBuffer(_Buffer):
    """An allocation imported from a descriptor another process exported (the descriptor
    is closed here whatever happens)."""

    def __init__(self, fd, size):
        try:
            ordinal = _context()
            handle = ctypes.c_uint64()
            _ck(_driver().cuMemImportFromShareableHandle(ctypes.byref(handle),
                                                         ctypes.c_void_p(fd), _POSIX_FD),
                "cuMemImportFromShareableHandle")
        finally:
            os.close(fd)
        try:
            mapping = _Mapping(handle.value, int(size), ordinal)
        except VmmError:
            _driver().cuMemRelease(handle)
            raise
        super().__init__(mapping)


def layout(tensors, align=256):
    """Byte offsets for private copies of `tensors` (None for what is not a tensor) that
    keep each one's strides, and the total size."""
    offsets, total = [], 0
    for x in tensors:
        if not hasattr(x, "stride"):
            offsets.append(None)
            continue
        extent = 1 + sum((n - 1) * st for n, st in zip(x.shape, x.stride())) \
            if x.numel() else 0
        total = (total + align - 1) // align * align
        offsets.append(total)
        total += max(extent, 1) * x.element_size()
    return offsets, total


def send_buffer(sock, buf):
    """Sends a descriptor of `buf` on `sock` with a fresh token; returns the token."""
    token = secrets.token_hex(8)
    fd = buf.export_fd()
    try:
        socket.send_fds(sock, [json.dumps({"token": token}).encode()], [fd])
    finally:
        os.close(fd)
    return token


class FdInbox:
    """The child's side of the descriptor channel: descriptors arrive in the order they
    were sent, each tagged with its token; one a message asks for may come after others
    that a failed request left unclaimed (those are closed)."""

    def __init__(self, sock, timeout_s=60.0):
        self.sock = sock
        self.sock.settimeout(timeout_s)

    def take(self, token, size):
        """The buffer sent with `token`, mapped here."""
        return MappedBuffer(self.take_fd(token), size)

    def take_fd(self, token):
        """The descriptor sent with `token` (the caller owns it); others that arrive
        first are closed. VmmError when the channel closes or times out first."""
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.sock, 4096, MAX_FDS_PER_MESSAGE)
            except OSError as e:  # socket.timeout included
                raise VmmError(f"no descriptor from the supervisor: {e!r}") from e
            if not data and not fds:
                raise VmmError("the descriptor channel closed")
            try:
                got = json.loads(data.decode()).get("token")
            except (ValueError, AttributeError, UnicodeDecodeError):
                got = None
            if got == token and len(fds) == 1:
                return fds[0]
            for fd in fds:
                os.close(fd)
