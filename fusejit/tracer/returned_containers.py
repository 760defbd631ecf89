"""Dicts, lists and tuples the body returns that existed before the call.

The body runs on copies of the argument containers (``containers.py``), so the container it
returns is a copy; eager Python returns the caller's own object. Such a container is replaced
in the result by an :class:`ArgumentContainer` marker naming where it sits in the arguments,
and every call (the traced one and each replay) puts the caller's container in its place
(``fill``). The container's items are the caller's: a body that changed them runs eagerly.

A dict or list reached from an argument object, ``self``, a global or a closure cell
(``return self.state``, ``return CONFIG["opt"]``) is returned as the object itself too: a
:class:`HeldContainer` marker names the path the trace found it at, read again every call.
Only containers that were there before the call are marked (``existing``); one the body
made is rebuilt every call, as eagerly.
"""
from __future__ import annotations

from dataclasses import dataclass

from .captures import (
    MAX_DEPTH,
    Capture,
    _root_value,
    _search,
    breadth_first,
    first_path,
)
from .pytree import _is_namedtuple

_CONTAINERS = (dict, list, tuple)
_HELD = (dict, list)
_MAX_SEEN = 20_000   # objects ``existing`` visits below the roots


@dataclass(frozen=True)
class ArgumentContainer:
    """The caller's container at ``path``: (0, position, keys...) in the positional
    arguments or (1, name, keys...) in the keyword arguments."""
    path: tuple


@dataclass(frozen=True, eq=False)
class HeldContainer:
    """The dict or list at ``steps`` below ``source`` (``captures.Capture``'s roots)."""
    source: tuple
    steps: tuple

    def resolve(self, args, kwargs):
        from .pytree import flatten
        leaves = flatten((tuple(args), dict(kwargs)))[0] if self.source[0] == "leaf" else []
        found = Capture("", None, self.source, self.steps).resolve(leaves)
        if found is None:   # the path leads nowhere now (``del G``)
            raise LookupError("a returned container's place is gone")
        return found


def existing(roots, leaves) -> dict:
    """id -> object of each dict and list the roots reach (``captures.breadth_first``),
    before the body runs (the objects themselves are
    kept, so their ids stay theirs)."""
    seen: set = set()
    return {id(obj): obj for _, value in _root_values(roots, leaves)
            for _, obj, _ in breadth_first(value, seen, _MAX_SEEN) if type(obj) in _HELD}


def mark_held(result, held: dict, roots, leaves):
    """``result`` with each container of ``held`` that a root reaches replaced by its
    marker."""
    if not held:
        return result
    if type(result) in _HELD and held.get(id(result)) is result:
        for source, value in _root_values(roots, leaves):
            for steps in _search(value, result, MAX_DEPTH):
                return HeldContainer(*roots.read_again(source, steps))
        opened: set = set()
        for source, value in _root_values(roots, leaves):
            steps = first_path(value, result, opened)
            if steps is not None:
                return HeldContainer(*roots.read_again(source, steps))
    return _rebuilt(result, lambda item: mark_held(item, held, roots, leaves))


def _root_values(roots, leaves):
    """(source, value) of each root that holds something now (not an empty cell...)."""
    for source, _ in roots.candidates:
        try:
            yield source, _root_value(source, leaves)
        except (KeyError, ValueError, AttributeError, IndexError):
            continue


def copies(args, kwargs, proxy_args, proxy_kwargs) -> dict:
    """id(copy) -> (copy, path) for each container the body was handed in place of one of
    the caller's."""
    found: dict = {}
    _walk((tuple(args), dict(kwargs)), (tuple(proxy_args), dict(proxy_kwargs)), (), found)
    return found


def _walk(original, copy, path: tuple, found: dict) -> None:
    kind = type(original)
    if kind not in _CONTAINERS and not _is_namedtuple(original) or type(copy) is not kind:
        return
    if len(path) >= 2:   # the (args, kwargs) pair and the args tuple are no user objects
        found.setdefault(id(copy), (copy, path))   # ``f(d, d)``: its first place
    items = original.items() if kind is dict else enumerate(original)
    for key, item in items:
        _walk(item, copy[key], (*path, key), found)


def mark(result, found: dict):
    """``result`` with each container that is one of ``found`` replaced by its marker."""
    if not found:
        return result
    hit = found.get(id(result))
    if hit is not None and hit[0] is result:
        return ArgumentContainer(hit[1])
    return _rebuilt(result, lambda item: mark(item, found))


def fill(result, args, kwargs):
    """``result`` with each marker replaced by the caller's container it names."""
    if isinstance(result, ArgumentContainer):
        obj = (args, kwargs)
        for key in result.path:
            obj = obj[key]
        return obj
    if isinstance(result, HeldContainer):
        return result.resolve(args, kwargs)
    return _rebuilt(result, lambda item: fill(item, args, kwargs))


def markers(result) -> tuple:
    """The :class:`ArgumentContainer` and :class:`HeldContainer` markers in ``result``."""
    if isinstance(result, (ArgumentContainer, HeldContainer)):
        return (result,)
    kind = type(result)
    if kind is dict:
        result = result.values()
    elif kind not in _CONTAINERS and not _is_namedtuple(result):
        return ()
    return tuple(marker for item in result for marker in markers(item))


def all_held(markers, args, kwargs) -> bool:
    """Whether each marker's path still reaches something. One that does not (``del G``,
    ``f.__defaults__ = None``) makes the call run eagerly, before the replay: the body then
    raises Python's own error, where filling the replay's result would raise another (or
    fail after the replay's side effects)."""
    for marker in markers:
        try:
            marker.resolve(args, kwargs)
        except Exception:  # noqa: BLE001 -- any path that no longer resolves: eager decides
            return False
    return True


def _rebuilt(tree, convert):
    """``tree`` with ``convert`` applied to its items: ``tree`` itself where none changed
    (a global dict the body returns is then still itself for ``mark_held``)."""
    kind = type(tree)
    if kind is dict:
        items = {k: convert(v) for k, v in tree.items()}
        return items if any(items[k] is not v for k, v in tree.items()) else tree
    if kind is not list and kind is not tuple and not _is_namedtuple(tree):
        return tree
    items = [convert(v) for v in tree]
    if all(new is old for new, old in zip(items, tree, strict=True)):
        return tree
    return kind(*items) if _is_namedtuple(tree) else kind(items)
