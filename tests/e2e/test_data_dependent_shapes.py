"""Values whose shape depends on the data (``x[x > 0]``, ``np.nonzero``) take one trace path.

What NumPy computes from them runs as NumPy calls at replay, with the count the call has; a
shape guard is kept only where code planned for the traced shape reads the value, or Python
looks at the shape (``len``, ``.size``, a loop). Each call is checked against eager NumPy.
"""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

rng = np.random.default_rng(7)


def _draws(n=16):
    """Vectors with different counts of positive elements: some, none, all, one NaN."""
    draws = [rng.standard_normal(n) for _ in range(4)]
    draws += [-np.abs(draws[0]) - 1, np.abs(draws[1]) + 1, np.where(draws[2] > 1, np.nan,
                                                                     draws[2])]
    return draws


def masked_moments(x):
    v = x[np.isfinite(x)]
    return v.mean(), v.std(), np.median(v), np.exp(x[x < 0]).sum()


def masked_chain(x):
    v = x[x > 0.5] * 2 + 1
    return np.sqrt(v).sum(), v, v[:3]


def nonzero_positions(x):
    (i,) = np.nonzero(x > 0)
    return i * 2, x[np.where(x > 0)]


def rows_kept(x):
    rows = x.reshape(-1, 4)
    kept = rows[rows[:, 0] > 0]
    return kept.sum(axis=0), kept @ np.arange(4.0), (kept * 2).max(initial=-np.inf)


def masked_store_of_a_gather(x):
    y = np.zeros_like(x)
    y[x > 0] = np.log1p(x[x > 0])
    return y


def int_power_where_positive(x):
    i = np.nan_to_num(x * 3).astype(np.int64)
    i[i >= 0] = 2 ** i[i >= 0]     # NumPy refuses negative integer powers: only where >= 0
    return i


@pytest.mark.parametrize("fn", [masked_moments, masked_chain, nonzero_positions, rows_kept,
                                masked_store_of_a_gather, int_power_where_positive])
def test_a_new_count_replays_the_same_path(fn):
    compiled = fusejit.compile(fn)
    for x in _draws():
        assert_same(fn(x.copy()), compiled(x.copy()))
    info = compiled.cache_info()
    assert (info["traces"], info["paths"], info["eager_calls"]) == (1, 1, 0)


def test_numpys_error_for_no_element_is_raised_on_replay():
    @fusejit.compile
    def largest_positive(x):
        return x[x > 0].max()

    x = np.abs(rng.standard_normal(6)) + 0.5
    assert_same(largest_positive.fn(x), largest_positive(x))
    with pytest.raises(ValueError, match="zero-size array") as caught:
        largest_positive(-x)
    assert "test_data_dependent_shapes.py" in "".join(str(f) for f in caught.traceback)
    assert_same(largest_positive.fn(x * 2), largest_positive(x * 2))
    assert largest_positive.cache_info()["eager_calls"] == 0


def test_a_count_python_reads_keeps_a_guard_per_count():
    @fusejit.compile
    def mean_of_positive(x):
        v = x[x > 0]
        return v.sum() / len(v)

    xs = [np.array([1.0, -1, 2, 3]), np.array([1.0, 2, -3, -4]), np.array([5.0, 1, -1, 2])]
    for x in xs:
        assert_same(mean_of_positive.fn(x), mean_of_positive(x))
    info = mean_of_positive.cache_info()
    assert (info["traces"], info["paths"], info["hits"]) == (2, 2, 1)


def test_a_count_that_no_longer_broadcasts_raises_numpys_error():
    @fusejit.compile
    def broadcast_back(x, w):
        v = x[x > 0]
        return v + w          # w has the traced count's shape: NumPy raises for another

    x, w = np.array([1.0, -2, 3]), np.ones(2)
    assert_same(broadcast_back.fn(x, w), broadcast_back(x, w))
    with pytest.raises(ValueError, match="broadcast"):
        broadcast_back(np.array([1.0, 2, 3]), w)


def _length_of_bincount(x, y):
    return y[:len(np.bincount(x))] * 2


def _bincount_and_its_shape(x):
    b = np.bincount(x)
    return b, b.shape, np.zeros_like(np.histogram(x, bins="auto")[0])


@pytest.mark.parametrize("fn", [_length_of_bincount, _bincount_and_its_shape])
def test_a_shape_numpy_decides_is_guarded_where_python_reads_it(fn):
    compiled = fusejit.compile(fn)
    y = np.arange(10.0)
    for x in ([0, 4], [0, 1], [0, 7], [0, 1]):
        args = (np.array(x), y)[:fn.__code__.co_argcount]
        assert_same(fn(*args), compiled(*args))
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["eager_calls"]) == (3, 1, 0)


def test_a_complex_guard_tells_the_zeros_apart():
    import cmath

    @fusejit.compile
    def phase(x):
        return np.float64(cmath.phase(x.item()))

    for z in (complex(-1, 0.0), complex(-1, -0.0), complex(-1, 0.0)):
        assert_same(phase.fn(np.array(z)), phase(np.array(z)))


def test_an_unused_op_of_two_selections_still_raises_numpys_broadcast_error():
    @fusejit.compile
    def doubled(x):
        x[x > 0] * x[x < 0]    # noqa: B018 -- unused; NumPy raises once the counts differ
        return x * 2

    balanced = np.array([1.0, -1.0, 2.0, -2.0])
    assert_same(doubled.fn(balanced), doubled(balanced))
    with pytest.raises(ValueError, match="broadcast"):
        doubled(np.array([1.0, 2.0, 3.0, 0.0]))


def _slice_store_into_selection(x, w):
    v = x[x > 0]
    v[:2] = w * 2           # a slice, planned for the traced count: guarded
    return v


def _ufunc_into_selection(x, w):
    v = x[x > 0]
    np.add(x.sum(), 0.0, out=v)
    return v, v.sum()


def _squeezed_selection(x, w):
    v = x[x > 0].squeeze()  # one selected element drops the axis
    return np.exp(v) + 1, v * 10 if v.ndim == 0 else v * 2


def _mask_of_another_selection(x, w):
    a, b = x[x > 0], x[x < 2]
    a[b > 0]                # noqa: B018 -- unused; NumPy raises once the counts differ
    return x * 2


@pytest.mark.parametrize("fn", [_slice_store_into_selection, _ufunc_into_selection,
                                _squeezed_selection, _mask_of_another_selection])
def test_selections_used_at_their_traced_shape_answer_as_numpy(fn):
    compiled = fusejit.compile(fn)
    w = np.array([0.5, 0.25])
    for x in ([-1.0, -2.0, 3.0, 4.0], [1.0, 2.0, -1.0, -1.0], [3.0, 1.0, 2.0, 4.0],
              [-1.0, 5.0, -2.0, -3.0], [-1.0, -2.0, -3.0, -4.0], [1.0, 2.0, 5.0, 0.5]):
        x = np.array(x)
        try:
            want = fn(x.copy(), w)
        except (ValueError, IndexError) as exc:
            with pytest.raises(type(exc)):
                compiled(x.copy(), w)
            continue
        assert_same(want, compiled(x.copy(), w))


def test_a_namedtuple_of_traced_arrays_is_numpys_sequence():
    @fusejit.compile
    def counted(x):
        return np.concatenate(np.unique_counts(x)) * 2

    for x in ([1.0, 2.0, 2.0, 3.0], [1.0, 1.0, 1.0, 4.0]):
        assert_same(counted.fn(np.array(x)), counted(np.array(x)))
