"""Arrays that untraced code reads through its module's globals, as proxies while tracing.

The body and the functions of its module that it calls run as traced copies whose globals are
an overlay (``overlay.py``). A method of a class, a function of another module or one kept in
a dict reads the module's real globals: NumPy code there on a global's arrays alone
(``return STATE["v"] + 0.0`` in ``Reader.read``) would run once, while tracing, and the
program would keep its result as a constant. ``GlobalReads`` is called for every frame the
body enters (``type_checks.watched``); for a user frame with real globals it swaps the arrays
held by the globals its code names, as the overlay does for the body: in place inside a dict,
list or object, and by binding the module's name to the proxy for an array (the argument's
copy for a dict or list also passed as an argument: ``capture_proxies._Swaps.stand_in``).
``finish`` binds the names back. A frame whose code also names a Numba-compiled function is
left alone: handed a proxy, Numba cannot unbox it, where the plain array worked (its result
stays a constant, as before). Under a debugger's or coverage tool's trace function no frame
is watched, and such reads stay constants.
"""
from __future__ import annotations

import dis

from .context import unwrap
from .loc import classify
from .overlay import proxyable, rebuildable

_READS: dict[int, tuple] = {}   # id(code) -> (code, the global names it loads)
LEAKED = ("side effect that replay would lose: untraced code bound a traced value to the "
          "global {}")


def global_reads(code) -> tuple[str, ...]:
    """The names the code of a user frame loads as globals (none for library code)."""
    entry = _READS.get(id(code))
    if entry is not None and entry[0] is code:
        return entry[1]
    names: tuple = ()
    if classify(code.co_filename) == "user":
        names = tuple(dict.fromkeys(ins.argval for ins in dis.get_instructions(code)
                                    if ins.opname == "LOAD_GLOBAL"))
    if len(_READS) > 8192:
        _READS.clear()
    _READS[id(code)] = (code, names)
    return names


class GlobalReads:
    """Swaps what untraced frames read through their modules' globals (``__call__``), and
    binds the names it rebound back (``finish``)."""

    def __init__(self, swaps):
        self.swaps = swaps
        self.done: set = set()     # (id(module globals), name)
        self.bound: list = []      # (module globals, name, the value it held, what it got)

    def __call__(self, frame) -> None:
        module = frame.f_globals
        if type(module) is not dict:   # the body's own overlay (a dict subclass)
            return
        names = global_reads(frame.f_code)
        if any(_compiled(module.get(name)) for name in names):
            return
        for name in names:
            if (id(module), name) in self.done or name not in module:
                continue
            self.done.add((id(module), name))
            self._swap(module, name, module[name])

    def _swap(self, module: dict, name: str, value) -> None:
        where = (("global", module, name), (), name)
        if proxyable(value):
            new = self.swaps.proxy(value, where)
        else:
            new = self.swaps.stand_in(value, where)
            if new is None and rebuildable(value):
                new = self.swaps.tuple_copy(value, where)
            if new is None or new is value:
                self.swaps.swap(value, where)
                return
        module[name] = new
        self.bound.append((module, name, value, new))

    def finish(self, recorder) -> None:
        """Each rebound name gets its value back; one the untraced code bound to a traced
        value itself gets that value, concrete, and the signature runs eagerly."""
        for module, name, value, new in reversed(self.bound):
            now = module.get(name)
            if now is new:
                module[name] = value
            elif now is not value and _traced(now):
                module[name] = unwrap(now, recorder.originals)
                recorder.set_fallback(LEAKED.format(name), None)
        self.bound.clear()


def _compiled(value) -> bool:
    """A Numba dispatcher (``@njit``), which needs real ndarrays."""
    return type(value).__module__.startswith("numba.")


def _traced(value) -> bool:
    from .side_effects import has_traced
    return has_traced(value)
