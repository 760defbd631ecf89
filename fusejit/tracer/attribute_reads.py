"""Plain attributes of argument objects and of ``self``: ``if self.bias is not None:``,
``x * self.scale``.

The body's branch on such an attribute, or the number it read there, is Python the replay
does not run: bound to an array later (a bias added after the model was compiled) or to
another number (``layer.scale = 3.0``), a replay would still answer for what was traced. So
each attribute of an argument object or of ``self`` that held None or another plain value
(``pystate.is_plain``: a number, bool, string, enum member, NumPy scalar or a short tuple of
them) while tracing, under a name the code of the body or of those objects' classes reads, is
read again before each replay of that path; one that holds anything else fails the path, and
the call takes another path or traces one of its own. The reverse (an array bound to None)
fails the captured array's read (``Capture.resolve``). An attribute the body changes itself
(``self.t += 1``) is ``pystate``'s watch, not a read.
"""
from __future__ import annotations

import types
from dataclasses import dataclass

from . import pystate
from .captures import bound_parts, code_names
from .loc import classify
from .side_effects import STATIC

MAX_READS = 64   # attributes read again per replay, at most


@dataclass(frozen=True, eq=False)
class AttributeRead:
    """``steps`` below argument ``leaf`` (-1: the compiled method's object) held ``value``."""

    leaf: int
    steps: tuple
    label: str
    value: object = None

    def now(self, leaves, owner):
        return pystate.walk(owner if self.leaf < 0 else leaves[self.leaf], self.steps)

    def holds(self, leaves, owner) -> bool:
        now = self.now(leaves, owner)
        return now is self.value or pystate.same(self.value, now)

    def failure(self, leaves, owner) -> str:
        if self.value is None:
            return f"{self.label} no longer holds None"
        return pystate.read_moved_text(self.label, self.value, self.now(leaves, owner))


def find(fn, snaps, entered=None) -> tuple[AttributeRead, ...]:
    """The attributes of the snapshot objects that held the same plain value before and after
    the body, under a name its code (or their classes' methods) reads. ``entered``: the code
    objects the body's frames ran; a value other than None is read again only under a name
    that code reads (a counter another method of the class advances is no concern of the
    body's unless it reads it), or, where that is not known, any of the classes' methods."""
    names = _names(fn, snaps)
    read = names if entered is None else _entered_names(entered)
    found = []
    for snap in snaps:
        if snap.leaf in (-1, STATIC):
            continue
        for name, value in snap.attrs.items():
            if name in (names if value is None else read) and pystate.is_plain(value) and \
                    pystate.same(value, pystate.get_attribute(snap.obj, name)):
                found.append(AttributeRead(-1 if snap.leaf is None else snap.leaf,
                                           (*snap.steps, ("attr", name)),
                                           f"{snap.label}.{name}", value))
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


def _entered_names(entered) -> set[str]:
    names: set[str] = set()
    for code in entered:
        if classify(code.co_filename) == "user":
            names |= code_names(code)
    return names
