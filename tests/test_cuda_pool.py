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


class Context:
    """A stand-in CUDA context (weak-referenceable)."""


class FakePool(BufferPool):
    def __init__(self, limit=1 << 20, fail=0):
        super().__init__(limit)
        self.syncs, self.fail, self.made = 0, fail, 0
        self.context, self.during_sync = Context(), None

    def _current_context(self):
        return self.context

    def _memalloc(self, size):
        if self.fail:
            self.fail -= 1
            raise MemoryError("out of memory")
        self.made += 1
        return ("buffer", self.made, size)

    def _synchronize(self):
        self.syncs += 1
        if self.during_sync is not None:
            self.during_sync()

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


def test_a_buffer_freed_while_recycle_synchronizes_waits_for_the_next_call():
    # another thread's array may die after queuing work on its own stream: a synchronize
    # that began before that work does not cover it
    pool = FakePool()
    first, holder = pool.empty((8,), np.float32, 0), [pool.empty((8,), np.float32, 0)]
    raws = {first.raw, holder[0].raw}
    del first
    gc.collect()
    pool.during_sync = lambda: holder.clear() or gc.collect()
    pool.recycle()
    assert pool.free_bytes == GRAIN                          # the first only
    pool.during_sync = None
    pool.recycle()
    assert pool.free_bytes == 2 * GRAIN and pool.syncs == 2
    assert {pool.empty((8,), np.float32, 0).raw for _ in range(2)} == raws


def test_a_new_cuda_context_empties_the_pool_and_drops_the_old_contexts_buffers():
    pool = FakePool()
    pool.recycle()
    kept, dead = pool.empty((8,), np.float32, 0), pool.empty((8,), np.float32, 0)
    del dead
    gc.collect()
    pool.recycle()
    assert pool.free_bytes == GRAIN
    pool.context = Context()                                 # cuda.close(), another device
    pool.recycle()
    assert pool.free_bytes == 0
    del kept
    gc.collect()
    pool.recycle()
    assert pool.free_bytes == 0                              # it belonged to the old context


def test_a_release_from_a_collection_inside_the_pools_lock_does_not_deadlock():
    pool = FakePool()
    array = pool.empty((8,), np.float32, 0)
    array.cycle = array                                      # only a collection frees it
    del array
    with pool._lock:
        gc.collect()                                         # its finalizer takes the lock
    pool.recycle()
    assert pool.free_bytes == GRAIN
