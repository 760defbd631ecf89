"""Plain Python values the body read from globals, closure cells and defaults: ``x * SCALE``.

The trace keeps what it read (a literal in a kernel, a shape, the branch ``if USE_BIAS:``
took), so after ``SCALE = 3.0`` a replay would still answer for 2.0. Each global of the body's
module (and of the same-module helpers it calls, which read the same overlay), each closure
cell and each default argument (``def f(x, s=2.0)``, read through ``f.__defaults__``) that
held a number, bool, string, None, enum member, NumPy scalar or short tuple of them
(``pystate.is_plain``) when the body read it is read again before each replay of that path,
and so is one that held a function, ufunc, class, dtype, slice or range (``ACT = np.tanh``,
``DT = np.float32``: ``pystate.is_named``, the same object or an equal dtype, slice or
range). A value no longer equal to it (of another type, or gone) fails the path, and the call
takes another path or traces one of its own, up to ``max_traces`` per signature. The body's
own changes (``global step; step += 1``) are ``pystate``'s: such a read is not kept.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..logs import topic
from . import pystate

log = topic("trace")

MAX_READS = 4096   # values read again per replay, at most (then: what stays frozen is logged)


class ReadAgain:
    """A place whose plain ``value`` (shown as ``label``) the trace read; ``now()`` reads it
    again."""

    value: object
    label: str

    def now(self):
        raise NotImplementedError

    def holds(self) -> bool:
        now = self.now()
        return now is self.value or pystate.same(self.value, now)

    def failure(self) -> str:
        return pystate.read_moved_text(self.label, self.value, self.now())


@dataclass(frozen=True, eq=False)
class PlainRead(ReadAgain):
    """``source`` (``("global", module dict, name)``, ``("cell", cell)`` or ``("object",
    obj)``), then ``path`` (``pystate.walk``'s steps: a function's default, ``(("attr",
    "__defaults__"), ("item", 0))``), held ``value``; ``cls``: for a last ``("method",
    name)`` step, the class of the object it was read from (the fast entry reads
    ``cls.name`` while the object is still of that class and does not shadow it)."""

    source: tuple
    value: object
    label: str
    path: tuple = ()
    cls: type | None = None

    def now(self):
        return pystate.walk(pystate.source_root(self.source), self.path)


@dataclass(frozen=True, eq=False)
class AliasPlainRead(ReadAgain):
    """``path`` below ``source`` reached the object that the place ``first`` = (source,
    path) reached while tracing (``MODEL.layers = [shared, shared]``), whose numbers were read
    through ``first`` alone: both places still reach one object (``value`` shows the first)."""

    source: tuple
    path: tuple
    label: str
    first: tuple
    value: pystate.AliasOf

    def now(self):
        return pystate.walk(pystate.source_root(self.source), self.path)

    def holds(self) -> bool:
        now = self.now()
        return now is not pystate.ABSENT and \
            now is pystate.walk(pystate.source_root(self.first[0]), self.first[1])

    def failure(self) -> str:
        return self.value.moved(self.label)


def record_alias(reads: dict, read: AliasPlainRead) -> None:
    source = read.source
    reads.setdefault(("alias", source[0], id(source[1]), *source[2:], *read.path), read)


def record(reads: dict, source: tuple, value, label: str, path: tuple = (),
           cls: type | None = None) -> None:
    """Note a read of a plain or named ``value`` at ``source`` (then ``path``), once per
    place."""
    if pystate.read_again(value) or value is pystate.ABSENT or value is pystate.PRESENT:
        # keyed as ``code_reads`` keys the chains it reads; an ``in`` test's apart
        place = tuple(("attr", key) if step == "method" else (step, key) for step, key in path)
        place += ("in",) if value is pystate.PRESENT else ()
        reads.setdefault((source[0], id(source[1]), *source[2:], *place),
                         PlainRead(source, value, label, path, cls))


def kept(reads: dict) -> tuple[PlainRead, ...]:
    """The reads to check before each replay: those whose place still holds the value read
    (one the body changed is ``pystate``'s watch), the first ``MAX_READS``."""
    return first([read for read in reads.values() if read.holds()],
                 "values from globals, closures and defaults")


def first(found: list, what: str) -> tuple:
    """The first ``MAX_READS`` of ``found``; the rest stay as traced, and a warning says so."""
    if len(found) > MAX_READS:
        log.warning("the body read %d %s; those after the first %d (%s, ...) are not checked "
                    "before replays", len(found), what, MAX_READS, found[MAX_READS].label)
    return tuple(found[:MAX_READS])

