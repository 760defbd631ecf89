"""Calls made as if from a line of the user's code.

NumPy functions written in Python warn about their arguments with ``stacklevel=2``
(``np.nanmean`` of an all-NaN row: "Mean of empty slice"), naming the line that called them.
fusejit calls them from its own frames, while tracing and when a replay runs one as a host
op; through ``calling_from(file, line, name)`` the caller's frame is a function whose code
says it is that user line, so the warning names it (and the user's filters for that module
apply), as eagerly, and a traceback through the call shows it.
"""
from __future__ import annotations

import builtins
import functools
import os
import sys
import types

_SOURCE = "def call(fn, args, kwargs): return fn(*args, **kwargs)"  # one line: all at ``line``
_TEMPLATE = compile(_SOURCE, "<fusejit>", "exec").co_consts[0]


def _line_only(units: int) -> bytes:
    """A 3.11+ location table putting every code unit on the first line, with no columns (the
    template's would point a traceback's carets into the user's line at random)."""
    table = bytearray()
    while units > 0:
        chunk = min(units, 8)
        table += bytes([0x80 | (13 << 3) | (chunk - 1), 0])   # 13: line delta only (0)
        units -= chunk
    return bytes(table)


_NO_COLUMNS = _line_only(len(_TEMPLATE.co_code) // 2)


@functools.lru_cache(maxsize=4096)
def calling_from(file: str, line: int, name: str, module: str | None = None):
    """``call(fn, args, kwargs)`` whose frame is at ``file:line`` in function ``name`` of
    ``module`` (what warning filters by module match; None: the loaded module that is
    ``file``)."""
    fields = dict(co_filename=file, co_firstlineno=max(int(line), 1), co_name=name)
    if sys.version_info >= (3, 11):
        fields.update(co_qualname=name, co_linetable=_NO_COLUMNS)
    code = _TEMPLATE.replace(**fields)
    names = {"__name__": module or module_of(file), "__builtins__": builtins}
    return types.FunctionType(code, names, name)


@functools.lru_cache(maxsize=256)
def module_of(file: str) -> str:
    """The name of the loaded module that is ``file``, else the file's stem."""
    path = os.path.abspath(file)
    for name, module in list(sys.modules.items()):
        try:
            found = module.__dict__.get("__file__")
        except Exception:  # noqa: BLE001 - a lazy module or a stand-in object: not this file
            continue
        if isinstance(found, str) and os.path.abspath(found) == path:
            return name
    return os.path.splitext(os.path.basename(file))[0]


def at_line(loc):
    """``calling_from`` for a recorded ``Loc``: calls made as if from that user line."""
    return calling_from(loc.file, loc.line, loc.scope.rsplit("/", 1)[-1] or "<module>",
                        module_of(loc.file))


def at_frame(frame):
    """``calling_from`` for a live frame of the user's code."""
    return calling_from(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name,
                        frame.f_globals.get("__name__"))


def drops_imaginary(source, target) -> bool:
    """A cast from a complex dtype to a real one: NumPy warns (ComplexWarning)."""
    import numpy as np
    return np.dtype(source).kind == "c" and np.dtype(target).kind not in "cb"


def cast_from_line(loc, value, dtype):
    """``value.astype(dtype)`` by NumPy's own C method called from a frame that is ``loc``'s
    line: its ComplexWarning ("discards the imaginary part") names that line, as eagerly (from
    a Python frame of fusejit's it named that frame)."""
    import numpy as np
    return at_line(loc)(np.ndarray.astype, (np.asarray(value), dtype), {})
