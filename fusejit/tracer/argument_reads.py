"""Plain values read through arguments that are not traced as values: what a function given
as an argument reads (``gd(w, grad_fn, lr)``: its closure cells, ``scale[0]`` of a closure
list, its defaults, a bound method's object, ``m.act`` reading ``self.k``, a partial's bound
objects), the attributes of a class given as an argument (``cls.SCALE`` in a compiled
classmethod), and the items of a dict subclass given as one (an ``OrderedDict`` config).

The cache key holds each such argument itself (a bound method: its object and function), so
these places are the same on every call of that signature; what they hold is not. The arrays
there are captured by reference (``captures.Roots.add_callable``); the plain and named values
the code reads there (``pystate.read_again``: under an attribute name the code reads, an item
under a key it subscripts by a constant) are read again before each replay, as the body's own
globals and cells are (``plain_reads``), so a new value takes another path."""
from __future__ import annotations

import functools
import sys
import types

from . import pystate
from .captures import code_names
from .code_reads import constant_keys, in_class
from .loc import classify

_DEPTH = 3   # partials and methods unwrapped, at most


def classify_module(cls: type) -> str:
    module = sys.modules.get(cls.__module__)
    return classify(getattr(module, "__file__", None) or "<unknown>")


def reads(leaves, paths, codes) -> list[tuple]:
    """(source, value, label, path) of each such value of the function leaves; ``codes``: the
    code objects the trace ran (attribute names and constant keys they read)."""
    names = set().union(*map(code_names, codes))
    keys = frozenset().union(*map(constant_keys, codes))
    found: list = []
    paths = paths or [f"argument {k}" for k in range(len(leaves))]
    for leaf, label in zip(leaves, paths, strict=True):
        if isinstance(leaf, type):
            _class(leaf, label, names, found)
        elif isinstance(leaf, (dict, types.MappingProxyType)) and type(leaf) is not dict:
            _items(("object", leaf), leaf, label, (), keys, found, plain_dict=False)
        elif callable(leaf):
            _callable(leaf, label, names, keys, found, _DEPTH)
    return found


def class_reads(cls: type, label: str, names) -> list[tuple]:
    found: list = []
    _class(cls, label, names, found)
    return found


def static_reads(fn, codes) -> list[tuple]:
    """The same for the objects, dicts and lists given in ``static_argnames`` (bound by the
    partial that is traced) that the cache key holds by identity: the same object comes on
    each call of that signature, changed in place or not (``cfg["k"] = 3.0``). A static value
    keyed by ``==`` is not read again: another, equal object may come."""
    if not isinstance(fn, functools.partial):
        return []
    names = set().union(*map(code_names, codes))
    keys = frozenset().union(*map(constant_keys, codes))
    found: list = []
    for name, value in fn.keywords.items():
        if not _by_identity(value):
            continue
        if isinstance(value, (list, dict)):
            _items(("object", value), value, name, (), keys, found, plain_dict=False)
        else:
            _object(("object", value), value, name, names, keys, found)
    return found


def _by_identity(value) -> bool:
    """Keyed by its identity (``runtime.key``): it does not hash, or compares as ``object``
    does."""
    cls = type(value)
    if cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__:
        return True
    try:
        hash(value)
    except Exception:   # noqa: BLE001 -- as the key takes it
        return True
    return False


def _class(cls: type, label: str, names, found: list) -> None:
    """The plain values and functions a user class holds (or inherits) under the names."""
    if type(cls) is not type or classify_module(cls) != "user":
        return   # a metaclass may answer otherwise (an Enum's members); a library's class
    for name in sorted(names):
        held = in_class(cls, name)
        if name.startswith("__") or not (type(held) is types.FunctionType or (
                pystate.read_again(held) and not hasattr(type(held), "__get__"))):
            continue   # a static or class method, a property: made anew on each lookup
        found.append((("object", cls), held, f"{label}.{name}", (("attr", name),)))


def _callable(fn, label: str, names, keys, found: list, depth: int) -> None:
    if depth == 0:
        return
    if isinstance(fn, functools.partial):
        for k, value in [*enumerate(fn.args), *fn.keywords.items()]:
            _object(("object", value), value, f"{label}.args[{k!r}]", names, keys, found)
        _callable(fn.func, label, names, keys, found, depth - 1)
        return
    if isinstance(fn, types.MethodType):
        owner = fn.__self__
        _object(("object", owner), owner, f"{label}.__self__", names, keys, found)
        fn = fn.__func__
    if type(fn) is not types.FunctionType:
        return
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            value = cell.cell_contents
        except ValueError:   # not bound yet
            continue
        where = ("cell", cell)
        text = f"{label}.<closure {name}>"
        if pystate.read_again(value):
            found.append((where, value, text, ()))
        else:
            _items(where, value, text, (), keys, found)
    for name in ("__defaults__", "__kwdefaults__"):
        held = getattr(fn, name) or ()
        for key in (range(len(held)) if type(held) is tuple else held):
            if pystate.read_again(held[key]):
                found.append((("object", fn), held[key], f"{label}.{name}[{key!r}]",
                              (("attr", name), ("item", key))))


def _object(where, obj, label: str, names, keys, found: list) -> None:
    """The plain and named attributes of ``obj`` under names the code reads, and the items
    of its list and dict attributes under constant keys."""
    attrs = getattr(obj, "__dict__", None)
    if type(attrs) is not dict or isinstance(obj, (types.ModuleType, type)):
        return
    for name, value in list(attrs.items()):
        if name not in names:
            continue
        steps = (("attr", name),)
        if pystate.read_again(value):
            found.append((where, value, f"{label}.{name}", steps))
        else:
            _items(where, value, f"{label}.{name}", steps, keys, found)


def _items(where, container, label: str, steps: tuple, keys, found: list,
           plain_dict: bool = True) -> None:
    """The plain and named items of a list or dict (``plain_dict`` False: a dict subclass)
    under constant keys (a list's from either end)."""
    if type(container) is dict or (not plain_dict and isinstance(
            container, (dict, types.MappingProxyType))):
        pairs = container.items()
    elif type(container) is list or (not plain_dict and isinstance(container, list)):
        pairs = enumerate(container)
    else:
        return
    for key, value in list(pairs):
        wanted = key in keys or (type(container) is list and key - len(container) in keys)
        if wanted and pystate.read_again(value):
            found.append((where, value, f"{label}[{key!r}]", (*steps, ("item", key))))
