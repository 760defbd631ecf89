"""``np.allclose`` and ``np.array_equal`` of traced arrays are traced (``tracer/comparisons.py``):
returned, their Python bool is computed on every replay; branched on, a guard picks the path.
Every call returns what eager NumPy returns, a Python ``bool`` included."""
import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same

NAN = np.nan
CALLS = [  # (x, y): equal, close, far, NaN in both, NaN in one
    (np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0])),
    (np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0 + 1e-9])),
    (np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.5, 3.0])),
    (np.array([1.0, NAN, 3.0]), np.array([1.0, NAN, 3.0])),
    (np.array([1.0, NAN, 3.0]), np.array([1.0, 2.0, 3.0])),
]


def returned(x, y):
    return (np.allclose(x, y), np.allclose(x, y, rtol=0.3, equal_nan=True),
            np.array_equal(x, y), np.array_equal(x, y, equal_nan=True))


def branched(x, y):
    return x * 2 if np.allclose(x, y) else x - y


def shapes_apart(x, y):
    return np.array_equal(x, x[:2]), np.array_equal(x[:2], y[:2])


@pytest.mark.parametrize("fn", [returned, branched, shapes_apart],
                         ids=lambda fn: fn.__name__)
def test_comparisons_compile_and_answer_as_numpy(fn):
    compiled = fusejit.compile(fn)
    for x, y in CALLS + CALLS:
        want, got = fn(x, y), compiled(x, y)
        assert_same(want, got)
        for w, g in zip(want, got, strict=True) if isinstance(want, tuple) else ():
            assert type(g) is type(w) is bool
    info = compiled.cache_info()
    assert info["eager_calls"] == 0
    assert info["traces"] == (2 if fn is branched else 1)   # one path per answer


def test_a_list_is_left_to_numpy_and_runs_eagerly():
    def with_a_list(x, y):
        return np.array_equal(x, [1.0, 2.0, 3.0])

    compiled = fusejit.compile(with_a_list)
    for x, y in CALLS:
        assert compiled(x, y) is with_a_list(x, y)
    assert compiled.cache_info()["eager_calls"] == len(CALLS) - 1
