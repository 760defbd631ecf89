"""Launch configurations from the iteration space and the device's properties.

Every generated kernel loops grid-stride, so these choices change speed, never results.
On a GPU: 256 threads per block and at most ``BLOCKS_PER_SM`` blocks per multiprocessor
(enough to hide latency; more blocks only add scheduling). Under Numba's CUDA simulator each
thread is a Python thread, so launches there are kept tiny.
"""
from __future__ import annotations

import functools
import threading

from .cuda_reduce import MAX_THREADS

THREADS = MAX_THREADS   # a row kernel's tree has one shared slot per thread of the block
BLOCKS_PER_SM = 4
SIM_THREADS, SIM_BLOCKS = 32, 2
MATMUL_TILE = 16
_QUIET = threading.Lock()


def launch(dispatcher, blocks, threads, stream, args, callback=None) -> None:
    """``dispatcher[blocks, threads, stream](*args)`` without Numba's low-occupancy warning:
    a small array gets a small grid on purpose, and Numba warned on every such launch (a
    ``NumbaPerformanceWarning`` from its dispatcher.py per call, seen on an H200). The switch
    is Numba's own config flag, off only for the launch. ``callback(kernel, config)`` runs
    before the launch, with the compiled kernel Numba chose."""
    from numba.core import config
    with _QUIET:   # two threads' save/restore would leave the flag off for the process
        saved = config.CUDA_LOW_OCCUPANCY_WARNINGS
        config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
        try:
            configured = dispatcher[blocks, threads, stream]
        finally:
            config.CUDA_LOW_OCCUPANCY_WARNINGS = saved
    if callback is not None:
        configured.pre_launch_callbacks.append(callback)
    configured(*args)


class Launcher:
    """Launches one kernel of one launch site, whose argument types never change (the
    runtime fixes every layout when it lowers a program).

    The first launch goes through Numba's dispatcher, which compiles and types the arguments;
    its compiled kernel is then launched directly (``cuda_direct.Direct``), skipping the
    dispatcher's typing and argument wrapping, which cost about 0.1 ms of Python per launch on
    an H200 (a 16 MB tanh-GELU kernel runs in 0.04 ms). A call whose arrays differ from the
    first's in shape, strides or dtype goes through the dispatcher again."""

    def __init__(self, dispatcher):
        self.dispatcher = dispatcher
        self.direct = None
        self._tried = False

    def __call__(self, blocks, threads, stream, args) -> None:
        direct = self.direct
        if direct is not None and direct.launch(blocks, threads, stream, args):
            return
        if self._tried or simulator_active():
            launch(self.dispatcher, blocks, threads, stream, args)
            return
        from . import cuda_direct
        self._tried = True
        self.direct = cuda_direct.first_launch(self.dispatcher, blocks, threads, stream, args,
                                               launch)


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
