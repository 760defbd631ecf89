"""Hashable static leaves are keyed by value and by the type of what they hold: ``Cfg(2) ==
Cfg(2.0)`` and ``frozenset({2}) == frozenset({2.0})``, but ``x * cfg.scale`` is an int8 array
for one and a float64 array for the other (runtime/key.py ``typed``)."""
import dataclasses

import numpy as np
import pytest

import fusejit
from fusejit.runtime.key import leaf_signature
from tests.oracle import assert_same


@dataclasses.dataclass(frozen=True)
class Cfg:
    scale: object


@dataclasses.dataclass(frozen=True)
class Nested:
    inner: Cfg


class ComparedInPython:
    """Hashable, compared by an attribute in Python (no dataclass)."""

    def __init__(self, scale):
        self.scale = scale

    def __eq__(self, other):
        return isinstance(other, ComparedInPython) and self.scale == other.scale

    def __hash__(self):
        return hash(self.scale)


def _scaled(x, cfg):
    return x * cfg.scale


def _by_member(x, members):
    return x * next(iter(members))


def _by_inner(x, cfg):
    return x * cfg.inner.scale


def _divided(x, cfg):
    return np.ones(1) / cfg.scale


EQUAL_PAIRS = {   # (body, the traced value, an equal value of other types, x)
    "dataclass int/float": (_scaled, Cfg(2), Cfg(2.0), np.array([100], np.int8)),
    "dataclass float/np.float32": (_scaled, Cfg(2.0), Cfg(np.float32(2.0)),
                                   np.array([1.0], np.float32)),
    "nested dataclass": (_by_inner, Nested(Cfg(2)), Nested(Cfg(2.0)),
                         np.array([100], np.int8)),
    "frozenset": (_by_member, frozenset({2}), frozenset({2.0}), np.array([100], np.int8)),
    "Python __eq__": (_scaled, ComparedInPython(2), ComparedInPython(2.0),
                      np.array([100], np.int8)),
    "zero sign": (_divided, Cfg(0.0), Cfg(-0.0), np.ones(1)),
}


@pytest.mark.parametrize("case", EQUAL_PAIRS)
@pytest.mark.filterwarnings("ignore:divide by zero")
def test_equal_statics_holding_other_types_are_other_signatures(case):
    body, traced, other, x = EQUAL_PAIRS[case]
    assert traced == other and hash(traced) == hash(other)
    compiled = fusejit.compile(body)
    for cfg in (traced, traced, other, other, traced):
        assert_same(body(x, cfg), compiled(x, cfg))
    info = compiled.cache_info()
    assert info["signatures"] == 2 and info["traces"] == 2 and info["hits"] == 3


def test_equal_statics_of_the_same_types_share_a_signature():
    compiled, x = fusejit.compile(_scaled), np.arange(3.0)
    for cfg in (Cfg(2.0), Cfg(2.0), Cfg(2.0)):   # equal, distinct objects
        assert_same(_scaled(x, cfg), compiled(x, cfg))
    assert compiled.cache_info()["traces"] == 1


@dataclasses.dataclass(frozen=True)
class WithUnhashableField:
    scale: float
    notes: list = dataclasses.field(hash=False, compare=False)


def test_a_static_whose_fields_do_not_hash_is_keyed_by_its_own_hash():
    # Its fields cannot make a key: it stands for itself (== and hash), as before.
    a, b = WithUnhashableField(2.0, []), WithUnhashableField(2.0, [1])
    assert leaf_signature(a) == leaf_signature(b)
    compiled, x = fusejit.compile(_scaled), np.arange(3.0)
    for cfg in (a, b):
        assert_same(_scaled(x, cfg), compiled(x, cfg))
    assert compiled.cache_info()["traces"] == 1


class SlotsAndDict:
    """Compared in Python, its state in a slot: its ``__dict__`` holds nothing."""
    __slots__ = ("scale", "__dict__")

    def __init__(self, scale):
        self.scale = scale

    def __eq__(self, other):
        return isinstance(other, SlotsAndDict) and self.scale == other.scale

    def __hash__(self):
        return hash(self.scale)


class Mode(str):
    """Compared without case; its text is its state."""

    def __eq__(self, other):
        return str(self).lower() == str(other).lower()

    def __hash__(self):
        return hash(str(self).lower())

    @property
    def scale(self):
        return 3 if self.lower() == "triple" else 2


@pytest.mark.parametrize("values", [(SlotsAndDict(2), SlotsAndDict(3)),
                                    (Mode("double"), Mode("Triple"))],
                         ids=["slots-and-dict", "str-subclass"])
def test_statics_that_keep_their_state_outside_their_dict_are_told_apart(values):
    # keyed by their (empty) __dict__ alone, both were one signature
    compiled, x = fusejit.compile(_scaled), np.arange(3.0)
    for cfg in (*values, *values):
        assert_same(_scaled(x, cfg), compiled(x, cfg))
    assert compiled.cache_info()["signatures"] == 2
