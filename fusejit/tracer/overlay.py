"""The traced copy of a function: its globals an overlay of its module's, its cells new.

``capture_proxies`` calls the body as such a copy. A global name the body reads is looked up
in the module and replaced on the way, once per trace: an array by its proxy, the ``numpy``
module and its creation functions by ``creation``'s wrapped ones, and a function defined in
the same module (a helper the body calls) by a traced copy of its own, so that helpers see
proxies too. Closure cells holding arrays become new cells holding proxies. Nothing shared is
changed while tracing; on exit, what the body bound in the overlay or the new cells is copied
to the module and the real cells, and rebinding a captured array, which a replay would lose,
runs the signature eagerly.
"""
from __future__ import annotations

import types

import numpy as np

from . import creation
from .context import unwrap
from .loc import _classify
from .side_effects import _has_traced

REBOUND = "side effect that replay would lose: {} rebound in the body"


def proxyable(value) -> bool:
    """A plain array of a dtype the tracer takes: the body sees a proxy of it."""
    return (type(value) is np.ndarray and value.dtype.kind not in "OV"
            and value.dtype.fields is None)


class Overlay(dict):
    """Globals of traced copies: names replaced so far, then the module's own."""

    def __init__(self, real: dict, copies: Copies):
        super().__init__()
        self.real, self.copies, self.replaced = real, copies, {}
        if "__builtins__" in real:
            self["__builtins__"] = real["__builtins__"]

    def __missing__(self, key):
        value = self.real[key]        # a KeyError makes CPython look in the builtins
        seen = self.copies.replace(value, self.real, key)
        if seen is not value:
            self[key] = self.replaced[key] = seen
        return seen

    def copy_back(self, recorder) -> None:
        for name, value in dict.items(self):
            replaced = self.replaced.get(name)
            if value is replaced or name == "__builtins__":
                continue
            if replaced is not None and not callable(replaced):
                recorder.set_fallback(REBOUND.format(f"global {name}"), None)
            elif _has_traced(value):
                recorder.set_fallback(REBOUND.format(f"global {name} (a traced value)"), None)
            self.real[name] = unwrap(value)


class Copies:
    """Traced copies of functions, one overlay per module, new cells for array cells."""

    def __init__(self, proxy_of):
        self.proxy_of = proxy_of        # (array, path) -> its proxy (``capture_proxies``)
        self.overlays: dict = {}        # id(module globals) -> Overlay
        self.functions: dict = {}       # id(function) -> its copy
        self.cells: list = []           # (real cell, new cell, proxy)
        self.numpy = creation.numpy_view()

    def replace(self, value, module_globals: dict, name: str):
        if proxyable(value):
            return self.proxy_of(value, (("global", module_globals, name), (), name))
        numpy = creation.replacement(value, self.numpy)
        if numpy is not None:
            return numpy
        if (type(value) is types.FunctionType and value.__globals__ is module_globals
                and _classify(value.__code__.co_filename) == "user"):
            return self.function(value)
        return value

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
        copy = types.FunctionType(func.__code__, overlay, func.__name__, func.__defaults__,
                                  closure)
        copy.__kwdefaults__, copy.__qualname__ = func.__kwdefaults__, func.__qualname__
        copy.__module__, copy.__annotations__ = func.__module__, func.__annotations__
        copy.__dict__.update(func.__dict__)
        self.functions[id(func)] = copy
        return copy

    def _cell(self, cell, name: str):
        try:
            value = cell.cell_contents
        except ValueError:      # an empty cell (a name assigned later in the enclosing function)
            return cell
        if not proxyable(value):
            return cell
        proxy = self.proxy_of(value, (("cell", cell), (), name))
        new = types.CellType(proxy)
        self.cells.append((cell, new, proxy))
        return new

    def copy_back(self, recorder) -> None:
        for overlay in self.overlays.values():
            overlay.copy_back(recorder)
        for cell, new, proxy in self.cells:
            value = new.cell_contents
            if value is not proxy:
                cell.cell_contents = unwrap(value)
                recorder.set_fallback(REBOUND.format("a captured closure array"), None)
