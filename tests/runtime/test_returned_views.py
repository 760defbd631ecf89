"""Results that are views of an array the body writes in place come back as views of the
caller's array on every call, as in eager NumPy: a write through one reaches the array."""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

STATE = np.zeros((2, 3))


def _row_then_rest(x, y):
    x[0] += y
    return x[1:]


def _view_taken_before_the_write(x, y):
    rest = x[1:]
    x[1] += y
    return rest


def _written_through_a_view(x, y):
    rest = x[1:]
    rest += y
    return rest, rest.T, x


def _chained_views(x, y):
    x[0] *= y
    return x.reshape(3, 2), x[:, ::-1].T[1:], x[None], np.broadcast_to(x, (4, 2, 3))


def _flatten_is_a_copy(x, y):
    x[0] += y
    return x.T.reshape(-1), x.flatten(), (x + 1)[1:]


def _global_state(x, y):
    STATE[0] += y
    return STATE[1:], STATE.T


class Buffer:
    def __init__(self):
        self.data = np.zeros((4, 3))

    def push(self, row):
        self.data[1:] = self.data[:-1].copy()
        self.data[0] = row
        return self.data[:2]


CASES = [_row_then_rest, _view_taken_before_the_write, _written_through_a_view, _chained_views,
         _flatten_is_a_copy]


def _as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("fn", CASES, ids=lambda fn: fn.__name__.strip("_"))
def test_results_alias_the_written_argument_as_eager_results_do(fn):
    compiled = fusejit.compile(fn)
    for call in range(3):
        y = np.arange(3.0) + call
        want_x, got_x = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3)
        want, got = _as_tuple(fn(want_x, y)), _as_tuple(compiled(got_x, y))
        assert_same(want, got)
        assert_same(want_x, got_x)
        for w, g in zip(want, got, strict=True):
            assert np.shares_memory(g, got_x) == np.shares_memory(w, want_x)
            assert g.flags.writeable == w.flags.writeable
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_write_through_a_returned_view_reaches_the_argument():
    compiled = fusejit.compile(_row_then_rest)
    x = np.zeros((2, 3))
    for call in range(3):
        rest = compiled(x, np.ones(3))
        rest[...] = call + 10
        assert (x[1] == call + 10).all() and (x[0] == call + 1).all()
    assert compiled.cache_info()["hits"] == 2


def test_views_of_a_written_global_are_views_of_the_global():
    compiled = fusejit.compile(_global_state)
    STATE[...] = 0
    for call in range(3):
        rest, transposed = compiled(np.zeros(3), np.full(3, 2.0))
        assert np.shares_memory(rest, STATE) and np.shares_memory(transposed, STATE)
        assert (transposed[:, 0] == 2.0 * (call + 1)).all()
    assert compiled.cache_info()["hits"] == 2


def test_views_of_a_written_attribute_are_views_of_the_attribute():
    eager, buffer = Buffer(), Buffer()
    compiled = fusejit.compile(buffer.push)
    for call in range(4):
        row = np.full(3, float(call))
        want, got = eager.push(row), compiled(row)
        assert_same(want, got)
        assert np.shares_memory(got, buffer.data)
    assert_same(eager.data, buffer.data)
    assert compiled.cache_info()["eager_calls"] == 0


def _made_and_its_written_view(x):
    y = np.zeros((4, 3))
    a = y[1:]
    a += x[1:]
    return y, a


def _transposed_and_raveled(x):
    y = x.T * 1
    return y, y.ravel()


@pytest.mark.parametrize("body", [_made_and_its_written_view, _transposed_and_raveled])
def test_results_share_memory_as_numpys_do(body):
    compiled = fusejit.compile(body)
    for k in range(3):
        x = np.arange(12.0).reshape(4, 3) + k
        want, got = body(x), compiled(x)
        for a, b in zip(want, got, strict=True):
            assert_same(a, b)
        assert np.shares_memory(*want) == np.shares_memory(*got)
        got[1][...] = -1     # a write through the second result reaches the first as in NumPy
        want[1][...] = -1
        assert_same(want[0], got[0])


