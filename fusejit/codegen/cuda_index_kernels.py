"""The two hand-written CUDA kernels behind device indexing with one integer array.

Both see the indexed array as ``(outer, rows, inner)`` (the dims before, at and after the
indexed axis) and the index as a flat array of ``n`` entries. NumPy's negative indices wrap;
an index out of range is not read or written, and sets ``bad[0]``, which the runtime reads
after the call (it then raises, and the call is traced again, where NumPy raises its own
IndexError from the user's line). Imported only when a program uses them.
"""
from numba import cuda, int64


@cuda.jit(device=True, inline="always")
def row_of(idx, i, rows):
    """``idx[i]`` wrapped like NumPy's negative indices; -1 when out of range."""
    k = int64(idx[i])
    if k < 0:
        k += rows
    return k if k >= 0 and k < rows else -1


@cuda.jit(cache=True)
def gather_rows(src, idx, out, bad):
    """``out[o, i, j] = src[o, idx[i], j]``."""
    outer, n, inner = out.shape
    for t in range(cuda.grid(1), outer * n * inner, cuda.gridsize(1)):
        j = t % inner
        i = (t // inner) % n
        o = t // (inner * n)
        k = row_of(idx, i, src.shape[1])
        if k >= 0:
            out[o, i, j] = src[o, k, j]
        else:
            bad[0] = 1


@cuda.jit(cache=True)
def scatter_rows(values, idx, out, bad):
    """``out[o, idx[i], j] = values[o, i, j]`` (the runtime passes one index: no duplicates,
    whose order NumPy defines and threads would not)."""
    outer, n, inner = values.shape
    for t in range(cuda.grid(1), outer * n * inner, cuda.gridsize(1)):
        j = t % inner
        i = (t // inner) % n
        o = t // (inner * n)
        k = row_of(idx, i, out.shape[1])
        if k >= 0:
            out[o, k, j] = values[o, i, j]
        else:
            bad[0] = 1
