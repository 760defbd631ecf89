"""The containers on a captured array's path are checked before each replay: a body's Python
loop over them ran once per item, in their order, while tracing (docs/tracing.md, "Captured
arrays are read by reference"). A list, tuple or deque is checked by its length, a dict by its
keys in order; subclasses (``OrderedDict``, ``defaultdict``, a ``list`` subclass) alike."""
import collections

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


class _Items(list):
    pass


class _Holder:
    pass


def _summed(items):
    total = 0
    for value in (items.values() if hasattr(items, "values") else items):
        total = total + value
    return total


def _grow_mapping(items):
    items["c"] = np.full(3, 4.0)


def _grow_sequence(items):
    items.append(np.full(3, 4.0))


CONTAINERS = {
    "OrderedDict": (lambda: collections.OrderedDict(a=np.ones(3), b=np.full(3, 2.0)),
                    _grow_mapping),
    "defaultdict": (lambda: collections.defaultdict(int, a=np.ones(3), b=np.full(3, 2.0)),
                    _grow_mapping),
    "list subclass": (lambda: _Items([np.ones(3), np.full(3, 2.0)]), _grow_sequence),
    "deque": (lambda: collections.deque([np.ones(3), np.full(3, 2.0)]), _grow_sequence),
}


@pytest.mark.parametrize("kind", CONTAINERS)
def test_an_argument_container_that_gains_an_item_is_traced_again(kind):
    # These are leaves of the key (by identity), not pytrees: a replay after the item was
    # added summed the items seen while tracing.
    make, grow = CONTAINERS[kind]
    compiled, items = fusejit.compile(_summed), make()
    for change in (lambda: None, lambda: None, lambda: grow(items)):
        change()
        assert_same(_summed(items), compiled(items))
    info = compiled.cache_info()
    assert info["traces"] == 2 and info["hits"] == 1 and info["eager_calls"] == 0


@pytest.mark.parametrize("kind", CONTAINERS)
def test_arrays_in_an_argument_container_are_read_by_reference(kind):
    # A deque's arrays were constants of the first call: its items were never proxied.
    make, _ = CONTAINERS[kind]
    compiled, items = fusejit.compile(_summed), make()
    first = next(iter(items.values() if hasattr(items, "values") else items))
    for step in range(3):
        first += step
        assert_same(_summed(items), compiled(items))
    assert compiled.cache_info()["traces"] == 1


def _weighted(x, o):
    y = x
    for key in o.d:
        if key.startswith("w"):
            y = y * o.d[key]
    return y


def test_a_captured_dict_that_swaps_a_key_keeping_its_size_is_traced_again():
    # Only the size was checked: the loop over the old keys replayed (x * w1, not x * w1 * w2).
    compiled, o, x = fusejit.compile(_weighted), _Holder(), np.ones(3)
    o.d = {"w1": np.full(3, 2.0), "b": np.full(3, 5.0)}

    def swap():
        del o.d["b"]
        o.d["w2"] = np.full(3, 3.0)

    for change in (lambda: None, lambda: None, swap, lambda: o.d.__setitem__("w2", np.ones(3))):
        change()
        assert_same(_weighted(x, o), compiled(x, o))
    info = compiled.cache_info()
    assert info["traces"] == 2 and info["hits"] == 2


PARAMS = {"a": np.full(3, 1.0), "b": np.full(3, 10.0)}


def _first_twice(x):
    first, second = list(PARAMS.values())
    return x + first * 2 + second


def test_a_captured_dict_reordered_in_place_is_traced_again():
    # Same keys, another order: list(PARAMS.values()) replayed the traced order.
    compiled, x = fusejit.compile(_first_twice), np.zeros(3)

    def move_to_end(key):
        PARAMS[key] = PARAMS.pop(key)

    try:
        for change in (lambda: None, lambda: None, lambda: move_to_end("a"),
                       lambda: move_to_end("b")):
            change()
            assert_same(_first_twice(x), compiled(x))
    finally:
        PARAMS.clear()
        PARAMS.update(a=np.full(3, 1.0), b=np.full(3, 10.0))
    info = compiled.cache_info()   # back in the first order, the first path applies again
    assert info["traces"] == 2 and info["hits"] == 2


def test_a_captured_dict_whose_arrays_are_rebound_still_replays():
    # The keys are what is checked, not the values: a new array of the same shape is read.
    compiled, x = fusejit.compile(_first_twice), np.zeros(3)
    try:
        for step in range(3):
            PARAMS["b"] = np.full(3, float(step))
            assert_same(_first_twice(x), compiled(x))
    finally:
        PARAMS["b"] = np.full(3, 10.0)
    assert compiled.cache_info()["traces"] == 1
