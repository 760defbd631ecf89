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

from .captures import slot_items
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
    array's result, ``Box(x * 2)`` of a body that changed Python state). What holds no proxy
    is left as it is (an argument object the result holds, its lists)."""
    from .tracer import Tracer
    if depth == 0 or isinstance(leaf, (*IMMUTABLE, Tracer)) or type(leaf) is np.ndarray:
        return
    _release_items(leaf, depth)
    for name, value in _fields(leaf):
        plain = _plain(value, depth)
        if plain is not value:
            object.__setattr__(leaf, name, plain)


def _fields(obj) -> list:
    """(name, value) of an object's attributes and the slots that hold one."""
    try:
        attributes = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        attributes = {}
    return [*(attributes.items() if type(attributes) is dict else ()), *slot_items(obj)]


def concrete(value):
    """``value`` with concrete values for the proxies it holds (``_plain``)."""
    return _plain(value, 4)


def _plain(value, depth: int):
    """``value`` with concrete values for proxies: a new list, tuple or dict (``unwrap``), a
    container or object of another kind changed in place; itself where it holds none."""
    if not holds_proxies(value, depth):
        return value
    plain = unwrap(value)
    if plain is not value or depth <= 1:
        return plain
    if isinstance(value, (tuple, frozenset)):   # a subclass: made again
        return rebuilt(value, [_plain(item, depth - 1) for item in value])
    release(value, depth - 1)
    return value


def rebuilt(value, items: list):
    """A tuple or frozenset subclass's value holding ``items``, its attributes kept (its own
    ``__new__`` may take other arguments: not called)."""
    new = (tuple if isinstance(value, tuple) else frozenset).__new__(type(value), items)
    attributes = getattr(value, "__dict__", None)
    if type(attributes) is dict and attributes:
        with contextlib.suppress(AttributeError, TypeError):
            new.__dict__.update(attributes)
    return new


def holds_proxies(value, depth: int = 4) -> bool:
    """Whether ``value`` is or holds (``depth`` levels down) one of fusejit's proxies."""
    from .scalars import TracedFloat
    from .tracer import Tracer
    if isinstance(value, (Tracer, TracedFloat)):
        return True
    if depth == 0 or isinstance(value, (*IMMUTABLE, np.ndarray)):
        return False
    if isinstance(value, dict):
        items = list(dict.values(value))
    elif isinstance(value, (list, tuple, deque, set, frozenset)):
        items = list(value)
    else:
        items = [item for _, item in _fields(value)]
    return any(holds_proxies(item, depth - 1) for item in items[:4096])


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
    elif isinstance(leaf, set) and holds_proxies(leaf, depth):
        items = [_plain(value, depth) for value in leaf]
        set.clear(leaf)
        set.update(leaf, items)
