"""A pool of device buffers, so that a call's fresh results cost no ``cuMemAlloc``.

On an H200 a fresh 16 MB ``cuda.device_array`` took 0.107 ms, three times the kernel that
filled it: every call of a compiled function returns fresh arrays (the caller keeps them), so
allocation was most of a call. Here a result's memory comes back to the pool when the last
array over it dies (a ``MemoryPointer`` finalizer), and the next call of the same shapes takes
it again.

Reuse is safe against work still queued on the device: a freed buffer waits in ``pending``
until ``recycle()``, which the runtime calls at the start of each call and which synchronizes
the device first when anything is pending (a buffer may have been freed while a stream, ours or
the caller's, still used it). Buffers beyond ``LIMIT`` bytes go back to the driver, and an
allocation that runs out of memory empties the pool and tries once more.
"""
from __future__ import annotations

import functools
import math
import threading
import weakref

import numpy as np

from .cuda_arrays import contiguous_strides, device_array

GRAIN = 512                 # sizes are rounded up to this, so near sizes share buffers
LIMIT = 1 << 30             # bytes of free buffers kept


class BufferPool:
    def __init__(self, limit: int = LIMIT):
        self.limit = limit
        self._free: dict[int, list] = {}     # rounded size -> raw allocations
        self._pending: list[tuple] = []      # (size, raw, generation) released, not synchronized
        self._free_bytes = self._pending_bytes = 0
        # A finalizer may run inside the lock on the same thread (a collection triggered by an
        # allocation made while holding it): reentrant.
        self._lock = threading.RLock()
        self._generation, self._context = 0, None   # buffers belong to one CUDA context
        self.allocations = 0                # driver allocations made (tests read it)

    def empty(self, shape, dtype, stream):
        """A C-contiguous ``DeviceNDArray`` over a pooled buffer."""
        dtype = np.dtype(dtype)
        shape = tuple(int(n) for n in shape)
        nbytes = math.prod(shape) * dtype.itemsize
        size = max(GRAIN, -(-nbytes // GRAIN) * GRAIN)
        raw, generation = self._take(size), self._generation
        return self._array(shape, dtype, stream, size, raw,
                           functools.partial(self._release, size, raw, generation))

    def recycle(self) -> None:
        """Make buffers freed since the last call reusable, after a device synchronize (a
        buffer freed while the synchronize ran waits for the next call). A new CUDA context
        (another device selected, ``cuda.close()``) empties the pool."""
        self._follow_context()
        with self._lock:
            pending, self._pending, self._pending_bytes = self._pending, [], 0
        if not pending:
            return
        self._synchronize()
        with self._lock:
            for size, raw, generation in pending:
                if generation == self._generation and self._free_bytes + size <= self.limit:
                    self._free.setdefault(size, []).append(raw)
                    self._free_bytes += size

    def clear(self) -> None:
        with self._lock:
            self._free, self._free_bytes = {}, 0

    @property
    def free_bytes(self) -> int:
        return self._free_bytes

    def _follow_context(self) -> None:
        """The first context seen owns the buffers made so far; a later one starts anew."""
        context = self._current_context()
        if self._context is not None and self._context() is not context:
            with self._lock:
                self._generation += 1
                self._free, self._free_bytes = {}, 0
        if self._context is None or self._context() is not context:
            self._context = weakref.ref(context)

    def _take(self, size: int):
        with self._lock:
            free = self._free.get(size)
            if free:
                self._free_bytes -= size
                return free.pop()
        return self._allocate(size)

    def _allocate(self, size: int):
        self.allocations += 1
        try:
            return self._memalloc(size)
        except MemoryError:
            self.clear()          # give back what the pool holds and try once more
            return self._memalloc(size)

    # -- the driver (a test replaces these) ---------------------------------------------------
    @staticmethod
    def _memalloc(size: int):
        from numba import cuda
        from numba.cuda.cudadrv.driver import CudaAPIError
        try:
            return cuda.current_context().memalloc(size)
        except CudaAPIError as exc:
            raise MemoryError(str(exc)) from exc

    @staticmethod
    def _current_context():
        from numba import cuda
        return cuda.current_context()

    @staticmethod
    def _synchronize() -> None:
        from numba import cuda
        cuda.synchronize()

    @staticmethod
    def _array(shape, dtype, stream, size: int, raw, finalizer):
        """A ``DeviceNDArray`` over ``raw`` whose memory calls ``finalizer`` when the last
        array over it dies."""
        from numba.cuda.cudadrv.driver import MemoryPointer
        memory = MemoryPointer(raw.context, raw.device_pointer, size, finalizer=finalizer)
        return device_array(shape, contiguous_strides(shape, dtype.itemsize), dtype, stream,
                            memory)

    def _release(self, size: int, raw, generation: int) -> None:
        """``raw`` waits for ``recycle``, or goes back to the driver (Numba frees it when it
        is dropped here) when the pool holds ``limit`` bytes already."""
        with self._lock:
            if self._free_bytes + self._pending_bytes + size <= self.limit:
                self._pending.append((size, raw, generation))
                self._pending_bytes += size


POOL = BufferPool()
