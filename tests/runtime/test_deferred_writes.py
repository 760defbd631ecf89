"""Updates of arguments and captured arrays through indexing are written straight into them
after the program ran (``deferred_writes``), not by copying the whole array twice -- with
eager NumPy's results and final state, also when a guard or a later step fails."""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same, check_calls

TABLE = np.zeros((6, 3), np.float32)


def _rows(w, idx, g):
    w[idx] -= 0.5 * g
    return w


def _accumulate(w, idx, g):
    np.add.at(w, idx, g)


def _shift(x):
    x[1:] = x[:-1]
    x[0] = -1.0


def _copy_row_then_clear(b, a):
    a[0] = b[0]      # a view of b, which is written first
    b[0] = 5.0


def _global_rows(idx, g):
    TABLE[idx] += g
    return g.sum()


def _read_after_write(w, idx, g):
    w[idx] -= g
    return w[idx].sum()


def _branch_after_write(x, y):
    x[0] = y
    if y.sum() > 0:
        return x * 2
    return x - 1


def _writes(compiled, *args):
    path = compiled.entry_for(*args).paths[0]
    return path.program.deferred, [step.node.op for step in path.program.steps]


def _row_args(call):
    rng = np.random.default_rng(call)
    return (rng.standard_normal((8, 4)).astype(np.float32), np.array([1, 6, 1, 3]),
            rng.standard_normal((4, 4)).astype(np.float32))


@pytest.mark.parametrize("fn", [_rows, _accumulate], ids=["setitem", "add_at"])
def test_row_updates_are_written_into_the_argument_without_a_copy(fn):
    compiled = check_calls(fn, _row_args)
    deferred, ops = _writes(compiled, *_row_args(0))
    assert [write.op for writes in deferred.values() for write in writes] == \
        [{"_rows": "setitem", "_accumulate": "scatter_add"}[fn.__name__]]
    assert not {"setitem", "scatter_add"} & set(ops)
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_value_read_from_the_array_it_is_written_into_is_read_first():
    check_calls(_shift, lambda call: (np.arange(5.0) + call,))


def test_a_value_read_from_another_written_argument_is_read_before_it_is_written():
    check_calls(_copy_row_then_clear, lambda call: (np.full((2, 3), call + 1.0), np.zeros((2, 3))))


def test_updates_of_a_captured_global_are_written_into_it():
    TABLE[...] = 0
    eager = TABLE.copy()
    compiled = fusejit.compile(_global_rows)
    for call in range(3):
        idx, g = np.array([call, 5]), np.full((2, 3), call + 1.0, np.float32)
        eager[idx] += g
        assert_same(np.float32(g.sum()), compiled(idx, g))
        assert_same(eager, TABLE)
    assert _writes(compiled, idx, g)[0]


def test_a_read_of_the_updated_array_keeps_the_functional_update():
    compiled = check_calls(_read_after_write, _row_args)
    deferred, ops = _writes(compiled, *_row_args(0))
    assert not deferred and "setitem" in ops


def test_a_failing_guard_after_the_write_updates_the_argument_once():
    compiled = check_calls(_branch_after_write, lambda call: (np.zeros((2, 3)),
                                                              np.full(3, (-1.0) ** call)),
                           calls=4)
    assert compiled.cache_info()["paths"] == 2


def _raises_like_eager(fn, make_args, calls):
    """Each call's error and the arrays it leaves, eager against compiled."""
    compiled = fusejit.compile(fn)
    for call in calls:
        results = []
        for run in (fn, compiled):
            args = make_args(call)
            try:
                run(*args)
                error = None
            except (IndexError, ValueError) as exc:
                error = type(exc)
            results.append((error, args))
        (want_error, want_args), (got_error, got_args) = results
        assert got_error is want_error
        for want, got in zip(want_args, got_args, strict=True):
            assert_same(want, got)


def _write_then_write_at(x, y, k):
    x[0] += 1.0
    y[k] = 3.0        # out of bounds for k = 9: eager has written x, not y


def _write_at_then_write(x, y, k):
    y[k] = 3.0        # out of bounds for k = 9: eager writes nothing
    x[0] = 99.0


@pytest.mark.parametrize("fn", [_write_then_write_at, _write_at_then_write],
                         ids=["earlier_write_kept", "later_write_never_made"])
def test_an_index_out_of_bounds_leaves_what_eager_numpy_leaves(fn):
    _raises_like_eager(fn, lambda k: (np.zeros(4), np.zeros(8), np.array(k)), [1, 9, 9, 1])


def _double_then_masked_store(m, h, mask, v):
    m *= 2.0
    h[mask] = v       # 2 values for 3 True elements: eager has doubled m, written nothing


def test_a_mask_selecting_more_elements_than_values_leaves_what_eager_numpy_leaves():
    def make_args(third):
        return np.arange(4.0), np.zeros(4), np.array([True, True, third, False]), \
            np.array([7.0, 8.0])

    _raises_like_eager(_double_then_masked_store, make_args, [False, True, True, False])


def test_a_read_only_argument_leaves_what_eager_numpy_leaves():
    def write_both(a, b):
        a[0] += 1.0
        b[0] = 2.0

    def make_args(read_only):
        b = np.zeros(3)
        b.flags.writeable = not read_only
        return np.zeros(3), b

    _raises_like_eager(write_both, make_args, [False, True, True, False])


def test_a_step_raising_after_the_write_leaves_eager_numpys_state():
    def write_then_gather(w, idx):
        w[0] += 1.0
        return w[idx]

    compiled = fusejit.compile(write_then_gather)
    eager_w, w = np.zeros((3, 2)), np.zeros((3, 2))
    for idx in (np.array([0, 2]), np.array([1, 2])):
        assert_same(write_then_gather(eager_w, idx), compiled(w, idx))
    for target in (eager_w, w):
        with pytest.raises(IndexError):
            (write_then_gather if target is eager_w else compiled)(target, np.array([0, 7]))
    assert_same(eager_w, w)


def test_a_guard_on_the_written_array_itself_reads_its_new_value():
    def branch_on_written(x, y):
        x[0] = y
        if x:          # bool() of the written one-element array
            return y * 2
        return y - 1

    check_calls(branch_on_written,
                lambda call: (np.zeros(1), np.float64([1.0, 0.0, 2.0, 0.0][call])), calls=4)
