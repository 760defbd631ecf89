"""Arguments the cache key holds by id (unhashable objects) never reach a program traced for
another object that later got the same id; slices are keyed by value."""
import gc
import math

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


class Config:
    """Unhashable (``__eq__`` without ``__hash__``), as a plain dataclass is."""

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, Config) and self.k == other.k


class SlottedConfig(Config):
    __slots__ = ("k",)   # no __weakref__: the key keeps the object itself


def scaled(x, config):
    return x * config.k


def window(x, s):
    return x[s] * 2


@pytest.mark.parametrize("cls", [Config, SlottedConfig], ids=["weakref", "slots"])
def test_a_new_object_with_a_dead_objects_id_is_traced_for_itself(cls):
    compiled = fusejit.compile(scaled)
    x = np.arange(4.0)
    for k in range(40):   # CPython hands a freed object's id to the next one of its size
        config = cls(k)
        assert_same(scaled(x, config), compiled(x, config))
        del config
        gc.collect()
    assert compiled.cache_info()["traces"] == 40


def test_the_entry_of_an_object_goes_when_the_object_does():
    compiled = fusejit.compile(scaled)
    kept = Config(2)
    for k in range(5):
        compiled(np.ones(3), Config(k))
    compiled(np.ones(3), kept)
    gc.collect()
    assert compiled.cache_info()["signatures"] == 1
    compiled(np.ones(3), kept)
    assert compiled.cache_info()["hits"] == 1


def test_static_argnames_holding_an_unhashable_object_are_keyed_safely():
    compiled = fusejit.compile(scaled, static_argnames=("config",))
    x = np.arange(3.0)
    for k in range(20):
        assert_same(scaled(x, Config(k)), compiled(x, config=Config(k)))
        gc.collect()


def test_equal_slices_share_a_signature():
    compiled = fusejit.compile(window)
    x = np.arange(10.0)
    for start in (0, 1, 0, 1, 0):
        s = slice(start, start + 3)
        assert_same(window(x, s), compiled(x, s))
    info = compiled.cache_info()
    assert (info["signatures"], info["hits"]) == (2, 3)


def test_explaining_an_object_argument_keeps_its_entry():
    # explain traces on copies of the arguments; the entry lives as long as the original
    compiled = fusejit.compile(scaled)
    config, x = Config(3), np.arange(3.0)
    assert "compiled" in str(compiled.explain(x, config))
    gc.collect()
    assert_same(scaled(x, config), compiled(x, config))
    assert compiled.cache_info()["traces"] == 1


def test_slices_with_bounds_of_another_type_are_another_signature():
    compiled = fusejit.compile(window)
    x = np.arange(10.0)
    assert_same(window(x, slice(1, 3)), compiled(x, slice(1, 3)))
    with pytest.raises(TypeError, match="slice indices must be integers"):
        compiled(x, slice(1.0, 3))


def test_static_values_equal_across_types_are_keyed_apart():
    def times(x, n):
        return x.astype(int) * n

    compiled = fusejit.compile(times, static_argnames=("n",))
    x = np.arange(3.0)
    for n in (2, 2.0, True, 1):
        assert_same(times(x, n=n), compiled(x, n=n))


def test_dict_keys_equal_across_types_are_keyed_apart():
    def lookup(x, table):
        return x * len(str(next(iter(table))))

    compiled = fusejit.compile(lookup)
    x = np.arange(3.0)
    for key in (1, 1.0, True, 1):
        assert_same(lookup(x, {key: x}), compiled(x, {key: x}))
    assert compiled.cache_info()["signatures"] == 3


def test_static_signed_zeros_are_keyed_apart_and_nan_is_one_value():
    def signed(x, z):
        return x * math.copysign(1.0, z)

    compiled = fusejit.compile(signed, static_argnames=("z",))
    x = np.arange(3.0)
    for z in (0.0, -0.0, 0.0, float("nan"), float("nan")):
        assert_same(signed(x, z=z), compiled(x, z=z))
    assert compiled.cache_info()["signatures"] == 3


class _RaisingHash:
    def __hash__(self):
        raise RuntimeError("no hash for this one")


class _ArrayEquality:
    """An array-like whose ``==`` answers elementwise, as NumPy's does."""

    def __init__(self, k):
        self.k = k

    def __hash__(self):
        return hash(self.k)

    def __eq__(self, other):
        return np.array([self.k, self.k]) == np.array([other.k, other.k])


@pytest.mark.parametrize("make", [_RaisingHash, lambda: _ArrayEquality(2.0),
                                  lambda: memoryview(np.ones(2))],
                         ids=["hash raises", "== gives an array", "memoryview"])
def test_arguments_whose_hash_or_equality_is_not_a_keys(make):
    compiled = fusejit.compile(lambda x, other: x * 2)
    x = np.arange(4.0)
    for _ in range(3):   # a fresh object each call, compared with the last one's key
        assert_same(x * 2, compiled(x, make()))


class _Holder:
    """A duck array: NumPy converts it through ``__array__`` in C, reading ``data``."""

    def __init__(self, data):
        self.data = data

    def __array__(self, dtype=None, copy=None):
        return self.data


def test_an_argument_with_array_runs_eagerly_and_sees_its_data_change():
    compiled = fusejit.compile(lambda h: np.tanh(h) * 2)
    held = _Holder(np.arange(3.0))
    assert_same(np.tanh(held.data) * 2, compiled(held))
    held.data = held.data + 1.0
    assert_same(np.tanh(held.data) * 2, compiled(held))
    assert compiled.cache_info()["eager_calls"] == 2
    assert "__array__" in str(compiled.explain(held))


class _OptsOut:
    """Sets ``__array_ufunc__ = None``: ``x * o`` is ``o.__rmul__(x)``, not a ufunc."""

    __array_ufunc__ = None

    def __rmul__(self, other):
        return other * 3


def test_an_operand_that_opts_out_of_ufuncs_gets_its_reflected_operator():
    compiled = fusejit.compile(lambda x, o: x * o + 1)
    x = np.arange(3.0)
    assert_same(x * 3 + 1, compiled(x, _OptsOut()))
