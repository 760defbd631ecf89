"""Global and closure arrays changed by code the tracer does not see.

Methods, functions kept in dicts or wrapped by decorators, and functions of other modules read
the module's real globals, not the body's overlay (``overlay.py``): NumPy code there on those
arrays alone (``G[...] *= 0.5`` in ``Helper.decay``) runs only while tracing, and every replay
would skip it. A checksum of each array among the body's module globals and closure, taken
before and after the body, finds such a change; that signature then runs eagerly. Arrays that
traced values were written into are left to ``outputs._check_written`` -- an argument too (a
script's global passed to the body, ``step(cache)``), whose untraced changes are not found."""
from __future__ import annotations

import functools
import types
import zlib

import numpy as np

from ..logs import topic

log = topic("trace")
MAX_BYTES = 256 * 2**20   # checksummed per trace, twice (zlib.crc32: ~2 GB/s here)
REASON = ("untraced code changed the array {name} while tracing (a method, a function kept "
          "in a dict or decorated, or another module's function writing the module's "
          "globals): a replay would not repeat the change")


def start(fn) -> list[tuple[np.ndarray, str, int]]:
    """(array, name, checksum) for the arrays the body's function reaches by name."""
    func = _function(fn)
    if func is None:
        return []
    named = [(value, name) for name, value in list(func.__globals__.items())
             if _auditable(value)]
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
        try:
            value = cell.cell_contents
        except ValueError:   # an empty cell
            continue
        if _auditable(value):
            named.append((value, name))
    audit, budget = [], MAX_BYTES
    for array, name in sorted(named, key=lambda pair: pair[0].nbytes):
        if array.nbytes > budget:
            log.debug("not checking %s and larger arrays for untraced changes (%d bytes "
                      "left of %d)", name, budget, MAX_BYTES)
            break
        budget -= array.nbytes
        audit.append((array, name, _checksum(array)))
    return audit


def check(audit, recorder, written_arrays=()) -> None:
    """Run eagerly when an array the body did not write with traced values has changed.
    ``written_arrays``: the arguments and captured arrays the body wrote (a global passed as
    an argument too, ``f(cache)`` in a script, changes through the argument)."""
    for array, name, before in audit:
        if id(array) in recorder.written or \
                any(np.may_share_memory(array, other) for other in written_arrays):
            continue
        if _checksum(array) != before:
            recorder.set_fallback(REASON.format(name=name), None)
            return


def _function(fn):
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    return fn if type(fn) is types.FunctionType else None


def _auditable(value) -> bool:
    return type(value) is np.ndarray and not value.dtype.hasobject


def _checksum(array: np.ndarray) -> int:
    data = array if array.flags.c_contiguous else np.ascontiguousarray(array)
    return zlib.crc32(data.reshape(-1).view(np.uint8)) if data.size else 0
