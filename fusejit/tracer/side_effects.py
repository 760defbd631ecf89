"""Python side effects that a replay would lose, found by comparing argument objects.

Before recording, each static argument object (a non-pytree leaf with a ``__dict__``, and
``fn.__self__`` for a bound method) has its attributes copied shallowly, and every list or
dict held by such an attribute has its items noted too. After recording:

- an attribute rebound to a pytree whose leaves are all traced arrays becomes an
  ``AttrWrite``: the runtime sets it again after each replay (``self.w = self.w - lr * g``);
- an attribute rebound to anything else holding traced values (a traced Python float, a mix
  with untraced leaves), or a list or dict attribute whose items changed and now hold traced
  values (``self.history.append(loss)``, ``self.m[k] = 0.9 * self.m[k] + g``), makes the
  trace an eager fallback: replay would lose it.

Either way the object is left holding concrete values, never proxies. Rebinding to untraced
values (``self.steps += 1``) is a Python side effect that happens only while tracing.
"""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass

import numpy as np

from .context import unwrap
from .pytree import TreeDef, flatten, is_traced_leaf

_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)


@dataclass(frozen=True)
class AttrWrite:
    leaf: int | None          # argument leaf index of the object; None: ``fn.__self__``
    name: str
    treedef: TreeDef
    outputs: tuple[int, ...]  # graph output index of each leaf of the new value
    scalars: tuple[bool, ...] = ()  # leaf k was a NumPy scalar (runtime: ``v[()]``)
    checked: bool = False     # the class runs its own code on assignment: it may raise


@dataclass
class Snapshot:
    leaf: int | None
    obj: object
    attrs: dict
    lists: dict               # attribute name -> the items of the list or dict it held


def watchable(obj) -> bool:
    return (not is_traced_leaf(obj) and not isinstance(obj, _OPAQUE)
            and isinstance(getattr(obj, "__dict__", None), dict))


def snapshot(leaves, fn=None) -> list[Snapshot]:
    targets = [(i, leaf) for i, leaf in enumerate(leaves) if watchable(leaf)]
    owner = getattr(fn, "__self__", None)
    if owner is not None and watchable(owner):
        targets.append((None, owner))
    snaps = []
    for index, obj in targets:
        attrs = dict(vars(obj))
        lists = {k: _items(v) for k, v in attrs.items() if type(v) in (list, dict)}
        snaps.append(Snapshot(index, obj, attrs, lists))
    return snaps


def has_traced(value) -> bool:
    from .scalars import TracedFloat
    from .tracer import Tracer
    leaves, _ = flatten(value)
    return any(isinstance(x, (Tracer, TracedFloat)) for x in leaves)


def detect(recorder, snaps) -> list[AttrWrite]:
    """AttrWrites for replayable rebindings, whose ``outputs`` still hold the proxies (the
    caller turns them into graph output indices); sets the recorder's fallback for the rest."""
    writes = []
    for snap in snaps:
        for name, value in list(vars(snap.obj).items()):
            write = _check_attr(recorder, snap, name, value)
            if write is not None:
                writes.append(write)
    return writes


def _check_attr(recorder, snap, name, value):
    from .tracer import Tracer
    label = f"{'self' if snap.leaf is None else f'argument {snap.leaf}'}.{name}"
    old = snap.attrs.get(name, _MISSING)
    if old is value:
        if name in snap.lists and _items(value) != snap.lists[name] and has_traced(value):
            _lose(recorder, f"traced values stored into the {type(value).__name__} {label}")
            if type(value) is dict:
                value.update({key: unwrap(item) for key, item in value.items()})
            else:
                value[:] = unwrap(value)
        return None
    if not has_traced(value):
        return None
    leaves, treedef = flatten(value)
    vars(snap.obj)[name] = unwrap(value)   # not through the class's own code again
    if not all(isinstance(x, Tracer) for x in leaves):
        _lose(recorder, f"{label} rebound to a value the replay cannot rebuild")
        return None
    if recorder.fallback is not None:
        return None
    scalars = tuple(isinstance(x.value, np.generic) for x in leaves)
    return AttrWrite(snap.leaf, name, treedef, tuple(leaves), scalars,
                     runs_code_on_assignment(type(snap.obj), name))


def runs_code_on_assignment(cls: type, name: str) -> bool:
    """``obj.name = value`` runs ``cls``'s own code (a ``__setattr__``, a property setter or
    another data descriptor), which may raise on a later call where it did not while tracing
    (an object frozen since): the replay must then be undone before the body runs eagerly."""
    if cls.__setattr__ is not object.__setattr__:
        return True
    return hasattr(type(inspect.getattr_static(cls, name, None)), "__set__")


_MISSING = object()


def _items(container) -> list:
    """(key, id(item)) pairs: a container changed when they differ."""
    pairs = container.items() if type(container) is dict else enumerate(container)
    return [(key, id(item)) for key, item in pairs]


def _lose(recorder, what: str) -> None:
    recorder.set_fallback(f"side effect that replay would lose: {what}", loc=None)
