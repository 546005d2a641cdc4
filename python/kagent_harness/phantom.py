"""Phantom device tensors for the compile dry run: any size, one small physical allocation.

The dry run (dryrun.py) calls the candidate's forward on stand-ins of a trial's inputs
and runs no kernel, so no stand-in byte is ever read or written; only the addresses,
shapes, strides and dtypes matter (Triton specializes on a pointer's alignment). Real
stand-ins cost a trial's bytes of device memory while a dry run lasts: on the H100 with
16 tasks in flight (2026-12-06) they ran the measurements beside them out of memory, and
bounding them to an eighth of the device (prepare.DryRunRoom) made the preparations
queue for it (a screen's took 125 s on average, 20 s before).

A phantom tensor is a reserved virtual range whose every CHUNK_BYTES piece maps the same
physical chunk (the CUDA driver's virtual memory API: one cuMemCreate, many cuMemMap), so
a 4 GiB stand-in costs 32 MiB per process, shared by all of them. Accesses, should any
happen, read and write that chunk: harmless, never an illegal address.

A phantom that outlives the dry run (a candidate that keeps a buffer it allocated in its
forward, or an input) would alias other data in the real calls, so after the run every
range still alive is materialized: its pieces are unmapped and one real allocation of
its size is mapped at the same addresses, which the surviving tensors keep. The process
then holds what real stand-ins would have left it.

    arena = PhantomArena()                   # VmmError where the API is unavailable
    t = arena.empty_strided(shape, stride, dtype)
    ...                                      # the dry run
    arena.materialize_survivors()            # bytes made real (0 when nothing survived)
"""

import ctypes
import gc
import weakref

from kagent_harness.vmm import (ReleasedOnDelete, VmmError, _Buffer, _ck, _context, _driver,
                                create, granularity, map_range, round_up)

# The physical chunk every piece of a phantom range maps: large enough that a
# multi-gigabyte stand-in takes few mappings (128 for 4 GiB), small beside a process's
# CUDA context (about 600 MiB).
CHUNK_BYTES = 32 << 20


class _PhantomRange(ReleasedOnDelete):
    """A reserved range of `size` bytes (a multiple of the arena's chunk), every chunk of
    it mapping the arena's physical chunk; released (unmapped, freed) when the last
    tensor viewing it is gone, or made real by materialize()."""

    def __init__(self, arena, nbytes):
        cu = _driver()
        self.arena, self.ordinal = arena, arena.ordinal
        chunk = arena.chunk
        self.size = round_up(nbytes, chunk)
        self.ptr = ctypes.c_uint64()
        self.real = None  # the real allocation's handle once materialized
        _ck(cu.cuMemAddressReserve(ctypes.byref(self.ptr), ctypes.c_size_t(self.size),
                                   ctypes.c_size_t(0), ctypes.c_uint64(0),
                                   ctypes.c_ulonglong(0)), "cuMemAddressReserve")
        self.pieces = 0
        try:
            for off in range(0, self.size, chunk):
                map_range(self.ptr.value + off, chunk, arena.handle, self.ordinal)
                self.pieces += 1
        except VmmError:
            self._unmap_pieces()
            cu.cuMemAddressFree(self.ptr, ctypes.c_size_t(self.size))
            raise
        self._released = False

    def _unmap_pieces(self):
        cu = _driver()
        for i in range(self.pieces):
            cu.cuMemUnmap(ctypes.c_uint64(self.ptr.value + i * self.arena.chunk),
                          ctypes.c_size_t(self.arena.chunk))
        self.pieces = 0

    def materialize(self):
        """Maps one real allocation of the range's size at its addresses in place of the
        shared chunk; the tensors viewing the range keep their pointers."""
        if self.real is not None or self._released:
            return 0
        cu = _driver()
        cu.cuCtxSynchronize()
        handle = create(self.size, self.ordinal)  # no device memory: nothing changed yet
        self._unmap_pieces()
        try:
            map_range(self.ptr.value, self.size, handle, self.ordinal)
        except VmmError:
            # The range is left unmapped: the caller must not use this process again.
            cu.cuMemRelease(ctypes.c_uint64(handle))
            raise
        self.real = handle
        return self.size

    def _release(self, cu):
        if self.real is not None:
            cu.cuMemUnmap(self.ptr, ctypes.c_size_t(self.size))
            cu.cuMemRelease(ctypes.c_uint64(self.real))
        else:
            self._unmap_pieces()
        cu.cuMemAddressFree(self.ptr, ctypes.c_size_t(self.size))


class PhantomArena:
    """Phantom tensors on torch's current device; its physical chunk lives while the
    arena or any of its ranges does. Raises VmmError where the driver's virtual memory
    API is unavailable."""

    def __init__(self, chunk_bytes=CHUNK_BYTES):
        self.ordinal = _context()
        g = granularity(self.ordinal)
        self.chunk = round_up(chunk_bytes, g)
        self.handle = create(self.chunk, self.ordinal)
        self._ranges = weakref.WeakSet()
        self.reserved = 0  # bytes of address space handed out

    def empty_strided(self, shape, stride, dtype):
        """An uninitialised tensor of `shape`, `stride` (elements) and `dtype` on a phantom
        range of its own."""
        import torch
        shape, stride = [int(s) for s in shape], [int(s) for s in stride]
        device = f"cuda:{self.ordinal}"
        if not all(shape):
            return torch.empty_strided(shape, stride, dtype=dtype, device=device)
        itemsize = torch.empty((), dtype=dtype).element_size()
        nbytes = (1 + sum((n - 1) * st for n, st in zip(shape, stride))) * itemsize
        rng = _PhantomRange(self, nbytes)
        self._ranges.add(rng)
        self.reserved += rng.size
        return _Buffer(rng).view(0, shape, stride, dtype)

    def materialize_survivors(self):
        """Makes every range a tensor still views real (see the module comment); returns
        the bytes that took. Raises VmmError when one cannot be (no device memory for
        it): the tensors that survived then alias or point nowhere, and the process must
        not run the candidate."""
        gc.collect()
        return sum(r.materialize() for r in list(self._ranges))

    def __del__(self):
        try:
            _driver().cuMemRelease(ctypes.c_uint64(self.handle))
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
