"""Kernel inputs laid out by columns, copied by rows before a kernel's row variant runs.

A kernel's row variant needs each operand's last axis unit-stride; it declines an input
whose columns are contiguous instead (``x.T`` of a C-ordered ``x``, an F-ordered array beside
C-ordered ones), and the strided variant then steps a whole row of memory per element, a loop
LLVM leaves scalar, vector math included. Copying such an input C-ordered by square tiles
(each tile read and written from L1) costs about one pass over it, after which the row
variant runs vectorized (measured on 4096x1024 float32: ``np.tanh(x.T * y)`` 38 ms strided,
eager NumPy 41 ms; the tiled copy alone 2.4 ms, where ``np.ascontiguousarray`` takes 30).
"""
from __future__ import annotations

import numba
import numpy as np

TILE = 32                # elements per tile side: two float64 tiles fit in L1
MIN_ELEMENTS = 1 << 14   # below this the strided variant costs less than the copy's call


def by_columns(array) -> bool:
    """A 2-d or 3-d input whose last axis is strided but whose second-to-last is unit-stride:
    its rows come from columns of memory."""
    return (type(array) is np.ndarray and 2 <= array.ndim <= 3
            and array.size >= MIN_ELEMENTS and array.shape[-1] > 1 and array.shape[-2] > 1
            and array.strides[-1] != array.itemsize and array.strides[-2] == array.itemsize)


def unit_rows(array) -> bool:
    """The row variant's own test (``prelude.unit_row``)."""
    return array.ndim == 0 or array.shape[-1] <= 1 or array.strides[-1] == array.itemsize


def copied_by_rows(inputs, copy) -> list | None:
    """``inputs`` with each laid out by columns replaced by a C-ordered copy (``copy(src,
    dst)`` on 3-d views); None when that leaves one whose rows are still not unit-stride,
    or when there is none to copy."""
    result, copied = list(inputs), False
    for k, array in enumerate(inputs):
        if unit_rows(array):
            continue
        if not by_columns(array):
            return None
        result[k] = np.empty(array.shape, array.dtype)
        copy(_three_d(array), _three_d(result[k]))
        copied = True
    return result if copied else None


def _three_d(array: np.ndarray) -> np.ndarray:
    return array if array.ndim == 3 else array[None]


def _jit(**options):
    """``numba.njit`` cached on disk where Numba finds a writable cache directory (it refuses
    ``cache=True`` otherwise), compiled in each process where not."""
    def compiled(fn):
        try:
            return numba.njit(cache=True, error_model="numpy", **options)(fn)
        except RuntimeError:
            return numba.njit(error_model="numpy", **options)(fn)
    return compiled


@numba.njit(inline="always", error_model="numpy")
def _copy_tile(src, dst, t, t0, t1):
    _, n0, n1 = dst.shape
    b, r = t // (t0 * t1), t % (t0 * t1)
    lo0, lo1 = r // t1 * TILE, r % t1 * TILE
    for i in range(lo0, min(n0, lo0 + TILE)):
        for j in range(lo1, min(n1, lo1 + TILE)):
            dst[b, i, j] = src[b, i, j]


@_jit()
def copy_serial(src, dst):
    """``dst[...] = src`` for 3-d arrays, tile by tile over the last two axes."""
    nb, n0, n1 = dst.shape
    t0, t1 = (n0 + TILE - 1) // TILE, (n1 + TILE - 1) // TILE
    for t in range(nb * t0 * t1):
        _copy_tile(src, dst, t, t0, t1)


@_jit(parallel=True)
def copy_parallel(src, dst):
    nb, n0, n1 = dst.shape
    t0, t1 = (n0 + TILE - 1) // TILE, (n1 + TILE - 1) // TILE
    for t in numba.prange(nb * t0 * t1):
        _copy_tile(src, dst, t, t0, t1)
