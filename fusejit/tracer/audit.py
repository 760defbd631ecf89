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
from .capture_proxies import plain_subclass
from .captures import OBJECT_DEPTH, method_owner, slot_items, walked

log = topic("trace")
MAX_BYTES = 256 * 2**20   # checksummed per trace, twice (zlib.crc32: ~2 GB/s here)
_MAX_OBJECTS = 2000        # objects looked into below the arguments
_LIBRARIES = ("numpy", "scipy", "numba", "builtins", "fusejit")
REASON = ("untraced code changed the array {name} while tracing (a method, a function kept "
          "in a dict or decorated, or another module's function writing the module's "
          "globals): a replay would not repeat the change")
BEFORE = ("the array {name} was changed by NumPy code with no traced value in it before the "
          "body used it with traced values (it is more than three steps down, or in a dict or "
          "list subclass with its own __setitem__, where the body reads plain arrays): a "
          "replay would not repeat the change")


def start(fn, leaves=()) -> list[tuple[np.ndarray, str, int]]:
    """(array, name, checksum) for the arrays the body's function reaches by name, and those
    the argument objects hold where the body reads them as plain arrays (``plain_held``)."""
    func = _function(fn)
    named = [] if func is None else _named(func)
    owner = method_owner(fn)
    named += plain_held([*leaves, *([owner] if owner is not None else [])])
    audit, budget = [], MAX_BYTES
    for array, name in sorted(named, key=lambda pair: pair[0].nbytes):
        if array.nbytes > budget:
            log.debug("not checking %s and larger arrays for untraced changes (%d bytes "
                      "left of %d)", name, budget, MAX_BYTES)
            break
        budget -= array.nbytes
        audit.append((array, name, _checksum(array)))
    return audit


def _named(func) -> list[tuple[np.ndarray, str]]:
    named = [(value, name) for name, value in list(func.__globals__.items())
             if _auditable(value)]
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=True):
        try:
            value = cell.cell_contents
        except ValueError:   # an empty cell
            continue
        if _auditable(value):
            named.append((value, name))
    return named


def plain_held(objects) -> list[tuple[np.ndarray, str]]:
    """Arrays held by the argument objects where the tracer does not swap them for proxies
    (``capture_proxies``): in ``dict`` and ``list`` subclasses with their own ``__getitem__``
    or ``__setitem__``, and more than ``OBJECT_DEPTH`` steps down. NumPy code on them alone
    (``state["m"] *= 0.9``) runs only while tracing."""
    found, seen = [], set()

    def walk(obj, label, steps, plain):
        if steps > OBJECT_DEPTH + 2 or id(obj) in seen or len(seen) >= _MAX_OBJECTS or \
                not walked(obj, steps):
            return
        seen.add(id(obj))
        plain = plain or type(obj) not in (list, tuple, dict) and isinstance(obj, (list, dict)) \
            and not plain_subclass(obj)
        for key, item in _children(obj):
            if _auditable(item):
                if plain or steps >= OBJECT_DEPTH:
                    found.append((item, f"{label}{key}"))
            elif not isinstance(item, (str, bytes, int, float, type, types.ModuleType)):
                walk(item, f"{label}{key}", steps + 1, plain)

    for index, obj in enumerate(objects):
        walk(obj, f"argument {index}", 0, False)
    return found


def _children(obj) -> list:
    if isinstance(obj, dict):
        return [(f"[{k!r}]", v) for k, v in list(dict.items(obj))]
    if isinstance(obj, (list, tuple)):
        return [(f"[{k}]", v) for k, v in enumerate(list(obj))]
    if getattr(type(obj), "__module__", "").split(".")[0] in _LIBRARIES:
        return []
    attrs = dict(getattr(obj, "__dict__", None) or {})
    attrs.update(slot_items(obj))
    return [(f".{k}", v) for k, v in attrs.items()]


def changed_before_capture(recorder, array: np.ndarray) -> bool:
    """Whether ``array``, captured now, changed since the trace began (code the tracer did
    not see wrote it: ``state["m"] *= 0.9`` before ``state["m"] += g``). The replay would
    read it as the caller holds it, without that change."""
    entry = recorder.audited.get(id(array))
    return entry is not None and entry[0] is array and _checksum(array) != entry[2]


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
