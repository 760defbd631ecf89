"""Writes whose target's old contents nobody reads afterwards go into the target's buffer
(``passes.in_place_writes``), not into a copy of it: into a kernel's output, or into the
caller's own array -- with eager NumPy's results and final state, also when a guard or a later
step fails after the write (``runtime/undo.py``)."""
import tracemalloc

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same, check_calls

CACHE = np.zeros((2, 16, 4), np.float32)


def _kv_step(cache, k, t):
    cache[:, t] = k
    return cache[:, : t + 1].sum(axis=1)


def _update_then_read(w, idx, g):
    w[idx] -= 0.5 * g
    return w[idx].sum()


def _add_at_then_read(w, idx, g):
    np.add.at(w, idx, g)
    return w.sum(axis=0)


def _masked_row(x):
    h = x * 2.0
    h[:, 0] = 0.0
    return h.sum(axis=1)


def _global_cache_step(k, t):
    CACHE[:, t] = k
    return CACHE[:, : t + 1].mean(axis=1)


def _program(compiled, *args):
    return compiled.entry_for(*args).paths[0].program


def _written_in_place(compiled, *args) -> list[str]:
    return sorted(node.op for node in _program(compiled, *args).writes)


def _kv_args(call):
    rng = np.random.default_rng(call)
    cache = rng.standard_normal((2, 16, 4)).astype(np.float32)
    return cache, rng.standard_normal((2, 4)).astype(np.float32), 5


def _row_args(call):
    rng = np.random.default_rng(call)
    return (rng.standard_normal((8, 4)).astype(np.float32), np.array([1, 6, 1, 3]),
            rng.standard_normal((4, 4)).astype(np.float32))


@pytest.mark.parametrize("fn, make_args, op", [
    (_kv_step, _kv_args, "setitem"),
    (_update_then_read, _row_args, "setitem"),
    (_add_at_then_read, _row_args, "scatter_add"),
], ids=["kv_cache", "rows_then_read", "add_at_then_read"])
def test_an_argument_updated_then_read_is_written_into_in_place(fn, make_args, op):
    compiled = check_calls(fn, make_args)
    program = _program(compiled, *make_args(0))
    assert [node.op for node in program.writes] == [op] and program.caller_writes
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_write_into_a_kernels_output_that_dies_there_is_in_place():
    compiled = check_calls(_masked_row, lambda call: (np.full((6, 5), call + 1.0, np.float32),))
    program = _program(compiled, np.ones((6, 5), np.float32))
    assert _written_in_place(compiled, np.ones((6, 5), np.float32)) == ["setitem"]
    assert not program.caller_writes   # nothing of the caller's is written


def test_a_captured_global_cache_is_written_in_place():
    CACHE[...] = 0
    eager = CACHE.copy()
    compiled = fusejit.compile(_global_cache_step)
    for call in range(3):
        k = np.full((2, 4), call + 1.0, np.float32)
        eager[:, 3] = k
        assert_same(eager[:, :4].mean(axis=1), compiled(k, 3))
        assert_same(eager, CACHE)
    assert _written_in_place(compiled, k, 3) == ["setitem"]


def test_the_replay_allocates_no_copy_of_the_updated_array():
    table = np.zeros((2000, 256), np.float32)      # 2 MB
    idx, g = np.array([3, 7]), np.ones((2, 256), np.float32)
    compiled = fusejit.compile(_update_then_read)
    compiled(table, idx, g)
    compiled(table, idx, g)
    tracemalloc.start()
    try:
        compiled(table, idx, g)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < table.nbytes // 4
    assert table[3, 0] == table[7, 0] == -1.5


def _write_then_branch(x, g):
    x[0:2] += g
    if x.sum() > 0:
        return x[0] * 2.0
    return x[1] - 1.0


def test_a_failing_guard_after_an_in_place_write_updates_the_argument_once():
    signs = [1.0, -1.0, 1.0, -1.0, -1.0]
    compiled = check_calls(_write_then_branch, lambda call: (
        np.full((4, 3), signs[call]), np.full((2, 3), 0.5 * signs[call])), calls=len(signs))
    assert compiled.cache_info()["paths"] == 2
    assert _written_in_place(compiled, np.ones((4, 3)), np.ones((2, 3))) == ["setitem"]


def test_a_step_raising_after_an_in_place_write_leaves_eager_numpys_state():
    def write_read_gather(w, idx):
        w[0] += 1.0
        return w.sum(axis=1)[idx]

    compiled = fusejit.compile(write_read_gather)
    eager_w, w = np.zeros((3, 2)), np.zeros((3, 2))
    for idx in (np.array([0, 2]), np.array([1, 2])):
        assert_same(write_read_gather(eager_w, idx), compiled(w, idx))
    assert _written_in_place(compiled, w, idx) == ["setitem"]
    for target, run in ((eager_w, write_read_gather), (w, compiled)):
        with pytest.raises(IndexError):
            run(target, np.array([0, 7]))
    assert_same(eager_w, w)


