"""The traced copy of a function: its globals an overlay of its module's, its cells new.

``capture_proxies`` calls the body as such a copy. The overlay starts as a copy of the
module's globals; a name the body reads is replaced on the way, once per trace: an array by
its proxy, the ``numpy`` module and its creation functions by ``creation``'s wrapped ones, a
function defined in the same module (a helper the body calls) by a traced copy of its own, so
that helpers see proxies too; the arrays held by a list, dict or object it names are swapped
in place (``capture_proxies._Swaps``). Closure cells holding arrays become new cells holding
proxies, and default argument arrays proxies. The module dict and the real cells are not
changed while tracing; on exit, what the body bound or deleted there is copied to them, and
rebinding a captured array, which a replay would lose, runs the signature eagerly.
"""
from __future__ import annotations

import functools
import sys
import types

import numpy as np

from ..ir.types import numeric
from . import (
    argument_reads,
    code_reads,
    creation,
    math_view,
    plain_reads,
    pystate,
    scalar_types,
)
from .context import unwrap
from .loc import classify
from .side_effects import has_traced
from .tracer import CapturedTracer

REBOUND = "side effect that replay would lose: {} rebound in the body"


def proxyable(value) -> bool:
    """A plain array of a dtype the tracer takes: the body sees a proxy of it."""
    return (type(value) is np.ndarray and numeric(value.dtype)
            and value.dtype.fields is None)


def rebuildable(value) -> bool:
    """A tuple or named tuple (``_make``), whose copy can hold proxies; not one with
    attributes of its own (``p.k = 3`` on a subclass), which the copy would lack."""
    return type(value) is tuple or (isinstance(value, tuple) and hasattr(type(value), "_make")
                                    and not isinstance(value, CapturedTracer)
                                    and not getattr(value, "__dict__", None))


class Overlay(dict):
    """Globals of traced copies: a copy of the module's, whose names are replaced (an array
    by its proxy, ...) as the body first reads them."""

    def __init__(self, real: dict, copies: Copies):
        super().__init__(real)
        self.real, self.copies = real, copies
        self.before, self.replaced = dict(real), {}
        if "__builtins__" in real:   # read by CPython directly when it makes a function
            builtins = math_view.traced_builtins(real["__builtins__"], copies.numpy)
            dict.__setitem__(self, "__builtins__", builtins)
            self.replaced["__builtins__"] = builtins

    def __getitem__(self, key):
        value = dict.__getitem__(self, key)   # a KeyError makes CPython look in the builtins
        if type(value) is type and value in scalar_types.TYPES and \
                scalar_types.called(sys._getframe(1)):   # ``float32(x)``: a cast
            return scalar_types.wrapper(value)
        if key in self.replaced or value is not self.before.get(key, _MISSING):
            return value                      # replaced already, or bound by the body
        plain_reads.record(self.copies.plain_reads, ("global", self.real, key), value,
                           f"global {key}")
        seen = self.copies.replace(value, self.real, key)
        if seen is not value:
            dict.__setitem__(self, key, seen)
            self.replaced[key] = seen
        return seen

    def copy_back(self, recorder) -> None:
        """What the body bound or deleted, onto the module (names it left alone keep what
        other code bound meanwhile)."""
        for name in self.before.keys() | self.keys():
            now, was = dict.get(self, name, _MISSING), self.before.get(name, _MISSING)
            replaced = self.replaced.get(name)
            if now is was or (replaced is not None and now is replaced):
                continue
            if isinstance(replaced, CapturedTracer):
                recorder.set_fallback(REBOUND.format(f"global {name}"), None)
            elif has_traced(now):
                recorder.set_fallback(REBOUND.format(f"global {name} (a traced value)"), None)
            else:   # ``global step; step += 1``
                _check_state(recorder, ("global", self.real, name), f"global {name}", was, now)
            if now is _MISSING:
                self.real.pop(name, None)
            else:
                self.real[name] = unwrap(now, recorder.originals)


_MISSING = object()


def _check_state(recorder, source, label: str, was, now) -> None:
    was = pystate.ABSENT if was is _MISSING else was
    now = pystate.ABSENT if now is _MISSING else now
    if pystate.changed(was, now):
        recorder.state_changed(pystate.in_source(label, source, ()), was, now)