def _raveled_copy(x, write):
    if write:
        x[0, 0] += 1             # a write back: the runtime's general path
    y = x.T + 0                  # F-ordered in NumPy: its ravel is a copy, and its slices views
    r = y.reshape(-1)
    r1 = r[1:]
    return {"y": y, "r": r, "r1": r1, "r3": r[1:][2:], "a": r[0:3], "b": r[3:6],
            "yT": y.T, "y1": y[1:], "again": r[1:]}     # equal to r1, another object


@pytest.mark.parametrize("write", [False, True], ids=["plain", "writing"])
@pytest.mark.parametrize("names", [("y", "r", "r1"), ("r1", "y", "r"), ("y", "r1", "r3"),
                                   ("r3", "r", "y", "r1"), ("r1", "r3", "y"), ("a", "r1", "b"),
                                   ("yT", "r"), ("y1", "a", "yT", "b", "r"), ("r", "y", "r"),
                                   ("y", "r1", "r1"), ("y", "r1", "again"), ("y", "r", "r1", "r1")])
def test_results_numpy_made_views_of_one_copy_share_it(names, write):
    def body(x):
        parts = _raveled_copy(x, write)
        return tuple(parts[name] for name in names)      # a name twice: one object twice

    compiled = fusejit.compile(body)
    for k in range(3):
        x = np.arange(12.0).reshape(3, 4) + k
        want, got = body(x.copy()), compiled(x.copy())
        for a, b in zip(want, got, strict=True):
            assert_same(a, b)
        for i in range(len(names)):
            for j in range(i):
                assert np.shares_memory(got[i], got[j]) == np.shares_memory(want[i], want[j])
                assert (got[i] is got[j]) == (want[i] is want[j])
        for result in (want, got):   # a write through one reaches those NumPy shares it with
            result[0][...] = -1.0
        for a, b in zip(want, got, strict=True):
            assert_same(a, b)


@pytest.mark.parametrize("body", [lambda x: x[...], lambda x: x[..., None][..., 0]],
                         ids=["ellipsis", "new_axis_and_back"])
def test_an_ellipsis_index_of_a_0d_argument_is_a_view_of_it(body):
    compiled = fusejit.compile(body)
    for v in (1.0, 2.0, 3.0):
        eager, mine = np.array(v), np.array(v)
        want, got = body(eager), compiled(mine)
        assert_same(want, got)
        want[...], got[...] = -v, -v
        assert_same(eager, mine)


def _written_view_twice(x):
    y = x * 2
    a = y[1:]
    a += 1
    return y, a, a


def test_a_written_view_returned_twice_is_one_object():
    compiled = fusejit.compile(_written_view_twice)
    for k in range(3):
        y, a, again = compiled(np.arange(5.0) + k)
        assert a is again and np.shares_memory(y, a)


@pytest.mark.parametrize("body", [
    lambda x: (x + 1, np.flip(x + 1)), lambda x: (x @ x, np.diagonal(x @ x)),
    lambda x: (x + 1, np.rot90(x + 1)), lambda x: (x + 1, np.atleast_2d(x + 1)),
    lambda x: (np.diagonal(x + 1), np.diagonal(x + 1))],
    ids=["flip", "diagonal", "rot90", "atleast_2d", "diagonal-twice"])
def test_equal_results_numpy_made_apart_stay_apart_through_a_numpy_call(body):
    # each NumPy call runs as a host op that may return a view of its argument: the two
    # x + 1 were merged into one array, which the call's view then shared with the other
    compiled = fusejit.compile(body)
    for k in range(3):
        x = np.arange(16.0).reshape(4, 4) * (k + 1)
        want, got = body(x), compiled(x)
        for a, b in zip(want, got, strict=True):
            assert_same(a, b)
        assert np.shares_memory(*got) == np.shares_memory(*want)
    assert compiled.cache_info()["eager_calls"] == 0