def test_a_read_only_argument_raises_numpys_error_and_stays_unchanged():
    compiled = fusejit.compile(_kv_step)
    cache, k, t = _kv_args(0)
    compiled(cache, k, t)
    frozen = cache.copy()
    frozen.flags.writeable = False
    for run in (_kv_step, compiled):
        with pytest.raises(ValueError, match="read-only"):
            run(frozen, k, t)
    assert_same(cache, frozen.copy())


def test_a_view_of_the_old_contents_still_read_keeps_the_copy():
    def view_then_write(x):
        head = x[:2].copy()
        row = x[0]
        x[0] = 5.0
        return head.sum() + row.sum() + x.sum()

    compiled = check_calls(view_then_write, lambda call: (np.arange(6.0).reshape(3, 2) + call,))
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_write_into_an_array_an_opaque_call_returned_a_view_of_runs_eagerly():
    def opaque_then_write(x):
        h = x * 2.0
        kept = np.flip(h)       # a host call whose result is a view of h: eager sees the write
        h[0] = 7.0
        return kept + h

    compiled = check_calls(opaque_then_write, lambda call: (np.arange(4.0) + call,))
    assert compiled.cache_info()["eager_signatures"] == 1
    assert "after np.flip returned a view of it" in str(compiled.explain(np.arange(4.0)))


def _row_then_update(a, t):
    row = a[t % 2]          # a 0-d integer array indexes as an int does: a view of a
    col = a[:, t % 2]
    a += 2.0
    a[::2] *= 3.0
    return -row, col * 1.0


def _write_through_row(a, t):
    row = a[t % 2]
    row += 1.0              # through the view into a: runs eagerly
    return row * 2.0


@pytest.mark.parametrize("fn", [_row_then_update, _write_through_row])
def test_views_by_a_traced_integer_see_later_writes(fn):
    compiled = check_calls(fn, lambda call: (np.arange(6.0).reshape(2, 3) + call,
                                             np.array(call, np.int32)), calls=4)
    eager = compiled.cache_info()["eager_signatures"]
    assert eager == (fn is _write_through_row)


def test_two_in_place_writes_into_one_argument_are_both_undone():
    def two_writes(x, y):
        x[0] = y
        s = x.sum()
        x[1] = s
        if x[1].sum() > 0:
            return x.mean()
        return -x.mean()

    check_calls(two_writes,
                lambda call: (np.full((3, 2), float(call)), np.full(2, (-2.0) ** call)), calls=5)


def _self_indexed(a, x):
    a[a[:2]] = 5          # the index array is a view of the array written
    s = a.sum()
    if s > x:
        return s
    return -s


def _index_in_the_arena(a, i, x):
    idx = (i + np.arange(3)) % 8      # a kernel's output, in the arena
    a[idx] += 1.0
    y = x * 3.0                       # may take idx's place in the arena
    y[0] = 1.0
    s = y.sum() + a.sum()
    if s > 0:
        return s
    return -s


@pytest.mark.parametrize("fn, make_args, calls", [
    (_self_indexed, lambda call: (np.array([0, 1, 7, 7, 7, 7, 7, 7]),
                                  np.array([0, 10**6, 0][call])), 3),
    (_index_in_the_arena, lambda call: (np.arange(8.0) * 0.1, np.array([2, 2, 3, 1][call]),
                                        np.full(3, 100.0 * [1, -1, 1, -1][call])), 4),
], ids=["index_viewing_the_target", "index_in_the_arena"])
def test_the_undo_restores_the_region_the_write_changed(fn, make_args, calls):
    compiled = check_calls(fn, make_args, calls)
    assert compiled.cache_info()["paths"] == 2


def _write_into_a_copy(a):
    t = a.copy()          # folded away: both writes then read a
    t[0] = -1.0
    a[1] = 5.0
    return t


def _write_into_a_copy_read_between(a):
    t = a.copy()
    a[1] = 5.0
    s = a.sum()
    t[0] = -1.0
    return t, s


def _return_a_middle_version(a):
    a[0] = 1.0
    r = a * 1             # folded to a's first new version
    a[1] = 2.0
    return r


@pytest.mark.parametrize("fn", [_write_into_a_copy, _write_into_a_copy_read_between,
                                _return_a_middle_version])
def test_only_the_writes_that_lead_to_the_arrays_final_value_go_into_it(fn):
    compiled = check_calls(fn, lambda call: (np.arange(6.0).reshape(3, 2) + call,))
    a = np.arange(6.0).reshape(3, 2)
    result = compiled(a)
    assert not any(np.shares_memory(r, a) for r in (result if isinstance(result, tuple)
                                                    else (result,)))
