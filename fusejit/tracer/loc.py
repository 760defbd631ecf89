"""Source locations: the innermost user frame of the current call, with its function scope.

A frame is the user's when its file lies outside fusejit, NumPy and SciPy. The scope is the
chain of user function names from the traced function down to the innermost one
(``block/attention``): walking outward we stop at the first fusejit frame, the tracer's entry.
"""
from __future__ import annotations

import functools
import linecache
import os
import sys
import sysconfig

import numpy
import scipy

from ..ir import Loc

_FUSEJIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) + os.sep for module in (numpy, scipy))
_STDLIB = tuple({os.path.abspath(sysconfig.get_paths()[key]) + os.sep
                 for key in ("stdlib", "platstdlib")})


@functools.lru_cache(maxsize=1024)
def classify(filename: str) -> str:
    """"fusejit", "library" or "user"."""
    path = os.path.abspath(filename) if not filename.startswith("<") else filename
    if path.startswith(_FUSEJIT_DIR):
        return "fusejit"
    if path.startswith(_LIBRARY_DIRS) or path.startswith("<__array_function__"):
        return "library"
    return "user"


@functools.lru_cache(maxsize=1024)
def in_stdlib(filename: str) -> bool:
    """Whether ``filename`` is in Python's own library (site-packages aside)."""
    path = os.path.abspath(filename)
    return any(path.startswith(root) for root in _STDLIB) and "site-packages" not in path


def per_code(limit: int = 8192):
    """Cache what ``fn(code)`` finds in a code object, by the object's id (a code object's own
    hash is computed from its contents on every call, and equal code of two modules compares
    equal); the whole cache is dropped when it holds ``limit`` entries."""
    def decorate(fn):
        cache: dict = {}   # id(code) -> (code, fn(code)): the code kept, so its id stays its own

        @functools.wraps(fn)
        def cached(code):
            entry = cache.get(id(code))
            if entry is not None and entry[0] is code:
                return entry[1]
            if len(cache) >= limit:
                cache.clear()
            found = fn(code)
            cache[id(code)] = (code, found)
            return found
        return cached
    return decorate


def user_frames(skip: int = 1) -> list:
    """User frames from innermost outward, up to the tracer's entry frame."""
    frame = sys._getframe(skip)
    frames: list = []
    while frame is not None:
        kind = classify(frame.f_code.co_filename)
        if kind == "fusejit" and frames:
            break
        if kind == "user":
            frames.append(frame)
        frame = frame.f_back
    return frames


def called_from_user(skip: int = 2) -> bool:
    """Whether the nearest caller outside NumPy and SciPy (from ``skip`` frames up) is the
    user's code, not fusejit's."""
    frame = sys._getframe(skip)
    while frame is not None and classify(frame.f_code.co_filename) == "library":
        frame = frame.f_back
    return frame is not None and classify(frame.f_code.co_filename) == "user"


def current_loc() -> Loc | None:
    frames = user_frames(2)
    if not frames:
        return None
    inner = frames[0]
    filename, line = inner.f_code.co_filename, inner.f_lineno or 0
    scope = "/".join(f.f_code.co_name for f in reversed(frames))
    code = linecache.getline(filename, line).strip()
    return Loc(filename, line, scope, code)


def describe(loc: Loc | None) -> str:
    """``model.py:12`` for messages; empty when unknown."""
    return loc.short().split(" ")[0] if loc is not None else "<unknown>"
