"""The body's feature tests of a value (``hasattr``, ``isinstance`` of an ABC, ``try: len(v)``)
take the branch they take eagerly: a scalar's proxy has no ``len``, a float's no ``shape``."""
from collections.abc import Container, Hashable, Iterable, Sized

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


def _sized_or_not(x):
    s = x.sum()
    return x * 2 if hasattr(s, "__len__") else x * 3


def _iterable_abc(x):
    m = x.max()
    return x - m if isinstance(m, (Iterable, Sized)) else x + m


def _len_or_minus_one(x):
    s = x.mean()
    try:
        n = len(s)
    except TypeError:
        n = -1
    return x * n


def _as_array(v):
    return v if hasattr(v, "shape") else np.asarray(v)


def _scaled_by_a_float(x, lr):
    return x * _as_array(lr) + (1.0 if hasattr(lr, "dtype") or hasattr(lr, "sum") else 2.0)


def _arrays_keep_the_sequence_protocol(x):
    rows = [r.sum() for r in x]
    x[0] = x[1] * 2
    return (x * len(x) + hasattr(x, "__len__") + isinstance(x, Iterable), rows, 2.0 in x,
            x.sum()[()])


def _as_count(v):
    return int(v) if hasattr(v, "__index__") else v


def _integer_like(x, lr):
    # int() would truncate both: a float and np.float64 have no __index__
    return x * _as_count(lr) + _as_count(x.sum()) + _as_count(x.shape[0])


def _protocols(x, lr):
    s, v = x.sum(), x[0, 0].item()
    flags = [hasattr(lr, "__iter__"), hasattr(s, "__iter__"), isinstance(lr, Container),
             isinstance(s, Container), isinstance(x, Hashable), isinstance(x[0], Hashable),
             isinstance(s, Hashable), hasattr(v, "__array_function__"),
             hasattr(s, "__array_ufunc__"), hasattr(x, "__array_ufunc__")]
    return x * sum(flag << i for i, flag in enumerate(flags))


def _compared_with_none(x):
    return x == None, x != None, None in x, x == "a", np.not_equal(x, None)  # noqa: E711


CASES = [(_sized_or_not, ()), (_iterable_abc, ()), (_len_or_minus_one, ()),
         (_scaled_by_a_float, (0.5,)), (_arrays_keep_the_sequence_protocol, ()),
         (_integer_like, (2.5,)), (_protocols, (0.5,)), (_compared_with_none, ())]


@pytest.mark.parametrize("fn, extra", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_feature_tests_take_the_eager_branch(fn, extra):
    compiled = fusejit.compile(fn)
    for scale in (1.0, 2.0, -3.0):
        x = np.arange(6, dtype=np.float32).reshape(2, 3) * np.float32(scale)
        want, mine = x.copy(), x.copy()
        assert_same(fn(want, *extra), compiled(mine, *extra))
        assert_same(want, mine)
    if fn is not _scaled_by_a_float:   # np.asarray of a traced float runs eagerly (documented)
        assert compiled.cache_info()["eager_calls"] == 0


@pytest.mark.parametrize("body, message", [
    (lambda x, lr: list(x.sum()), "not iterable"),
    (lambda x, lr: 1.0 in x.max(), "argument of type 'numpy.float32' is not iterable"),
    (lambda x, lr: lr[0], "not subscriptable"),
    (lambda x, lr: len(lr), "has no len"),
    (lambda x, lr: lr.shape, "'float' object has no attribute 'shape'"),
    (lambda x, lr: tuple(x.sum()), "'numpy.float32' object is not iterable"),
    (lambda x, lr: [a for a, b in [lr]], "cannot unpack non-iterable float object"),
])
def test_what_a_scalar_lacks_raises_as_numpy_does(body, message):
    x = np.ones(3, dtype=np.float32)
    with pytest.raises((TypeError, AttributeError), match=message):
        body(x, 0.5)
    with pytest.raises((TypeError, AttributeError), match=message):
        fusejit.compile(body)(x, 0.5)
