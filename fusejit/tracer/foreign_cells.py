"""Closure cells that code the body reaches other than by name rebinds: a closure given as
an argument (``cb(x)`` with ``nonlocal n; n += 1``), held by an object (``self.ema(x)``
with ``nonlocal avg; avg = 0.5 * avg + v``) or in a container (``HOOKS[0](x)``).

The body's own helpers, which it calls by name, run as copies whose cells ``overlay``
follows. A function reached through a value runs as it is, so its ``nonlocal`` writes land
in its own cells: a replay would not make them. As each user frame whose code rebinds a
free variable starts (``type_checks.watched``), the cells of the functions that run that
code are noted with what they hold; after the body (``settle``):

- a cell now holding a traced value gets the value's concrete result, and the signature
  runs eagerly from then on (a replay cannot rebind it);
- a plain value changed there (a count) is Python state (``pystate``): the call ran as
  traced, and the next one traces again.
"""
from __future__ import annotations

import dis
import gc
import types
import weakref

from . import pystate
from .loc import classify, per_code

_EMPTY = object()   # a cell not yet bound
REBOUND = "side effect that replay would lose: closure {} of {} rebound in the body"
STATE = "Python state that replay would not update: closure {} of {} rebound in the body"


@per_code()
def rebound(code) -> frozenset:
    """The free variables the code rebinds (``nonlocal n; n += 1``)."""
    free = set(code.co_freevars)
    return frozenset(ins.argval for ins in dis.get_instructions(code)
                     if ins.opname in ("STORE_DEREF", "DELETE_DEREF") and ins.argval in free)


class ForeignCells:
    """The cells noted while the body runs (module docstring). A closure the body makes (``def
    add(v): nonlocal total``, ``acc = make_acc()``) is gone when it returns: its cells are
    this call's, not state; only those of functions still alive then count."""

    def __init__(self):
        self.codes: set = set()
        self.cells: dict = {}   # id(cell) -> (cell, name, the function (weakly), what it held)

    def entering(self, frame) -> None:
        """Notes the cells of the functions that run the code of ``frame``, starting; not
        those of a closure the frame that made it is still running (``def add(v): nonlocal
        total`` called in the body, a recursive helper, a row function NumPy calls)."""
        code = frame.f_code
        if code in self.codes:
            return
        self.codes.add(code)
        names = rebound(code)
        if not names or classify(code.co_filename) != "user" or _maker_running(frame, code):
            return
        for func in gc.get_referrers(code):   # only where a code rebinds a free variable
            if type(func) is types.FunctionType and func.__code__ is code and func.__closure__:
                for name, cell in zip(code.co_freevars, func.__closure__, strict=True):
                    if name in names and id(cell) not in self.cells:
                        self.cells[id(cell)] = (cell, name, weakref.ref(func), _held(cell))

    def settle(self, recorder, handled: set) -> None:
        """Gives each cell the body rebound a concrete value, and makes the trace a fallback
        or Python state (module docstring); ``handled``: ids of the cells ``overlay``
        follows."""
        from .context import unwrap
        from .returned_objects import holds_proxies
        for key, (cell, name, func, before) in self.cells.items():
            now, func = _held(cell), func()
            if key in handled or now is before or func is None:
                continue
            owner = func.__qualname__
            if now is not _EMPTY and holds_proxies(now):   # a replay cannot rebind it
                cell.cell_contents = unwrap(now, recorder.originals)
                recorder.set_fallback(REBOUND.format(name, owner), None)
            elif pystate.is_plain(before) and pystate.is_plain(now):
                if pystate.changed(before, now):
                    watch = pystate.in_source(f"closure {name} of {owner}", ("cell", cell), ())
                    recorder.state_changed(watch, before, now)
            else:   # ``if w is None: w = np.full(3, 2.0)``: made once, the next call compiles
                recorder.set_fallback(STATE.format(name, owner), None, retry=True)


def _maker_running(frame, code, limit: int = 64) -> bool:
    """Whether a frame below ``frame`` runs the code that makes functions of ``code`` (a
    closure the running body made, not one that was there before)."""
    outer = frame.f_back
    for _ in range(limit):
        if outer is None:
            return False
        if any(const is code for const in outer.f_code.co_consts):
            return True
        outer = outer.f_back
    return False


def _held(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return _EMPTY
