"""Captured arrays handed to the body as proxies while it is traced.

NumPy code on captured arrays alone (``R *= 0.9`` on a global, ``self.rm *= 1 - mom``,
``np.sum(W ** 2)``) never reaches the tracer when the body reads plain arrays: it would run
once, while tracing, and replays would lose it. So the body is called as a traced copy
(``overlay.py``: globals, closure cells, helper functions of its module) and on shadows of
``self`` and the other argument objects: instances of the same class whose attributes, and
the lists, dicts and objects they hold down to ``MAX_DEPTH`` steps, show ``CapturedTracer``s
for arrays. Nothing shared is changed while tracing, so other threads see the objects as
they were; afterwards what the body bound in the shadows is copied back to the real objects
(``side_effects.detect`` then replays or refuses traced values bound to an argument object).
"""
from __future__ import annotations

import types
from contextlib import contextmanager
from dataclasses import dataclass

from .captures import MAX_DEPTH, _found
from .context import unwrap
from .overlay import Copies, proxyable
from .pytree import flatten, unflatten
from .side_effects import _has_traced, _watchable
from .tracer import CapturedTracer, Tracer


@dataclass
class Plan:
    """How to call the body on proxies, and how to copy its bindings back afterwards."""

    fn: object
    shadows: _Shadows
    copies: Copies


class _Shadows:
    """Proxies for arrays and shadow copies of the lists, dicts and objects that hold them."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.made: dict = {}     # id(real) -> its proxy or shadow
        self.real: dict = {}     # id(proxy or shadow) -> real
        self.pairs: list = []    # (real, shadow, top): lists, dicts and objects copied

    def of(self, value, depth: int, where: tuple, top: bool = False):
        """What the body sees for ``value``: a proxy for an array, a shadow of a list, dict
        or object holding arrays ``depth`` levels down, else ``value`` itself. ``where`` is
        the path the runtime reads it through: (source, steps, label) as in ``captures``."""
        made = self.made.get(id(value))
        if made is not None:
            return made
        if proxyable(value):
            source, steps, label = where
            path = (source, steps, _found(source, label, steps)[2])
            return self._remember(value, CapturedTracer(value, self.recorder, path))
        if depth == 0:
            return value
        if type(value) in (list, tuple, dict):
            items = list(value.items() if type(value) is dict else enumerate(value))
            seen = {key: self.of(item, depth - 1, _below(where, "item", key))
                    for key, item in items}
            if all(seen[key] is item for key, item in items):
                return value
            shadow = seen if type(value) is dict else type(value)(seen.values())
            return self._remember(value, shadow, type(value) is not tuple, top)
        if _watchable(value) and not isinstance(value, CapturedTracer):
            return self._object(value, depth, where, top)
        return value

    def _object(self, obj, depth, where, top):
        if any("__slots__" in vars(cls) for cls in type(obj).__mro__):
            return obj          # a shadow made bare would lack the slots' values
        attrs = vars(obj)
        seen = {name: self.of(item, depth - 1, _below(where, "attr", name))
                for name, item in attrs.items()}
        if all(seen[name] is item for name, item in attrs.items()):
            return obj
        try:
            shadow = object.__new__(type(obj))
            vars(shadow).update(seen)
        except (TypeError, AttributeError):   # a class that cannot be made bare
            return obj
        return self._remember(obj, shadow, True, top)

    def _remember(self, real, made, copied=False, top=False):
        self.made[id(real)], self.real[id(made)] = made, real
        if copied:
            self.pairs.append((real, made, top))
        return made

    def restore(self, value):
        return self.real.get(id(value), value)

    def copy_back(self) -> None:
        """The shadows' items and attributes onto the real lists, dicts and objects. Proxies
        and shadows left in place become the real ones again. An argument object keeps
        traced values the body bound to it (``side_effects.detect`` replays or refuses
        them); anywhere deeper they are a side effect replay would lose."""
        for real, shadow, top in self.pairs:
            if type(real) is list:
                new = [self.restore(item) for item in shadow]
                if len(new) != len(real) or any(a is not b for a, b in zip(new, real, strict=True)):
                    real[:] = self._checked(new, top, real)
                continue
            target, seen = (real, shadow) if type(real) is dict else (vars(real), vars(shadow))
            for name in [name for name in target if name not in seen]:
                del target[name]
            for name, item in seen.items():
                item = self.restore(item)
                if target.get(name, _MISSING) is not item:
                    target[name] = self._checked(item, top, real)

    def _checked(self, value, top, where):
        if top or not _has_traced(value):
            return value
        self.recorder.set_fallback(f"side effect that replay would lose: traced values stored "
                                   f"into a {type(where).__name__} held by an argument", None)
        return unwrap(value)


def plan(fn, recorder, leaves: list, hints: list[str]) -> tuple[Plan, dict]:
    """The callable to trace and ``{leaf index: shadow}`` for argument objects."""
    shadows = _Shadows(recorder)
    result = Plan(fn, shadows, Copies(lambda array, where: shadows.of(array, 0, where)))
    bound = getattr(fn, "__self__", None) if isinstance(fn, types.MethodType) else None
    func = fn.__func__ if bound is not None else fn
    if type(func) is types.FunctionType:
        func = result.copies.function(func)
        if bound is not None:
            bound = shadows.of(bound, MAX_DEPTH, (("object", bound), (), "self"), top=True)
        result.fn = func if bound is None else types.MethodType(func, bound)
    replaced = {}
    for index, leaf in enumerate(leaves):
        if _watchable(leaf):
            shadow = shadows.of(leaf, MAX_DEPTH, (("leaf", index), (), hints[index]), top=True)
            if shadow is not leaf:
                replaced[index] = shadow
    return result, replaced


def _below(where, step, key):
    source, steps, label = where
    return source, (*steps, (step, key)), label


def unshadow(result, traced: Plan):
    """The body's result with any shadow it returned (``return self``) replaced by its
    object."""
    if not traced.shadows.pairs:
        return result
    leaves, treedef = flatten(result)
    return unflatten(treedef, [traced.shadows.restore(leaf) if not isinstance(leaf, Tracer)
                               else leaf for leaf in leaves])


@contextmanager
def copied_back(traced: Plan, recorder):
    """Copy the body's bindings back to the real globals, cells and objects on exit."""
    try:
        yield
    finally:
        traced.copies.copy_back(recorder)
        traced.shadows.copy_back()


_MISSING = object()
