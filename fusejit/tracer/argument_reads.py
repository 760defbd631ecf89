"""Plain values read through arguments that are not traced values: what a function given
as an argument reads (``gd(w, grad_fn, lr)``: its closure cells, ``scale[0]`` of a closure
list or ``c.k`` of a closure object, its defaults, a bound method's object, ``m.act`` reading
``self.k``, a partial's bound objects), the attributes of a class given as an argument
(``cls.SCALE`` in a compiled classmethod, ``f(x, Cfg)``), the items of a dict subclass given
as one (an ``OrderedDict`` config), and what the body reads in an unhashable
``static_argnames`` object.

The cache key holds each such argument itself (a bound method: its object and function), so
these places are the same on every call of that signature; what they hold is not. The arrays
there are captured by reference (``captures.Roots.add_callable``); the plain and named values
the code reads there (``pystate.read_again``: an object's as ``object_reads`` finds them, an
item under a key the code subscripts by a constant) are read again before each replay, as
the body's own globals and cells are (``plain_reads``), so a new value takes another path."""
from __future__ import annotations

import functools
import sys
import types

from . import object_reads, pystate
from .captures import code_names, method_owner
from .code_reads import constant_keys, in_class
from .loc import classify

_DEPTH = 3   # partials and methods unwrapped, at most


def reads(leaves, paths, codes) -> list[tuple]:
    """(source, value, label, path) of each such value of the argument leaves; ``codes``: the
    user code objects the trace ran (what they read)."""
    keys = frozenset().union(*map(constant_keys, codes))
    found: list = []
    paths = paths or [f"argument {k}" for k in range(len(leaves))]
    for leaf, label in zip(leaves, paths, strict=True):
        if isinstance(leaf, type):
            found += class_reads(leaf, label, set().union(*map(code_names, codes)))
        elif isinstance(leaf, (dict, types.MappingProxyType)) and type(leaf) is not dict:
            found += object_reads.items(leaf, (("object", leaf), ()), label, keys,
                                        subclasses=True)
        elif callable(leaf):
            found += _callable(leaf, label, codes, keys, _DEPTH)
    return found


def static_reads(fn, codes) -> list[tuple]:
    """The same for the objects, dicts and lists given in ``static_argnames`` (bound by the
    partial that is traced) that the cache key holds by identity: the same object comes on
    each call of that signature, changed in place or not (``cfg["k"] = 3.0``). A static value
    keyed by ``==`` is not read again: another, equal object may come. And for a compiled
    classmethod, its class (``cls.SCALE``)."""
    keys = frozenset().union(*map(constant_keys, codes))
    owner = method_owner(fn)
    found = class_reads(owner, "cls", set().union(*map(code_names, codes))) \
        if isinstance(owner, type) else []
    if not isinstance(fn, functools.partial):
        return found
    for name, value in fn.keywords.items():
        if _by_identity(value):
            found += object_reads.below(value, (("object", value), ()), name, codes, keys)
    return found


def class_reads(cls: type, label: str, names: set) -> list[tuple]:
    """The plain values and functions a user class holds (or inherits) under ``names`` (those
    the code reads), as a lookup on the class gives them."""
    if type(cls) is not type or _classify(cls) != "user":
        return []   # a metaclass may answer otherwise (an Enum's members); a library's class
    found = []
    for name in sorted(names):
        if name.startswith("__") or in_class(cls, name) is pystate.ABSENT:
            continue
        value = pystate.get_attribute(cls, name)
        if type(value) is types.MethodType or hasattr(type(value), "__set__"):
            continue   # a class method (made anew on each lookup), a descriptor
        if pystate.read_again(value):
            found.append((("object", cls), value, f"{label}.{name}", (("attr", name),)))
    return found


def _classify(cls: type) -> str:
    module = sys.modules.get(cls.__module__)
    return classify(getattr(module, "__file__", None) or "<unknown>")


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


def _callable(fn, label: str, codes, keys, depth: int) -> list[tuple]:
    if depth == 0:
        return []
    found = []
    if isinstance(fn, functools.partial):
        for k, value in [*enumerate(fn.args), *fn.keywords.items()]:
            found += object_reads.below(value, (("object", value), ()), f"{label}.args[{k!r}]",
                                        codes, keys)
        return found + _callable(fn.func, label, codes, keys, depth - 1)
    if isinstance(fn, types.MethodType):
        owner = fn.__self__
        found += object_reads.below(owner, (("object", owner), ()), f"{label}.__self__",
                                    codes, keys)
        fn = fn.__func__
    if type(fn) is not types.FunctionType:
        return found
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        try:
            value = cell.cell_contents
        except ValueError:   # not bound yet
            continue
        found += object_reads.below(value, (("cell", cell), ()), f"{label}.<closure {name}>",
                                    codes, keys)
    for name in ("__defaults__", "__kwdefaults__"):
        held = getattr(fn, name) or ()
        for key in (range(len(held)) if type(held) is tuple else held):
            if pystate.read_again(held[key]):
                found.append((("object", fn), held[key], f"{label}.{name}[{key!r}]",
                              (("attr", name), ("item", key))))
    return found
