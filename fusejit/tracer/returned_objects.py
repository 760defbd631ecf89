"""Returned values that are neither arrays, Python numbers nor dict/list/tuple containers.

A replay hands back such a leaf as it was returned while tracing. That is right for immutable
values and for objects that existed before the call (an argument, ``self``, a global); for an
object the body made (a dataclass of results, a ``SimpleNamespace``, a generator, a closure
over traced values) every replay would return the first call's object, holding proxies with
that call's values. Such a result runs the signature eagerly, and the first call's object
gets plain arrays in place of the proxies it holds."""
from __future__ import annotations

import types
from collections import deque

import numpy as np

from .context import unwrap
from .returned_containers import ArgumentContainer, HeldContainer

IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, range, slice, type(Ellipsis),
             np.dtype, np.generic, type, types.ModuleType, types.BuiltinFunctionType,
             ArgumentContainer, HeldContainer)
REASON = ("the body returned a {kind} object it made (not an array, a Python number or a "
          "dict, list or tuple of them): a replay cannot build it again")


def check(recorder, leaf) -> None:
    """Run eagerly when ``leaf`` (a returned constant) is an object the body made."""
    if _replayable(recorder, leaf):
        return
    recorder.set_fallback(REASON.format(kind=type(leaf).__name__), None)
    release(leaf)


def _replayable(recorder, leaf) -> bool:
    if isinstance(leaf, IMMUTABLE):
        return True
    if type(leaf) is types.FunctionType and leaf.__closure__ is None:
        return True   # a module-level function, or one that closes over nothing
    return any(leaf is existing for existing in _existing(recorder))


def _existing(recorder):
    """The objects the traced function reaches by name: arguments, ``self``, its globals and
    closure cells."""
    yield from recorder.leaves
    for source, _ in recorder.roots.candidates:
        kind = source[0]
        if kind == "object":
            yield source[1]
        elif kind == "global":
            yield source[1].get(source[2])
        elif kind == "cell":
            try:
                yield source[1].cell_contents
            except ValueError:   # an empty cell
                continue


def release(leaf) -> None:
    """Plain values in place of the proxies the object's attributes hold (also where the
    signature runs eagerly for another reason: a duck array's result, ``Box(x * 2)`` of a
    body that changed Python state)."""
    from .tracer import Tracer
    if isinstance(leaf, (*IMMUTABLE, Tracer)) or type(leaf) is np.ndarray:
        return
    _release_items(leaf)
    try:
        attributes = vars(leaf)
    except TypeError:   # no __dict__ (a generator, __slots__)
        return
    for name, value in list(attributes.items()):
        plain = unwrap(value)
        if plain is not value:
            object.__setattr__(leaf, name, plain)


def _release_items(leaf) -> None:
    """Plain values in place of the proxies a container of a kind the result's tree does not
    walk holds (an ``OrderedDict``, a ``deque``, a ``Counter``, a set, a list subclass)."""
    if isinstance(leaf, dict):
        for key, value in list(dict.items(leaf)):
            plain = unwrap(value)
            if plain is not value:
                dict.__setitem__(leaf, key, plain)   # not a subclass's own ``__setitem__``
    elif isinstance(leaf, (list, deque)):
        for key, value in enumerate(list(leaf)):
            plain = unwrap(value)
            if plain is not value:
                (list.__setitem__ if isinstance(leaf, list) else deque.__setitem__)(
                    leaf, key, plain)
    elif isinstance(leaf, set):
        items = [unwrap(value) for value in leaf]
        set.clear(leaf)
        set.update(leaf, items)
