"""Large outputs reuse the buffers of outputs the caller dropped, never one an array can still
reach (``fusejit.codegen.recycle``)."""
import gc

import numpy as np
import pytest

import fusejit
from fusejit.codegen import recycle
from fusejit.codegen.placement import MIN_BYTES, empty_apart

SHAPE = (MIN_BYTES // 1024, 256)     # 1 MiB of float32


@pytest.fixture(autouse=True)
def empty_pool():
    recycle.release()
    yield
    recycle.release()


def buffer_of(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array.base._raw


def test_a_dropped_output_lends_its_buffer_to_the_next():
    first = empty_apart(SHAPE, np.float32, [])
    raw = buffer_of(first)
    del first
    second = empty_apart(SHAPE, np.float32, [])
    assert buffer_of(second) is raw
    assert second.shape == SHAPE and second.dtype == np.float32 and second.flags.writeable


@pytest.mark.parametrize("keep", [
    lambda out: out[1:, ::2],                       # a view of a view
    lambda out: out.reshape(-1),
    lambda out: memoryview(out),
    lambda out: np.frombuffer(memoryview(out), np.uint8),
    lambda out: out.ctypes.data_as(np.ctypeslib.ndpointer(np.float32)),
    lambda out: [out.T],
], ids=["view", "reshape", "memoryview", "frombuffer", "ctypes", "list"])
def test_a_buffer_any_array_still_reaches_is_not_reused(keep):
    out = empty_apart(SHAPE, np.float32, [])
    out[...] = 7.0
    kept, raw = keep(out), buffer_of(out)
    del out
    gc.collect()
    other = empty_apart(SHAPE, np.float32, [])
    other[...] = -1.0
    assert buffer_of(other) is not raw
    assert np.all(raw[:-4096].view(np.float32)[: other.size // 2] != -1.0)
    del kept


def test_buffers_of_another_size_or_dtype_size_are_not_mixed_up():
    a = empty_apart(SHAPE, np.float32, [])
    raw = buffer_of(a)
    del a
    b = empty_apart((SHAPE[0], SHAPE[1] * 2), np.float32, [])
    assert buffer_of(b) is not raw
    c = empty_apart(SHAPE, np.int32, [])          # same bytes: the buffer fits any dtype
    assert buffer_of(c) is raw and c.dtype == np.int32


def test_free_buffers_are_bounded_oldest_dropped_first(monkeypatch):
    size = buffer_of(empty_apart(SHAPE, np.float32, [])).nbytes
    monkeypatch.setenv("FUSEJIT_RECYCLE_MAX_MB", str(2.5 * size / 2**20))
    outs = [empty_apart(SHAPE, np.float32, []) for _ in range(3)]
    raws = [buffer_of(o) for o in outs]
    for k in range(3):                       # dropped in this order: the first is the oldest
        outs[k] = None
    assert recycle.POOL.total == 2 * size
    assert set(map(id, recycle.POOL.free.values())) == {id(raws[1]), id(raws[2])}
    assert recycle.release() == 2 * size and recycle.POOL.total == 0


def test_zero_keeps_nothing(monkeypatch):
    monkeypatch.setenv("FUSEJIT_RECYCLE_MAX_MB", "0")
    empty_apart(SHAPE, np.float32, [])
    assert recycle.POOL.total == 0 and not recycle.POOL.free


def chain(a, b, c):
    t = a * b + c
    t = np.maximum(t - 0.5 * a, c)
    return np.exp(-np.abs(t))


def test_a_loop_keeping_its_results_gets_fresh_memory_and_right_values():
    f = fusejit.compile(chain)
    rng = np.random.default_rng(0)
    kept, previous = [], None
    for _ in range(4):
        a, b, c = (rng.standard_normal(SHAPE).astype(np.float32) for _ in range(3))
        out = f(a, b, c)
        np.testing.assert_allclose(out, chain(a, b, c), rtol=2e-6, atol=0)
        if previous is not None:
            assert not np.shares_memory(out, previous)
        previous = out
        kept.append((out, out.copy()))
    for out, values in kept:                 # nothing later wrote over an earlier result
        np.testing.assert_array_equal(out, values)


def test_a_recycled_output_passed_twice_to_a_writing_function_runs_as_numpy():
    def bump(x, y):
        x += 1.0
        return x * y

    f = fusejit.compile(bump)
    for _ in range(3):
        shared = f(np.ones(SHAPE, np.float32), np.full(SHAPE, 2, np.float32))   # recycled
        twin = shared.copy()
        y = f(shared, shared)               # aliased: NumPy's x * y reads the bumped x twice
        np.testing.assert_array_equal(y, bump(twin, twin))
        np.testing.assert_array_equal(shared, twin)
        assert y[0, 0] == 25.0


def test_a_recycled_result_can_be_made_read_only_and_writeable_again():
    first = empty_apart(SHAPE, np.float32, [])
    del first
    out = empty_apart(SHAPE, np.float32, [])         # recycled
    out.flags.writeable = False
    with pytest.raises(ValueError):
        out[0, 0] = 1.0
    out.flags.writeable = True                        # as NumPy's own arrays allow
    out[0, 0] = 1.0
    view = out[1:]
    view.flags.writeable = False
    view.flags.writeable = True


def test_the_owner_of_a_buffer_is_not_copied_or_pickled_but_the_array_is():
    import copy
    import pickle
    out = empty_apart(SHAPE, np.float32, [])
    out[...] = 2.0
    for duplicate in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="copy the array instead"):
            duplicate(out.base)
    for twin in (copy.copy(out), copy.deepcopy(out), pickle.loads(pickle.dumps(out))):
        assert not np.shares_memory(twin, out) and not isinstance(twin.base, recycle.Recycled)
        np.testing.assert_array_equal(twin, out)


def test_a_buffer_handed_back_twice_is_kept_once():
    out = empty_apart(SHAPE, np.float32, [])
    raw = buffer_of(out)
    del out
    recycle.POOL.give_back(raw)
    assert list(recycle.POOL.free.values()) == [raw]
    assert recycle.POOL.total == raw.nbytes


def test_a_forked_child_gets_a_fresh_lock():
    import os
    recycle.POOL.lock.acquire()          # as if another thread held it at the fork
    try:
        pid = os.fork()
        if pid == 0:                     # the child: would hang on the parent's lock
            try:
                empty_apart(SHAPE, np.float32, [])
            finally:
                os._exit(0)
    finally:
        recycle.POOL.lock.release()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
