"""``x.flags`` of a traced array: its contiguity answered, the rest run eagerly.

Library-style code asks ``if not x.flags.c_contiguous: x = np.ascontiguousarray(x)``. Whether
a value is C- or F-contiguous follows from the layouts of the arguments (and captured arrays)
it was computed from, as NumPy's view-or-copy decisions do (``layouts.py``): the answer is the
traced value's own, and the path keeps those layouts, so a call whose arrays are laid out
otherwise traces a path of its own. Flags no layout decides (``writeable``, ``owndata``,
``aligned``) are NumPy's, and the signature runs eagerly.
"""
from __future__ import annotations

from . import layouts
from .context import active

# the contiguity flags, by attribute and by NumPy's dict-style keys
_CONTIGUITY = frozenset({"c_contiguous", "f_contiguous", "contiguous", "fortran", "forc", "fnc",
                         "C_CONTIGUOUS", "C", "CONTIGUOUS", "F_CONTIGUOUS", "F", "FORTRAN",
                         "FORC", "FNC"})


class TracedFlags:
    """Reads NumPy's ``flags`` of ``tracer``'s value, noting each contiguity read as a layout
    decision and any other read or write as an eager fallback."""

    __slots__ = ("_tracer", "_flags")

    def __init__(self, tracer, flags):
        object.__setattr__(self, "_tracer", tracer)
        object.__setattr__(self, "_flags", flags)

    def __getattr__(self, name):
        value = getattr(self._flags, name)   # NumPy's AttributeError for a name it lacks
        self._note(name)
        return value

    def __getitem__(self, key):
        value = self._flags[key]   # NumPy's KeyError for a key it lacks
        self._note(key)
        return value

    def __setattr__(self, name, value):
        setattr(self._flags, name, value)
        self._fall_back(f"setting ndarray.flags.{name} is not traced by fusejit")

    def __setitem__(self, key, value):
        self._flags[key] = value
        self._fall_back(f"setting ndarray.flags[{key!r}] is not traced by fusejit")

    def __eq__(self, other):
        self._fall_back("comparing ndarray.flags is not traced by fusejit")
        return self._flags == getattr(other, "_flags", other)

    __hash__ = None

    def __repr__(self):
        return repr(self._flags)

    def _note(self, name) -> None:
        if name not in _CONTIGUITY:
            self._fall_back(f"ndarray.flags.{name} is not traced by fusejit")
            return
        recorder = self._tracer.recorder
        if recorder is not None and active() is recorder:
            layouts.note(recorder, self._tracer)

    def _fall_back(self, reason: str) -> None:
        recorder = self._tracer.recorder
        if recorder is not None and active() is recorder:
            recorder.set_fallback(reason)
