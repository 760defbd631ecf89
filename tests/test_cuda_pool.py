"""The device buffer pool's bookkeeping, with its driver replaced by fakes (no GPU needed;
bench/gpu.py runs tests/cuda/sim_cases.py's pool test on a real one)."""
import gc
import weakref

import numpy as np
import pytest

from fusejit.codegen.cuda_pool import GRAIN, BufferPool


class FakeArray:
    def __init__(self, raw, finalizer):
        self.raw = raw
        weakref.finalize(self, finalizer)


class FakePool(BufferPool):
    def __init__(self, limit=1 << 20, fail=0):
        super().__init__(limit)
        self.syncs, self.fail, self.made = 0, fail, 0

    def _memalloc(self, size):
        if self.fail:
            self.fail -= 1
            raise MemoryError("out of memory")
        self.made += 1
        return ("buffer", self.made, size)

    def _synchronize(self):
        self.syncs += 1

    def _array(self, shape, dtype, stream, size, raw, finalizer):
        return FakeArray(raw, finalizer)


def test_a_dead_arrays_buffer_is_reused_only_after_a_synchronize():
    pool = FakePool()
    first = pool.empty((4, 8), np.float32, 0)
    raw = first.raw
    del first
    gc.collect()
    second = pool.empty((4, 8), np.float32, 0)
    assert second.raw != raw                                 # freed, not yet synchronized
    pool.recycle()
    assert pool.syncs == 1
    assert pool.empty((32,), np.float32, 0).raw == raw       # same rounded size
    assert pool.allocations == 2


def test_live_arrays_never_share_a_buffer():
    pool = FakePool()
    arrays = [pool.empty((100,), np.float64, 0) for _ in range(3)]
    pool.recycle()
    assert len({a.raw for a in arrays}) == 3 and pool.syncs == 0   # nothing pending: no sync


def test_sizes_round_up_to_the_grain_and_the_pool_keeps_at_most_its_limit():
    pool = FakePool(limit=2 * GRAIN)
    arrays = [pool.empty((1,), np.uint8, 0) for _ in range(3)]
    assert all(a.raw[2] == GRAIN for a in arrays)
    del arrays
    gc.collect()
    pool.recycle()
    assert pool.free_bytes == 2 * GRAIN                      # the third went to the driver


def test_running_out_of_memory_empties_the_pool_and_tries_once_more():
    pool = FakePool()
    kept = pool.empty((8,), np.float32, 0)
    del kept
    gc.collect()
    pool.recycle()
    assert pool.free_bytes == GRAIN
    pool.fail = 1
    assert pool.empty((GRAIN,), np.float32, 0).raw[2] == 4 * GRAIN
    assert pool.free_bytes == 0
    pool.fail = 2
    with pytest.raises(MemoryError):
        pool.empty((GRAIN,), np.float32, 0)
