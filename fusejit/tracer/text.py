"""The text of a traced value (``str(x)``, ``repr(loss)``, ``f"{x.argmax()}"``).

Printing or logging text records nothing: the replay does not print (DESIGN.md, side effects).
Reading text as data does: ``if str(loss) == "nan"``, ``table[f"{i}"]``, ``"e" in repr(x)``
or ``len(str(x))`` decide what the body does next. Each such read records a guard whose
conversion (:class:`TextRead`) makes the text again from the replayed value, applies the same
string operations and the same read, and compares the answer: a call only traces again when
the answer differs (``str(loss) == "nan"`` holds for every finite loss). Text made from text
(``s.strip()``, ``"id " + s``, ``f"{s:>8}"``, ``s[1:]``) keeps its origin, and ``float(s)`` and
``int(s)`` are reads. Text joined into a larger string by an f-string with other parts is a
plain ``str``: where the body reads that string as data (``table[f"id {i}"]``: anything but
printing, logging, a ``write`` or returning it, as the bytecode after the field shows) the
whole text is guarded (``guards.joined_and_read``). Text joined by ``%`` or ``str.join``, and
text read by C code that takes the characters directly (``re``, ``json``, ``bytes(s, ...)``,
another string's methods: ``"3.0".startswith(s)``), is frozen at trace time.
"""
from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass

import numpy as np

from .context import active
from .guards import add_guard


@dataclass(frozen=True)
class Raised:
    """The answer of a read that raised (``s[9]`` of a shorter text)."""
    error: type


@dataclass(frozen=True)
class RoundRead:
    """A guard's conversion for ``round(t)`` of a NumPy scalar: Python's ``int`` of it, half
    to even; a value that cannot round (NaN, inf) answers with its error, so it fails the
    guard and the retrace raises it from the body as eagerly."""

    def __call__(self, value):
        try:
            return round(np.asarray(value)[()])
        except (ValueError, OverflowError) as exc:
            return Raised(type(exc))

    def __str__(self) -> str:
        return "round()"


@dataclass(frozen=True)
class RealPart:
    """A guard's conversion for ``float()``/``int()`` of a complex NumPy scalar: of its real
    part, quietly (the replay's value is a 0-d array, which ``float()`` refuses when complex);
    ``warn`` issues NumPy's ComplexWarning from the user's line once the guard holds, so a
    call warns once, as eagerly, however many paths' guards it tried."""
    how: str   # "float" | "int"

    def __call__(self, value):
        return _CONVERSIONS[self.how](np.asarray(value)[()].real)

    def warn(self, value, loc) -> None:
        from ..located import at_line
        at_line(loc)(_CONVERSIONS[self.how], (np.asarray(value)[()],), {})

    def __str__(self) -> str:
        return f"{self.how}()"


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
                text = _apply(text, name, args, kwargs)
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


_CONVERSIONS = {"float": float, "int": int}


def _apply(text: str, name: str, args, kwargs):
    """One step: a ``str`` method, ``"x" + text`` (``__radd__``), ``float`` or ``int``."""
    if name == "__radd__":
        return args[0] + text
    if name in _CONVERSIONS:
        return _CONVERSIONS[name](text)
    return getattr(str, name)(text, *args, **dict(kwargs))


@dataclass(frozen=True)
class TextSource:
    """Where text came from: a traced value (its Var, and the type its value had) shown by
    ``base``. The recorder is held weakly: text kept after the call (``history.append(
    f"{loss}")``) must not keep the trace alive, and it records nothing then anyway."""
    recorder_ref: weakref.ref
    var: object
    kind: type
    base: tuple

    @classmethod
    def of(cls, tracer, base: tuple) -> TextSource:
        return cls(weakref.ref(tracer.recorder), tracer.ir_var, type(tracer.value), base)

    def record(self, steps: tuple, answer) -> None:
        recorder = self.recorder_ref()
        if recorder is not None and active() is recorder and recorder.fallback is None:
            add_guard(recorder, self.var, TextRead(self.kind, self.base, steps), answer)


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
            result = _apply(str.__str__(self), name, args, kwargs)
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

    def __float__(self):   # float(f"{loss:.3f}"): the rounding idiom
        return self._then("float", ())

    def __int__(self):
        return self._then("int", ())


def _reading(name):
    @functools.wraps(getattr(str, name))
    def read(self, *args, **kwargs):
        return self._then(name, args, tuple(kwargs.items()))
    return read


_READS = ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__",
          "__len__", "__getitem__", "__add__", "__mul__", "__rmul__", "__mod__"]
# every public method; ``maketrans`` is a staticmethod building a table, no read of the text
_READS += [name for name in vars(str) if not name.startswith("_") and name != "maketrans"]
for _name in _READS:
    setattr(TracedText, _name, _reading(_name))
del _name
