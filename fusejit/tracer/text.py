"""The text of a traced value (``str(x)``, ``repr(loss)``, ``f"{x.argmax()}"``).

Printing or logging text records nothing: the replay does not print (DESIGN.md, side effects).
Reading text as data does: ``if str(loss) == "nan"``, ``table[f"{i}"]``, ``"e" in repr(x)``
or ``len(str(x))`` decide what the body does next. Each such read records a guard whose
conversion (:class:`TextRead`) makes the text again from the replayed value, applies the same
string operations and the same read, and compares the answer: a call only traces again when
the answer differs (``str(loss) == "nan"`` holds for every finite loss). Text made from text
(``s.strip()``, ``"id " + s``, ``f"{s:>8}"``, ``s[1:]``) keeps its origin; text joined into a
larger string by an f-string with other parts, by ``%`` or by ``str.join`` is a plain string,
frozen at trace time.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .guards import add_guard, live


@dataclass(frozen=True)
class Raised:
    """The answer of a read that raised (``s[9]`` of a shorter text)."""
    error: type


@dataclass(frozen=True)
class TextRead:
    """A guard's conversion: the value's text (``base``: ``("str",)``, ``("repr",)`` or
    ``("format", spec)`` of the value as the type ``kind`` it had while tracing), then
    ``steps``, the string operations ``(name, args, kwargs)`` the body applied, the read last."""
    kind: type
    base: tuple
    steps: tuple

    def __call__(self, value):
        try:
            text = self._text(self._as_traced(value))
            for name, args, kwargs in self.steps:
                text = args[0] + text if name == "__radd__" else \
                    getattr(str, name)(text, *args, **dict(kwargs))
        except Exception as exc:  # noqa: BLE001 -- the answer of the read
            return Raised(type(exc))
        return text

    def _as_traced(self, value):
        if self.kind is np.ndarray:
            return np.asarray(value)
        if issubclass(self.kind, np.generic):
            return np.asarray(value)[()]
        return self.kind(value)

    def _text(self, value) -> str:
        if self.base[0] == "format":
            return format(value, self.base[1])
        return str(value) if self.base[0] == "str" else repr(value)

    def __str__(self):
        head = f"format(value, {self.base[1]!r})" if self.base[0] == "format" else \
            f"{self.base[0]}(value)"
        return head + "".join(f".{name}({', '.join(map(repr, args))})"
                              for name, args, _ in self.steps)


@dataclass(frozen=True)
class TextSource:
    """Where text came from: a traced value (``tracer``) shown by ``base``."""
    tracer: object
    base: tuple

    def record(self, steps: tuple, answer) -> None:
        tracer = self.tracer
        if live(tracer):
            read = TextRead(type(tracer.value), self.base, steps)
            add_guard(tracer.recorder, tracer.ir_var, read, answer)


class TracedText(str):
    """A ``str`` that remembers the traced value it shows (see the module's docstring)."""

    def __new__(cls, text: str, source: TextSource, steps: tuple = ()):
        self = super().__new__(cls, text)
        self._source, self._steps = source, steps
        return self

    def whole(self) -> str:
        """The text as a plain ``str``, all of it read: guarded equal."""
        text = str.__str__(self)
        self._source.record(self._steps, text)
        return text

    def _then(self, name, args, kwargs=()):
        """Apply ``str.name``: more text keeps the origin, any other answer is guarded."""
        args = tuple(a.whole() if isinstance(a, TracedText) else a for a in args)
        kwargs = tuple((k, v.whole() if isinstance(v, TracedText) else v) for k, v in kwargs)
        steps = (*self._steps, (name, args, kwargs))
        try:
            result = getattr(str, name)(str.__str__(self), *args, **dict(kwargs))
        except Exception as exc:
            self._source.record(steps, Raised(type(exc)))
            raise
        if isinstance(result, str):
            return TracedText(result, self._source, steps)
        if result is not NotImplemented:
            self._source.record(steps, result)
        return result

    def __str__(self):
        return self

    def __repr__(self):  # the repr of text is more text
        return self._then("__repr__", ())

    def __format__(self, spec):
        return self._then("__format__", (spec,))

    def __radd__(self, other):
        """``"loss=" + s``."""
        if not isinstance(other, str):
            return NotImplemented
        return TracedText(other + str.__str__(self), self._source,
                          (*self._steps, ("__radd__", (other,), ())))

    def __hash__(self):
        return hash(self.whole())

    def __iter__(self):
        return iter(self.whole())

    def __reduce__(self):
        return str, (self.whole(),)


def _reading(name):
    @functools.wraps(getattr(str, name))
    def read(self, *args, **kwargs):
        return self._then(name, args, tuple(kwargs.items()))
    return read


_READS = ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__",
          "__len__", "__getitem__", "__add__", "__mul__", "__rmul__", "__mod__"]
_READS += [name for name in vars(str) if not name.startswith("_") and name != "maketrans"]
for _name in _READS:
    setattr(TracedText, _name, _reading(_name))
del _name
