"""NumPy functions that write into their first argument (``np.put``, ``np.put_along_axis``,
``np.putmask``, ``np.place``, ``np.fill_diagonal``, ``x.put``, ``np.maximum.at`` and the other
ufuncs' ``at``): compiled as a host op on a copy and a traced write, the same results and
arguments as eagerly (``tracer/inplace_calls.py``)."""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same, check_calls


def _one_hot_of_max(x):
    out = np.zeros_like(x)
    np.put_along_axis(out, np.argmax(x, axis=-1)[:, None], 1.0, axis=-1)
    return out * 2 + x


def _relu_by_putmask(x):
    y = x * 2
    np.putmask(y, y < 0, x)          # values cycle over the masked positions, as NumPy's
    return y + 1


def _place(x):
    y = x - 1
    np.place(y, y > 0, [7.0, -7.0])
    return y


def _put_clipped(x):
    y = x * 3
    np.put(y, [0, -1, 50], [1.5, 2.5, 3.5], mode="clip")
    return y


def _put_method(x):
    y = x + 0.5
    y.put([1, 2], 0.0)
    return y


def _zero_diagonal_of_gram(x):
    g = x @ x.T
    np.fill_diagonal(g, 0)
    return g.sum(axis=1)


def _wrapped_diagonal(x):
    y = np.tanh(x)
    np.fill_diagonal(y, [1.0, 2.0], wrap=True)
    return y


def _scatter_max(x):
    out = np.full(4, -np.inf, x.dtype)
    np.maximum.at(out, np.arange(x.size) % 4, x.ravel())   # every index repeated
    return out * 2


def _negate_some(x):
    y = x + 1
    np.negative.at(y, (slice(None), [0, 2, 0]))           # a unary ufunc, column 0 twice
    return y


CASES = [(_scatter_max, (3, 5)), (_negate_some, (3, 4)), (_one_hot_of_max, (5, 6)),
         (_relu_by_putmask, (4, 5)), (_place, (3, 7)), (_put_clipped, (4, 4)),
         (_put_method, (2, 3)), (_zero_diagonal_of_gram, (6, 4)), (_wrapped_diagonal, (9, 3))]


@pytest.mark.parametrize("fn, shape", CASES, ids=[fn.__name__.strip("_") for fn, _ in CASES])
def test_a_function_writing_into_an_array_compiles(fn, shape):
    compiled = check_calls(fn, lambda call: (_data(shape, call),))
    info = compiled.cache_info()
    assert info["eager_calls"] == 0 and info["hits"] == 2


def _diagonal_of_argument(x):
    np.fill_diagonal(x, -1.0)
    return x.sum()


def _rows_of_argument_view(x, i):
    np.put_along_axis(x[:, 1:], i, 0.0, axis=1)
    return x * 2


def _scatter_min_into_argument(x, i, v):
    np.minimum.at(x, i, v)
    return x.mean()


def test_a_ufunc_at_writes_an_argument():
    def args(call):
        rng = np.random.default_rng(call)
        return _data((6,), call), rng.integers(0, 6, 10), _data((10,), call + 5)

    compiled = check_calls(_scatter_min_into_argument, args)
    assert compiled.cache_info()["eager_calls"] == 0


def test_the_write_reaches_an_argument():
    compiled = check_calls(_diagonal_of_argument, lambda call: (_data((4, 4), call),))
    assert compiled.cache_info()["eager_calls"] == 0


def test_the_write_reaches_the_base_of_a_view_of_an_argument():
    def args(call):
        rng = np.random.default_rng(call)
        return _data((4, 5), call), rng.integers(0, 4, (4, 2))

    compiled = check_calls(_rows_of_argument_view, args)
    assert compiled.cache_info()["eager_calls"] == 0


def test_what_read_the_array_before_the_call_reads_the_old_values():
    def before_and_after(x):
        y = x * 2
        total = y.sum(axis=0)
        np.putmask(y, y < 0, 0.0)
        return total, y - 1

    check_calls(before_and_after, lambda call: (_data((5, 3), call),))


def test_an_index_out_of_range_on_a_replay_raises_numpys_error_and_writes_nothing():
    compiled = fusejit.compile(_rows_of_argument_view)
    x, i = _data((3, 5), 0), np.zeros((3, 1), np.int64)
    compiled(x.copy(), i)
    bad = np.full((3, 1), 9)
    for fn in (_rows_of_argument_view, compiled):
        kept = x.copy()
        with pytest.raises(IndexError, match="index 9 is out of bounds for axis 1 with size 4"):
            fn(kept, bad)
        assert_same(x, kept)


def test_a_write_into_a_data_dependent_shape_runs_eagerly_and_says_why():
    def put_into_selection(x):
        y = x[x > 0]
        np.put(y, [0], [9.0])
        return y

    compiled = check_calls(put_into_selection, lambda call: (_data((4, 4), call) + 1,))
    info = compiled.cache_info()
    assert info["eager_signatures"] == 1 and info["paths"] == 0
    assert "np.put writes into an array whose shape depends on the data" in str(
        compiled.explain())


def _data(shape, call):
    return np.random.default_rng(call).standard_normal(shape).astype(np.float32)


def _dot_into(a, b, out):
    np.dot(a, b, out=out)
    return out + 1


def _method_dot_into(a, b, out):
    return a.dot(b, out=out) * 2


def _einsum_into(a, b, out):
    np.einsum("ij,jk->ik", a, b, out=out)
    return out


def _dot_into_an_operand(a, b, out):
    return np.dot(a, b, out=a) + out


def _einsum_sum_into(a, b, out):
    return np.einsum("ij->i", a, out=out[:, 0].copy())


@pytest.mark.parametrize("fn", [_dot_into, _method_dot_into, _einsum_into, _dot_into_an_operand,
                                _einsum_sum_into])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_a_product_written_into_out_compiles(fn, dtype):
    def make_args(call):
        rng = np.random.default_rng(call)
        return tuple((rng.standard_normal((4, 4)) * 4).astype(dtype) for _ in range(3))
    compiled = check_calls(fn, make_args)
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_product_into_a_0d_out_returns_numpys_scalar():
    def dotted(a, b, out):
        return np.dot(a, b, out=out)

    check_calls(dotted, lambda call: (np.arange(3.0) + call, np.ones(3), np.zeros(())))
