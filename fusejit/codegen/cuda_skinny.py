"""``matmul`` with few output rows (``m <= SKINNY_ROWS``: a decoder's one token, a batch of
vectors) as a split-K kernel: the tiled kernel gave such a product a handful of blocks, each
walking the whole inner dimension (an H200 took 0.3 ms for 1x3072 @ 3072x768).

A block owns 32 output columns of one batch entry (grid-stride over batch x column tiles). Its
``32 x S`` threads (``S = blockDim.y``, a power of two) split the inner dimension: thread
``(x, y)`` sums ``a[r, kk] * b[kk, col]`` over ``kk = y, y + S, ...`` for every row ``r``
(reads of ``b`` coalesce along the columns, ``a``'s are one address per warp), then a
shared-memory tree adds the ``S`` partial sums and the first row of threads runs the fused
epilogue and stores.
"""
from __future__ import annotations

from .cuda_emit import indent, unravel_lines
from .cuda_reduce import ctor
from .numba_cuda import HEADER, prelude_hash

SKINNY_ROWS = 4
WIDTH = 32           # output columns per block (one warp across)
# Threads along the inner dimension on a GPU (blockDim.y): 256 threads a block, as every
# kernel here, so any register count a kernel compiles to launches (at 512 threads, one over
# 128 a thread would fail to launch; the simulator's jit takes no ``launch_bounds``).
SLICES = 8


def skinny_file(frame, out_shape, dtype, store_lines) -> str:
    """The module source from ``cuda_matmul``'s ``Frame`` and its ``_store_lines``."""
    rank, m = len(out_shape), out_shape[-2]
    batch, sizes, params, ab = frame.batch, frame.sizes, frame.params, frame.ab
    stmts, outputs = frame.stmts, frame.outputs
    c = ctor(dtype)
    rows = range(m)
    lines = [f"# fusejit CUDA skinny matmul (generated): rank={rank} rows={m}",
             f"# prelude {prelude_hash()}", *HEADER, f"WIDTH = {WIDTH}", f"SLICES = {SLICES}",
             "", "", "@cuda.jit(cache=True)", f"def kernel({', '.join(params)}):"]
    body = [f"part = cuda.shared.array((SLICES, {m}, WIDTH), {c})",
            "tx = cuda.threadIdx.x", "ty = cuda.threadIdx.y", "slices = cuda.blockDim.y",
            "tiles_n = (n + WIDTH - 1) // WIDTH",
            f"total = {' * '.join(sizes[:-3] + ['tiles_n'])}",
            "for t in range(cuda.blockIdx.x, total, cuda.gridDim.x):"]
    per_tile = ["tj = t % tiles_n", "rest0 = t // tiles_n",
                *(unravel_lines("rest0", batch) if batch else []),
                "col = tj * WIDTH + tx", *[f"acc_{r} = {c}(0)" for r in rows],
                "if col < n:",
                *indent(["for kk in range(ty, k, slices):",
                         *indent([f"bv = b[{ab[1]}kk, col]",
                                  *[f"acc_{r} = {c}(acc_{r} + a[{ab[0]}{r}, kk] * bv)"
                                    for r in rows]])]),
                *[f"part[ty, {r}, tx] = acc_{r}" for r in rows],
                "cuda.syncthreads()", "half = slices // 2", "while half > 0:",
                *indent(["if ty < half:",
                         *indent([f"part[ty, {r}, tx] = {c}(part[ty, {r}, tx] + "
                                  f"part[ty + half, {r}, tx])" for r in rows]),
                         "cuda.syncthreads()", "half //= 2"]),
                "if ty == 0 and col < n:"]
    for r in rows:
        per_tile += indent([f"row = {r}", f"acc = part[0, {r}, tx]",
                            *store_lines(stmts, outputs, out_shape)])
    per_tile.append("cuda.syncthreads()")   # ``part`` is reused by the next tile
    body += indent(per_tile)
    return "\n".join(lines + indent(body)) + "\n"


def skinny_config(tiles: int) -> tuple[int, tuple[int, int]]:
    from .cuda_launch import max_blocks, simulator_active
    slices = 2 if simulator_active() else SLICES
    return max(1, min(tiles, max_blocks())), (WIDTH, slices)