LAYOUTS = {
    "c": lambda a: a,
    "f": np.asfortranarray,
    "strided": lambda a: np.repeat(a, 2, axis=1)[:, ::2],   # reshape(-1) views, ravel copies
    "reversed": lambda a: a[::-1],
    "broadcast": lambda a: np.broadcast_to(a[:1], a.shape),  # read-only, stride 0
    "all-broadcast": lambda a: np.broadcast_to(a[:1, :1], a.shape),   # reshape(-1) views
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("body", [
    lambda x: x.ravel(), lambda x: np.ravel(x)[1:], lambda x: (x.reshape(2, -1), x[1:]),
    lambda x: (x.ravel(), x[1:], x.T), lambda x: (x.reshape(-1), x.ravel())],
    ids=["ravel", "np.ravel-slice", "reshape-and-slice", "ravel-slice-T", "reshape-and-ravel"])
def test_views_and_copies_of_an_argument_share_its_memory_as_numpys_do(body, layout):
    compiled = fusejit.compile(body)
    for k in range(3):
        want_x = LAYOUTS[layout](np.arange(24.0).reshape(4, 6) + k)
        got_x = LAYOUTS[layout](np.arange(24.0).reshape(4, 6) + k)
        want, got = _as_tuple(body(want_x)), _as_tuple(compiled(got_x))
        assert_same(want, got)
        for w, g in zip(want, got, strict=True):
            assert np.shares_memory(g, got_x) == np.shares_memory(w, want_x)
            assert g.flags.writeable == w.flags.writeable
            if w.flags.writeable:   # a write through the result reaches x where NumPy's does
                w.flat[0], g.flat[0] = -1.0, -1.0
                assert_same(want_x, got_x)
    assert compiled.cache_info()["eager_calls"] == 0


def _written(view):
    def body(x):
        x += 1
        return view(x)
    return body


@pytest.mark.parametrize("view", [np.diagonal, np.flip, np.rot90, np.atleast_3d,
                                  lambda x: np.flip(x)[1:]],
                         ids=["diagonal", "flip", "rot90", "atleast_3d", "flip-slice"])
def test_a_numpy_calls_view_of_a_written_argument_views_the_argument(view):
    body = _written(view)
    compiled = fusejit.compile(body)
    for k in range(3):
        want_x, got_x = np.arange(16.0).reshape(4, 4) + k, np.arange(16.0).reshape(4, 4) + k
        want, got = body(want_x), compiled(got_x)
        assert_same(want, got)
        assert np.shares_memory(got, got_x) and got.flags.writeable == want.flags.writeable
        want_x[0, 0], got_x[0, 0] = 100.0, 100.0   # a later write into x shows in the view
        assert_same(want, got)
    assert compiled.cache_info()["eager_calls"] == 0


def _raveled_then_written(order):
    def body(x):
        r = np.ravel(x, order=order)
        x += 1                          # reaches r where NumPy's ravel was a view
        return r * 1
    return body


def _reshaped_then_written(x):
    r = np.reshape(x, (6, 4), order="F")
    x[0] = 5
    return r * 1


def _einsum_then_written(x):
    e = np.einsum("ij->ji", x)          # a view of x in NumPy
    x[0] = 5
    return e * 1


def _einsum_of_a_made_array_then_written(x):
    y = x * 2
    e = np.einsum("ij->ji", y)
    y += 1
    return e * 1


@pytest.mark.parametrize("body", [
    lambda x: np.ravel(np.abs(x), order="K"), lambda x: np.ravel(np.abs(x), order="A"),
    lambda x: np.abs(x).reshape(6, 4, order="A"), lambda x: (x * 2).reshape(6, 4, order="F"),
    lambda x: np.ravel(x, order="F"), lambda x: (x + 1).flatten("K"),
    _raveled_then_written("K"), _raveled_then_written("A"), _raveled_then_written("F"),
    _reshaped_then_written, _einsum_then_written, _einsum_of_a_made_array_then_written],
    ids=["ravel-K", "ravel-A", "reshape-A", "reshape-F", "ravel-F", "flatten-K",
         "ravel-K-written", "ravel-A-written", "ravel-F-written", "reshape-F-written",
         "einsum-written", "einsum-made-written"])
def test_index_orders_that_follow_the_layout_read_as_numpy_does(body):
    # "K" and "A" read an F-ordered array (x, or NumPy's ufunc result of it) in F order,
    # whether or not the program's own arrays are F-ordered; later writes reach views
    compiled = fusejit.compile(body)
    for layout in ("c", "f", "f", "c", "strided", "reversed", "f"):
        want_x = LAYOUTS[layout](np.arange(24.0).reshape(4, 6))
        got_x = LAYOUTS[layout](np.arange(24.0).reshape(4, 6))
        assert_same(body(want_x), compiled(got_x))
        assert_same(want_x, got_x)


@pytest.mark.parametrize("body", [
    lambda x: np.broadcast_to(x.sum(0), x.shape) * 1,
    lambda x: np.broadcast_to((x + 1)[0], x.shape) ** 1,
    lambda x: np.negative(-np.broadcast_to(x.sum(0), x.shape)),
    lambda x: (lambda y: (np.broadcast_to(y, y.shape), y))(x + 1),
    lambda x: (lambda y: (np.broadcast_to(y, y.shape).T, np.broadcast_to(y, y.shape), y))(x + 1),
    lambda x: x.reshape(x.shape), lambda x: np.broadcast_to(x, x.shape),
    lambda x: np.broadcast_to(x.sum(0) * np.arange(4.0), (4,))],
    ids=["broadcast-times-one", "broadcast-power-one", "broadcast-negated-twice",
         "broadcast-beside-its-array", "transposed-broadcast-beside-its-array",
         "argument-reshaped", "argument-broadcast", "broadcast-of-a-constant-sum"])
@pytest.mark.parametrize("first_read_only", [False, True], ids=["writeable", "read-only-first"])
def test_results_are_writeable_where_numpys_are(body, first_read_only):
    # identities folded away must not hand out a read-only broadcast view NumPy copied, nor
    # make a result read-only that NumPy's is not because another one is. Found by the
    # fuzzer: a program with a constant array (a capture: not the straight-line replay)
    # handed out its read-only broadcast writeable
    compiled = fusejit.compile(body)
    for call in range(3):
        want_x, got_x = np.arange(12.0).reshape(3, 4) + call, np.arange(12.0).reshape(3, 4) + call
        for x in (want_x, got_x):
            x.flags.writeable = not (first_read_only and call == 0)
        want, got = _as_tuple(body(want_x)), _as_tuple(compiled(got_x))
        assert_same(want, got)
        for w, g in zip(want, got, strict=True):
            assert g.flags.writeable == w.flags.writeable
            assert np.shares_memory(g, got_x) == np.shares_memory(w, want_x)


def _filled_like(x, y):
    return np.full_like(x, x[0]), np.full_like(x, y[:, :1]) + 0


def _written_by_a_ufunc(x, y):
    total = np.empty(3)
    np.add(x.sum(), 1.0, out=total)          # a scalar broadcast into the whole array
    return total, np.broadcast_to(y[0], (2, 3))


def _made_of_constants(x, y):
    return np.ones((3, 4)).T * 2, x.T + 0


def _one_written_array_twice(x, y):
    total = np.empty(3)
    np.add(x.sum(), 1.0, out=total)
    return total, total, total.reshape(3, 1), total[1:]


def _filled_then_written(x, y):
    rows = np.full_like(x, x[0])
    rows[0] += 1
    return rows, rows[1:]


@pytest.mark.parametrize("body", [_filled_like, _written_by_a_ufunc, _made_of_constants,
                                  _one_written_array_twice, _filled_then_written])
def test_arrays_numpy_wrote_in_full_come_back_as_new_arrays_laid_out_as_numpys(body):
    # Found: a result the trace holds as a broadcast came back as a read-only view with
    # zero strides on replay (``np.full_like(x, x[0])`` a view of x); a result folded into a
    # constant, or returned as one, came back C-ordered where NumPy's is F-ordered; a write
    # into a broadcast copied it F-ordered. Found by review of the first fix: one such array
    # returned twice (or with a view of it) came back as two arrays
    compiled = fusejit.compile(body)
    for k in range(3):
        x, y = np.arange(6.0).reshape(2, 3) + k, np.arange(6.0).reshape(2, 3) - k
        want, got = body(x, y), compiled(x, y)
        assert_same(want, got)    # writeable where NumPy's is
        for a, b in zip(want, got, strict=True):
            assert b.strides == a.strides and np.shares_memory(b, x) == np.shares_memory(a, x)
            assert [b is c for c in got] == [a is c for c in want]
            assert [np.shares_memory(b, c) for c in got] == \
                [np.shares_memory(a, c) for c in want]
