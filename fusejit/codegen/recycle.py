"""Large kernel outputs reuse the memory of outputs the caller has dropped.

A fresh large buffer is page-faulted in, 4 KiB at a time, the first time a kernel writes it
whenever malloc hands out memory it had given back to the system (glibc maps large blocks
anew and trims its heap's top). A loop that keeps its last result while computing the next
(``y = f(x)`` again and again) hits that on every call: the 8-op chain on 4096x1024 float32
took 3.0 ms with 336-506 page faults per call, 1.5 ms with none when it reused a buffer.

Each large output is made from a ``Block`` (a ctypes array over one buffer): NumPy keeps the
block alive from the output and from every view derived from it (as ``base``, directly or
through the output), so the block dies exactly when no array can reach its memory, and its
buffer joins a free list for the next output of that size. Free buffers are kept up to
``FUSEJIT_RECYCLE_MAX_MB`` (0: never), the oldest dropped first; ``release()`` drops them all.
"""
from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections import OrderedDict

import numpy as np

from .. import config

RECYCLE_MAX_MB = 256


class Recycled:
    """What every block type shares (``Block`` types are made per buffer size: a ctypes array
    of that many bytes, so that NumPy sees a writeable buffer and ``flags.writeable`` can be
    set back to True on a result). A block is never copied or pickled: a second owner of one
    buffer would hand it back twice."""

    __slots__ = ()

    def __del__(self):
        # at interpreter exit the pool (or contextlib) may already be gone
        try:  # noqa: SIM105
            POOL.give_back(self._raw)
        except Exception:   # noqa: BLE001
            pass

    def __reduce__(self):
        raise TypeError("the owner of a recycled output buffer cannot be copied or pickled; "
                        "copy the array instead")

    def __copy__(self):
        return self.__reduce__()

    def __deepcopy__(self, memo):
        return self.__reduce__()


@functools.lru_cache(maxsize=64)
def block_type(nbytes: int) -> type:
    return type("Block", (Recycled, ctypes.c_char * nbytes), {})


class Pool:
    """Free buffers by size, oldest first, at most ``FUSEJIT_RECYCLE_MAX_MB`` in all."""

    def __init__(self):
        self.lock = threading.RLock()   # ``give_back`` runs wherever the last view dies
        self.free: OrderedDict[int, np.ndarray] = OrderedDict()   # id(raw) -> raw
        self.total = 0

    def take(self, nbytes: int) -> np.ndarray:
        """A buffer of ``nbytes`` bytes (uint8): a free one when there is one, else new."""
        with self.lock:
            for key, raw in self.free.items():
                if raw.nbytes == nbytes:
                    del self.free[key]
                    self.total -= nbytes
                    return raw
        return np.empty(nbytes, np.uint8)

    def give_back(self, raw: np.ndarray) -> None:
        limit = config.recycle_max_bytes(RECYCLE_MAX_MB)
        with self.lock:
            if raw.nbytes > limit or id(raw) in self.free:
                return
            self.free[id(raw)] = raw
            self.total += raw.nbytes
            while self.total > limit:
                _, oldest = self.free.popitem(last=False)
                self.total -= oldest.nbytes

    def release(self) -> int:
        """Drops every free buffer; returns the bytes dropped."""
        with self.lock:
            dropped, self.total = self.total, 0
            self.free.clear()
        return dropped

    def renew_lock(self) -> None:
        """In a forked child: another thread of the parent may have held the lock."""
        self.lock = threading.RLock()


POOL = Pool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=POOL.renew_lock)


def array_in(raw: np.ndarray, offset: int, shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A C-contiguous array of ``shape``/``dtype`` at ``offset`` in ``raw`` (a buffer from
    ``POOL.take``), which goes back to the pool when no array reaches it any more."""
    block = block_type(raw.nbytes).from_buffer(raw)
    block._raw = raw
    return np.ndarray(shape, dtype, buffer=block, offset=offset)


def release() -> int:
    """Drops the free buffers kept for reuse (``torch.cuda.empty_cache``'s role for the
    CPU's large outputs); returns how many bytes that gave back to the allocator."""
    return POOL.release()