class Copies:
    """Traced copies of functions: one overlay per module, new cells for array cells, proxies
for default argument arrays."""

    def __init__(self, swaps):
        self.swaps = swaps              # ``capture_proxies._Swaps``: proxies and in-place swaps
        self.overlays: dict = {}        # id(module globals) -> Overlay
        self.functions: dict = {}       # id(function) -> its copy
        self.cells: list = []           # (real cell, new cell, proxy)
        self.plain_cells: list = []     # (real cell, its name, the plain value it held)
        self.plain_reads: dict = {}     # place -> plain_reads.PlainRead: checked on replay
        self.numpy = creation.view_of(swaps.recorder)

    def replace(self, value, module_globals: dict, name: str):
        """An array's proxy, NumPy's view, a same-module function's copy; the arrays held by
        a list, dict or object are swapped in place (``capture_proxies``)."""
        where = (("global", module_globals, name), (), name)
        copy = self.swaps.stand_in(value, where)
        if copy is not None:   # ``STATE`` passed as an argument too
            return copy
        if proxyable(value):
            return self.swaps.proxy(value, where)
        numpy = creation.replacement(value, self.numpy)
        if numpy is not None:
            return numpy
        maths = math_view.replacement(value)
        if maths is not None:
            return maths
        if (type(value) is types.FunctionType and value.__globals__ is module_globals
                and classify(value.__code__.co_filename) == "user"):
            return self.function(value)
        if rebuildable(value):   # ``CACHE = (x, h)``: a copy holding proxies
            for k, item in enumerate(value):   # ``P(w, 2.0)`` rebound to ``P(w, 4.0)``
                plain_reads.record(self.plain_reads, where[0], item, f"global {name}[{k}]",
                                   (("item", k),))
            return self.swaps.tuple_copy(value, where)
        self.swaps.swap(value, where)
        return value

    def nested(self, fn):
        """What the body runs for a compiled function it calls (whose ops join this trace): a
        copy of a user function, which reads its globals and closure cells as the body's own
        helpers do (``box[0]`` of its closure changed is seen)."""
        if isinstance(fn, functools.partial):   # ``static_argnames`` bound
            return functools.partial(self.nested(fn.func), *fn.args, **fn.keywords)
        if type(fn) is types.MethodType:
            return types.MethodType(self.nested(fn.__func__), fn.__self__)
        if type(fn) is types.FunctionType and classify(fn.__code__.co_filename) == "user":
            return self.function(fn)
        return fn

    def function(self, func):
        copy = self.functions.get(id(func))
        if copy is not None:
            return copy
        overlay = self.overlays.get(id(func.__globals__))
        if overlay is None:
            overlay = self.overlays[id(func.__globals__)] = Overlay(func.__globals__, self)
        closure = func.__closure__
        if closure is not None:
            closure = tuple(self._cell(cell, name)
                            for cell, name in zip(closure, func.__code__.co_freevars,
                                                  strict=True))
        if func.__closure__:   # ``cfg["b"]`` of a closure dict: ``code_reads``
            code_reads.note_closure(self.swaps.recorder.closure_cells, func)
        copy = types.FunctionType(func.__code__, overlay, func.__name__, self._defaults(func),
                                  closure)
        copy.__kwdefaults__, copy.__qualname__ = self._kwdefaults(func), func.__qualname__
        copy.__module__, copy.__annotations__ = func.__module__, func.__annotations__
        copy.__dict__ = func.__dict__   # ``helper.calls += 1`` is the function's own
        self.swaps.watch(func, f"function {func.__qualname__}")
        self.functions[id(func)] = copy
        return copy

    def _defaults(self, func):
        """Default arguments as the body reads them through ``func.__defaults__``."""
        defaults = func.__defaults__ or ()
        code = func.__code__
        names = code.co_varnames[:code.co_argcount][-len(defaults):] if defaults else ()
        return tuple(self._default(func, value, (("attr", "__defaults__"), ("item", i)), name)
                     for i, (value, name) in enumerate(zip(defaults, names, strict=True))) \
            or None

    def _kwdefaults(self, func):
        """Keyword-only defaults as the body reads them through ``func.__kwdefaults__``."""
        if not func.__kwdefaults__:
            return func.__kwdefaults__
        return {k: self._default(func, v, (("attr", "__kwdefaults__"), ("item", k)), k)
                for k, v in func.__kwdefaults__.items()}

    def _default(self, func, value, steps, name: str):
        """An array's proxy; the arrays in a default dict, list or object (``cfg=STATE``)
        swapped in place, as those of a global; a plain or named value read again on replay
        (``func.__defaults__ = (5.0,)`` is seen)."""
        where = (("object", func), steps, func.__name__)
        plain_reads.record(self.plain_reads, ("object", func), value,
                           f"default {name} of {func.__qualname__}", steps)
        if proxyable(value):
            return self.swaps.proxy(value, where)
        numpy = creation.replacement(value, self.numpy)   # ``def f(x, xp=np)``
        if numpy is not None:
            return numpy
        maths = math_view.replacement(value)
        if maths is not None:
            return maths
        copy = self.swaps.stand_in(value, where)
        if copy is not None:   # the dict passed as an argument too
            return copy
        if rebuildable(value):
            return self.swaps.tuple_copy(value, where)
        self.swaps.swap(value, where)
        return value

    def _cell(self, cell, name: str):
        try:
            value = cell.cell_contents
        except ValueError:      # an empty cell (a name assigned later in the enclosing function)
            return cell
        plain_reads.record(self.plain_reads, ("cell", cell), value, f"closure {name}")
        if type(value) is types.FunctionType and value.__closure__ and \
                classify(value.__code__.co_filename) == "user":   # a helper beside the body
            code_reads.note_closure(self.swaps.recorder.closure_cells, value, direct=True)
        maths = math_view.replacement(value) or creation.replacement(value, self.numpy)
        if maths is not None:       # ``exp = math.exp``, ``xp = np`` in the enclosing function
            return types.CellType(maths)
        copy = self.swaps.stand_in(value, (("cell", cell), (), name))
        if copy is not None:   # a dict or list passed as an argument too
            new = types.CellType(copy)
            self.cells.append((cell, new, copy))
            return new
        if rebuildable(value):   # a tuple of arrays: a new cell holding a copy with proxies
            copy = self.swaps.tuple_copy(value, (("cell", cell), (), name))
            if copy is not value:
                new = types.CellType(copy)
                self.cells.append((cell, new, copy))
                return new
        if not proxyable(value):
            self.swaps.swap(value, (("cell", cell), (), name))
            if pystate.is_plain(value):   # ``nonlocal step; step += 1`` changes it
                self.plain_cells.append((cell, name, value))
            return cell
        proxy = self.swaps.proxy(value, (("cell", cell), (), name))
        new = types.CellType(proxy)
        self.cells.append((cell, new, proxy))
        return new

    def copy_back(self, recorder, fn=None) -> None:
        for overlay in self.overlays.values():
            overlay.copy_back(recorder)
        for cell, new, proxy in self.cells:
            value = new.cell_contents
            if value is not proxy:
                cell.cell_contents = unwrap(value, recorder.originals)
                recorder.set_fallback(REBOUND.format("a captured closure array"), None)
        for cell, name, before in self.plain_cells:
            source = ("cell", cell)
            _check_state(recorder, source, f"closure {name}", before, pystate.source_root(source))
        handled = {id(cell) for cell, *_ in self.plain_cells}
        recorder.foreign_cells.settle(recorder, handled | {id(c) for pair in self.cells
                                                           for c in pair[:2]})
        for key, read in code_reads.settle(recorder.code_places, recorder).items():
            self.plain_reads.setdefault(key, read)
        for place in self._read_through_objects(recorder, fn):
            plain_reads.record(self.plain_reads, *place)
        for read in self.swaps.alias_reads():
            plain_reads.record_alias(self.plain_reads, read)
        recorder.plain_reads = plain_reads.kept(self.plain_reads)

    def _read_through_objects(self, recorder, fn) -> list[tuple]:
        """The plain and named values the code the trace ran reads through objects: those
        reached from globals, cells and defaults (``MODEL.forward`` reading ``self.scale``),
        and those reached through arguments that are not traced values (a function given as
        one, a class, a dict subclass, a ``static_argnames`` object)."""
        codes = [code for code in recorder.entered or () if classify(code.co_filename) == "user"]
        return [*self.swaps.held_reads(codes),
                *argument_reads.reads(recorder.leaves, recorder.leaf_names, codes),
                *argument_reads.static_reads(fn, codes)]
