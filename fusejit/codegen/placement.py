"""Output arrays placed apart from the arrays a kernel reads.

A load whose address agrees with a pending store's in the low address bits waits for that
store, whatever the high bits say: x86 cores compare only those bits when they decide whether
a load depends on an earlier store (12 bits classically, "4K aliasing"; 20 bits on the Xeon
this was measured on). A kernel whose output starts a few bytes *after* an input modulo that
span stores each vector just where its next loads look, and every load waits. glibc hands
out equal-sized large blocks 16 bytes apart modulo 1 MiB once it keeps freed memory in its
heap (as a long-running process does), so ``out = f(x)`` lands there by default: tanh-GELU
on 4096x1024 float32 measured 7.5 ms instead of 2.1 ms.

Large outputs are therefore views into a slightly larger buffer, at an offset (a multiple of
64 bytes, so also cache-line aligned) whose distance from every input's start modulo 4 KiB is
0 or at least ``BAND`` (which implies the same modulo any larger power of two).
"""
from __future__ import annotations

import math

import numpy as np

from . import recycle

SPAN = 4096          # the smallest aliasing span to keep apart from (any larger one follows)
BAND = 512           # out - in (mod SPAN) in (0, BAND): measured slow up to 256 bytes
STEP = 64            # candidate offsets: cache-line aligned
MIN_BYTES = 1 << 20  # smaller outputs: plain np.empty (the two address reads cost ~5 us)


def empty_apart(shape, dtype, inputs) -> np.ndarray:
    """``np.empty(shape, dtype)``, placed apart from the ndarrays in ``inputs`` when large
    (then a C-contiguous array made from a ``recycle.Block``, in a buffer a dropped output
    of the same size left when there is one; ``flags.owndata`` is False)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    raw = recycle.POOL.take(nbytes + SPAN)
    offset = apart_offset(raw.ctypes.data, [a.ctypes.data for a in inputs
                                            if type(a) is np.ndarray and a.nbytes >= STEP])
    return recycle.array_in(raw, offset, tuple(shape), dtype)


def apart_offset(start: int, addresses: list[int]) -> int:
    """The first cache-line-aligned offset from ``start`` (below SPAN) that is placed apart
    from every address; the first aligned one when none is (more than SPAN/BAND inputs)."""
    first = -start % STEP
    for offset in range(first, SPAN, STEP):
        if all(is_apart(start + offset, address) for address in addresses):
            return offset
    return first


def is_apart(out: int, address: int) -> bool:
    distance = (out - address) % SPAN
    return distance == 0 or distance >= BAND
