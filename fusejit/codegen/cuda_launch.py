"""Launch configurations from the iteration space and the device's properties.

Every generated kernel loops grid-stride, so these choices change speed, never results.
On a GPU: 256 threads per block and at most ``BLOCKS_PER_SM`` blocks per multiprocessor
(enough to hide latency; more blocks only add scheduling). Under Numba's CUDA simulator each
thread is a Python thread, so launches there are kept tiny.
"""
from __future__ import annotations

import functools

from .cuda_reduce import MAX_THREADS

THREADS = MAX_THREADS   # a row kernel's tree has one shared slot per thread of the block
BLOCKS_PER_SM = 4
SIM_THREADS, SIM_BLOCKS = 32, 2
MATMUL_TILE = 16


def simulator_active() -> bool:
    from numba.core import config
    return bool(config.ENABLE_CUDASIM)


@functools.cache
def sm_count() -> int:
    if simulator_active():
        return 1
    from numba import cuda
    return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


def max_blocks() -> int:
    return SIM_BLOCKS if simulator_active() else BLOCKS_PER_SM * sm_count()


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def elementwise_config(total: int) -> tuple[int, int]:
    threads = SIM_THREADS if simulator_active() else THREADS
    return max(1, min(_ceil_div(total, threads), max_blocks())), threads


def rows_config(rows: int, cols: int) -> tuple[int, int]:
    """One block per row: a power of two of threads (the tree needs it) no wider than the
    row, at least one warp."""
    limit = SIM_THREADS // 2 if simulator_active() else THREADS
    threads = 1
    while threads < cols and threads < limit:
        threads *= 2
    if not simulator_active():
        threads = max(threads, 32)
    return max(1, min(rows, max_blocks())), threads


def tiles_config(tiles: int) -> tuple[int, tuple[int, int]]:
    return max(1, min(tiles, max_blocks())), (MATMUL_TILE, MATMUL_TILE)
