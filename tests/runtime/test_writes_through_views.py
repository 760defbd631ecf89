"""Writes into a reshape, ravel, transpose, expand_dims or squeeze view of an array reach the
array, as NumPy's do: the view holds each element of its base once, so the base's new value
is the view's new value moved back. These ran eagerly before (found by the fuzzer: 27 of 600
programs); a write into a copy NumPy made (an F-ordered reshape of a C array) stays there."""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same, check_calls

GLOBAL = np.zeros((3, 4))


def _transposed_row(a):
    v = a.T
    v[0] += 1
    return a * 2


def _reshaped_tail(a):
    v = a.reshape(-1)
    v[3:] = 0
    return a + 1, v


def _expanded_then_sliced(a):
    v1 = np.expand_dims(a, (0, -1))
    v2 = v1[::2]
    v1[-1] = np.int32(-7)
    return np.abs(v1), v1, v2


def _transposed_then_raveled(a):
    a.T[1:] *= 3
    b = a.ravel()
    b += 1
    return b


def _einsum_and_squeeze(a):
    v = np.einsum("ij->ji", a)
    v[:, 0] = 5
    s = np.squeeze(a[None])
    s -= 1
    return a.sum()


def _fortran_reshape_copy(a):
    v = a.reshape(a.shape[1], a.shape[0], order="F")   # NumPy copies a C-ordered a
    v[0] = -1
    return v, a


def _swapped_then_copied(a):
    t = np.swapaxes(a, 0, 1)
    r = t.reshape(-1)            # t is F-ordered: NumPy copies, writes stay in r
    r[0] = 100
    t[1] += r[: t.shape[1]]
    return a, r


def _moved_axis_of_a_view(a):
    block = np.moveaxis(a[1:], 0, -1)
    block *= 0.5
    return a[:, ::-1].sum(axis=1)


def _global_through_its_transpose(a):
    GLOBAL.T[2] = a[:, 0]
    return GLOBAL.sum(axis=0)


@pytest.mark.parametrize("fn", [
    _transposed_row, _reshaped_tail, _expanded_then_sliced, _transposed_then_raveled,
    _einsum_and_squeeze, _fortran_reshape_copy, _swapped_then_copied, _moved_axis_of_a_view,
    _global_through_its_transpose])
@pytest.mark.parametrize("layout", ["c", "f"])
def test_a_write_through_a_reshape_or_transpose_reaches_the_array(fn, layout):
    def make_args(call):
        a = np.arange(12.0).reshape(3, 4) - 4 * call
        return (a if layout == "c" else np.asfortranarray(a),)

    GLOBAL[...] = 0
    compiled = check_calls(fn, make_args)
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["hits"] == 2


def test_a_global_written_through_its_transpose_ends_as_numpys():
    compiled = fusejit.compile(_global_through_its_transpose)
    for k in range(3):
        a = np.arange(12.0).reshape(3, 4) * (k + 1)
        GLOBAL[...] = k
        want = _global_through_its_transpose(a)
        want_state = GLOBAL.copy()
        GLOBAL[...] = k
        assert_same(want, compiled(a))
        assert_same(want_state, GLOBAL)
    assert compiled.cache_info()["hits"] == 2


def test_a_write_into_a_broadcast_still_raises_numpys_error():
    def written(a):
        b = np.broadcast_to(a, (2, 3))
        b[0] = 1.0
        return b

    with pytest.raises(ValueError, match="read-only"):
        written(np.zeros(3))
    with pytest.raises(ValueError, match="read-only"):
        fusejit.compile(written)(np.zeros(3))


@pytest.mark.parametrize("fn", [
    lambda x: (lambda y: (y, _written(y.reshape(-1))))(x + 1),
    lambda x: (lambda y: (_written(y.T), y, y.reshape(y.shape)))(x * 2),
    lambda x: (lambda y: (_written(np.expand_dims(y, 0)), y.ravel()))(x - 1)],
    ids=["reshaped", "transposed", "expanded"])
def test_a_written_view_returned_with_its_array_shares_its_memory(fn):
    compiled = fusejit.compile(fn)
    for k in range(3):
        want, got = fn(np.arange(6.0).reshape(2, 3) + k), compiled(np.arange(6.0).reshape(2, 3) + k)
        assert_same(want, got)
        for a, b in zip(want, got, strict=True):
            assert [b is c for c in got] == [a is c for c in want]
            assert [np.shares_memory(b, c) for c in got] == [np.shares_memory(a, c) for c in want]
    assert compiled.cache_info()["hits"] == 2


def _written(view):
    view[0] = -5.0
    return view


def _into_empty_views(a):
    a[1:] *= 2               # one row: an empty view, which shares no memory with a
    tail = a[:, 5:]
    tail += 1
    return a, a[1:], tail


@pytest.mark.parametrize("shape", [(1, 4), (3, 6), (0, 2)])
def test_writes_into_empty_views_compile_and_change_nothing(shape):
    # found by the fuzzer: a write into an empty basic view ran the signature eagerly
    compiled = check_calls(_into_empty_views, lambda call: (np.arange(
        float(np.prod(shape))).reshape(shape) + call,))
    assert compiled.cache_info()["eager_calls"] == 0


def _gathered_then_written(a):
    picked = a[:, np.array([0, 0, -1])]   # a new array, whose base is NumPy's own temporary
    np.maximum(picked, 1.0, out=picked)
    rows = a[np.array([2, 0])]
    rows *= 3
    return picked, rows, a


def test_writes_into_arrays_gathered_by_integer_arrays_compile_and_leave_the_source():
    # found by the fuzzer: such a write ran the signature eagerly ("a view of an array the
    # tracer cannot follow"), as NumPy's result is not a view but has a base
    compiled = check_calls(_gathered_then_written, lambda call: (np.arange(12.0).reshape(3, 4)
                                                                 - 5 * call,))
    assert compiled.cache_info()["eager_calls"] == 0


def _scalar_indexed_then_written(a):
    flag = a <= a            # a NumPy scalar for a 0-d a: indexing it makes a new array
    row = flag[None]
    np.maximum(row, np.logical_xor(a, a), out=row)
    total = np.sum(a)[None]
    total += 1
    return row, flag, total


def test_writes_into_arrays_indexed_from_numpy_scalars_compile():
    # found by the fuzzer (1 of 1,500 programs): the write ran the signature eagerly, as the
    # new array's base is a temporary of NumPy's that the tracer cannot follow
    compiled = check_calls(_scalar_indexed_then_written, lambda call: (np.array(call - 0.5),))
    assert compiled.cache_info()["eager_calls"] == 0
