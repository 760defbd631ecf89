"""Attributes that held None while tracing: ``if self.bias is not None: y = y + self.bias``.

The body's branch on such an attribute is Python the replay does not run, and a None is no
array the trace could capture: bound to an array later (a bias added after the model was
compiled), a replay would still take the None branch. So each attribute of an argument
object or of ``self`` that held None while tracing, under a name the code of the body or of
those objects' classes reads, is read again before each replay of that path; one that holds
anything else fails the path, and the call traces a path of its own. The reverse (an array
bound to None) fails the captured array's read (``Capture.resolve``).
"""
from __future__ import annotations

import types
from dataclasses import dataclass

from . import pystate
from .captures import bound_parts, code_names
from .side_effects import STATIC

MAX_READS = 64   # attributes read again per replay, at most


@dataclass(frozen=True)
class NoneRead:
    """``steps`` below argument ``leaf`` (-1: the compiled method's object) held None."""

    leaf: int
    steps: tuple
    label: str

    def holds(self, leaves, owner) -> bool:
        root = owner if self.leaf < 0 else leaves[self.leaf]
        return pystate.walk(root, self.steps) is None


def find(fn, snaps) -> tuple[NoneRead, ...]:
    """The attributes of the snapshot objects that held None before and after the body, under
    a name its code (or their classes' methods) reads."""
    names = _names(fn, snaps)
    found = []
    for snap in snaps:
        if snap.leaf in (-1, STATIC):
            continue
        for name, value in snap.attrs.items():
            if value is None and name in names and \
                    pystate.get_attribute(snap.obj, name) is None:
                found.append(NoneRead(-1 if snap.leaf is None else snap.leaf,
                                      (*snap.steps, ("attr", name)), f"{snap.label}.{name}"))
    return tuple(found[:MAX_READS])


def _names(fn, snaps) -> set[str]:
    """Attribute names read by the body's code and by the methods of the snapshot objects'
    classes (``self.project(x)`` reading ``self.bias``)."""
    names: set[str] = set()
    _, func = bound_parts(getattr(fn, "func", fn))
    if isinstance(func, types.FunctionType):
        names |= code_names(func.__code__)
    for cls in {type(snap.obj) for snap in snaps if snap.leaf != -1}:
        for klass in cls.__mro__[:-1]:
            for value in vars(klass).values():
                value = getattr(value, "__func__", value)   # staticmethod, classmethod
                if isinstance(value, types.FunctionType):
                    names |= code_names(value.__code__)
    return names
