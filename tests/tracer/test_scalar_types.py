"""``np.float32(x)`` and NumPy's other scalar types called on traced values compile as casts
(``tracer/scalar_types.py``), and so do ``np.asarray``/``np.array`` of a traced scalar: the
program replays for new data and new learning rates, and every call returns what eager NumPy
returns -- the same scalar types, dtypes, promotions and the array itself where NumPy gives it
back. Uses of the types that are not calls see NumPy's own classes."""
import numpy as np
import pytest
from numpy import float32, int64

import fusejit
from tests.oracle import assert_same, tolerance_for

rng = np.random.default_rng(11)


def inputs(seed):
    r = np.random.default_rng(seed)
    return (r.standard_normal((3, 4)).astype(np.float32), float(r.uniform(0.01, 0.5)))


def sgd(w, lr):
    return w - np.float32(lr) * w


def promoted(w, lr):
    return w * np.float64(lr)                       # a float64 scalar: the result is float64


def of_a_sum(w, lr):
    return w / np.float32(w.sum()) + np.float64(w.mean())


def truncated(w, lr):
    return np.int64(w.sum() * 100), np.int32(w * 10)


def as_bool(w, lr):
    return np.bool_(w.sum() > 0), np.bool_(w)


def of_an_item(w, lr):
    return w * np.float32(w.max().item())


def of_an_element(w, lr):
    return np.float64(w[1, 2]) * w


def returned(w, lr):
    return np.float32(lr), np.float64(w.sum()), np.complex64(w)


def same_dtype(w, lr):
    v = np.float32(w)      # w itself: NumPy gives an array of that dtype back
    v += 1
    return v


def zero_d_arrays(w, lr):
    scale = np.asarray(lr, dtype=np.float32)          # a 0-d array: strong, unlike lr
    total = np.array(w.sum())
    return w * scale, total, np.asanyarray(w.max().item()), np.asarray(lr) * w


def imported_by_name(w, lr):
    return w * float32(lr) + int64(w.sum()), isinstance(w.sum(), float32)


CASES = [sgd, promoted, of_a_sum, truncated, as_bool, of_an_item, of_an_element, returned,
         zero_d_arrays, imported_by_name]
# float64 results of a float32 sum: the compiled sum adds in the order the CPU's vector width
# gives (reassociated), NumPy's in its own, so they agree to float32's precision only (an
# AVX2 host differs from NumPy in the last bit, an AVX-512 host did not)
FLOAT32_SUMS = (of_a_sum, returned)


@pytest.mark.parametrize("fn", CASES, ids=lambda fn: fn.__name__)
def test_scalar_type_calls_compile_and_replay_as_numpy(fn):
    compiled = fusejit.compile(fn)
    tolerance = tolerance_for(np.float32) if fn in FLOAT32_SUMS else None
    for seed in range(3):
        assert_same(fn(*inputs(seed)), compiled(*inputs(seed)), tolerance)
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["eager_calls"]) == (1, 2, 0)


def test_an_array_of_that_dtype_is_given_back_and_written_through():
    compiled = fusejit.compile(same_dtype)
    for seed in range(3):
        mine, _ = inputs(seed)
        eager = mine.copy()
        assert_same(same_dtype(eager, 0.1), compiled(mine, 0.1))
        np.testing.assert_array_equal(mine, eager)
    assert compiled.cache_info()["eager_calls"] == 0


def uses_the_classes(w, lr):
    checks = (w.dtype.type is np.float32, isinstance(w.sum(), np.float32),
              w.dtype == np.float32, np.float32.__name__, np.issubdtype(w.dtype, np.float32))
    return w.astype(np.float64) * np.float32(2.5), checks


def test_the_types_not_called_are_numpys_own():
    compiled = fusejit.compile(uses_the_classes)
    for seed in range(3):
        assert_same(uses_the_classes(*inputs(seed)), compiled(*inputs(seed)))
    assert compiled(*inputs(0))[1] == (True, True, True, "float32", True)
    assert compiled.cache_info()["eager_calls"] == 0


def bound_first(w, lr):
    make = np.float32
    return w * make(lr)


def test_a_type_bound_to_a_local_name_first_runs_eagerly_with_numpys_result():
    compiled = fusejit.compile(bound_first)
    for seed in range(3):
        assert_same(bound_first(*inputs(seed)), compiled(*inputs(seed)))
    assert compiled.cache_info()["eager_calls"] == 2


def test_the_ir_shows_the_cast():
    text = fusejit.compile(sgd).ir(*inputs(0))
    assert "cast lr, dtype=f32" in text
