"""Returned values that are neither arrays, Python numbers nor dict/list/tuple containers.

A replay hands back such a leaf as it was returned while tracing. That is right for immutable
values and for objects that existed before the call (an argument, ``self``, a global); for an
object the body made (a dataclass of results, a ``SimpleNamespace``, a generator, a closure
over traced values) every replay would return the first call's object, holding proxies with
that call's values. Such a result runs the signature eagerly, and the first call's object
gets plain arrays in place of the proxies it holds."""
from __future__ import annotations

import contextlib
import types
from collections import deque

import numpy as np

from .captures import slot_names
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


def release(leaf, depth: int = 4) -> None:
    """Plain values in place of the proxies the object's attributes, slots and items hold,
    ``depth`` levels down (also where the signature runs eagerly for another reason: a duck
    array's result, ``Box(x * 2)`` of a body that changed Python state)."""
    from .tracer import Tracer
    if depth == 0 or isinstance(leaf, (*IMMUTABLE, Tracer)) or type(leaf) is np.ndarray:
        return
    _release_items(leaf, depth)
    attributes = getattr(leaf, "__dict__", None)
    names = list(attributes) if type(attributes) is dict else []
    for name in names + slot_names(type(leaf)):
        value = getattr(leaf, name, None)
        plain = _plain(value, depth)
        if plain is not value:
            object.__setattr__(leaf, name, plain)


def concrete(value):
    """``value`` with concrete values for the proxies it holds (``_plain``)."""
    return _plain(value, 4)


def _plain(value, depth: int):
    """``value`` with concrete values for proxies: a new list, tuple or dict (``unwrap``), a
    container or object of another kind changed in place."""
    plain = unwrap(value)
    if plain is not value or depth <= 1:
        return plain
    if isinstance(value, (tuple, frozenset)):   # a tuple subclass: made again, if it can be
        items = [_plain(item, depth - 1) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            with contextlib.suppress(Exception):
                return type(value)(items)
        return value
    release(value, depth - 1)
    return value


def _release_items(leaf, depth: int) -> None:
    """Plain values in place of the proxies a container of a kind the result's tree does not
    walk holds (an ``OrderedDict``, a ``deque``, a ``Counter``, a set, a list subclass)."""
    if isinstance(leaf, dict):
        for key, value in list(dict.items(leaf)):
            plain = _plain(value, depth)
            if plain is not value:
                dict.__setitem__(leaf, key, plain)   # not a subclass's own ``__setitem__``
    elif isinstance(leaf, (list, deque)):
        for key, value in enumerate(list(leaf)):
            plain = _plain(value, depth)
            if plain is not value:
                (list.__setitem__ if isinstance(leaf, list) else deque.__setitem__)(
                    leaf, key, plain)
    elif isinstance(leaf, set):
        items = [_plain(value, depth) for value in leaf]
        set.clear(leaf)
        set.update(leaf, items)
