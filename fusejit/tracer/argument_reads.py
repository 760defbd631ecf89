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
import types
from collections import deque

from . import object_reads, pystate, whole_uses
from .captures import callable_parts, method_owner, names_of
from .code_reads import constant_keys, getattr_names


def reads(leaves, paths, codes) -> list[tuple]:
    """(source, value, label, path) of each such value of the argument leaves; ``codes``: the
    user code objects the trace ran (what they read)."""
    keys = frozenset().union(*map(constant_keys, codes))
    found: list = []
    paths = paths or [f"argument {k}" for k in range(len(leaves))]
    for leaf, label in zip(leaves, paths, strict=True):
        if isinstance(leaf, type):
            found += object_reads.class_reads(leaf, label, names_of(codes), _optional(codes))
        elif isinstance(leaf, types.ModuleType):   # ``def f(x, conf): x / conf.TEMP``
            found += _module_reads(leaf, label, codes)
        elif isinstance(leaf, (dict, list, deque, types.MappingProxyType)) and \
                type(leaf) not in (dict, list):   # an ``OrderedDict``, a ``deque``
            found += _container_reads(leaf, label, codes, keys)
        elif callable(leaf):
            found += _callable(leaf, label, codes, keys)
    return found


def _container_reads(leaf, label: str, codes, keys) -> list[tuple]:
    """What the code reads in a container given as an argument that is no pytree: by key,
    or whole where the parameter it is (``len(q)``) or the item of a dict argument that holds
    it (``len(d["q"])``: its leaf's name ``d.q``) is used whole."""
    found = object_reads.below(leaf, (("object", leaf), ()), label, codes, keys, label)
    *_, key = label.rsplit(".", 1)
    held = None if key == label or any(not read[3] for read in found) else \
        whole_uses.read_of(whole_uses.of(codes), "item", int(key) if key.isdigit() else key,
                           leaf)
    return found if held is None else [*found, (("object", leaf), held, label, ())]


def _optional(codes) -> frozenset:
    """The names code gives ``getattr`` or ``hasattr`` (``hasattr(C, "NEG")``)."""
    return frozenset().union(*map(getattr_names, codes))


def _module_reads(module, label: str, codes) -> list[tuple]:
    """The plain values a module given as an argument holds under the names the code loads,
    and whether those it gives ``getattr`` or ``hasattr`` are still missing."""
    held, optional = vars(module), _optional(codes)
    return [(("object", module), held.get(name, pystate.ABSENT), f"{label}.{name}",
             (("attr", name),)) for name in sorted(names_of(codes) | optional)
            if pystate.read_again(held.get(name)) or (name in optional and name not in held)]


def static_reads(fn, codes) -> list[tuple]:
    """The same for the objects, dicts and lists given in ``static_argnames`` (bound by the
    partial that is traced) that the cache key holds by identity: the same object comes on
    each call of that signature, changed in place or not (``cfg["k"] = 3.0``). A static value
    keyed by ``==`` is not read again: another, equal object may come. What the compiled
    partial binds by position is always its own object (``partial(Model.forward, model)``).
    And for a compiled classmethod, its class (``cls.SCALE``)."""
    keys = frozenset().union(*map(constant_keys, codes))
    owner = method_owner(fn)
    found = object_reads.class_reads(owner, "cls", names_of(codes)) \
        if isinstance(owner, type) else []
    if not isinstance(fn, functools.partial):
        return found
    for name, value in fn.keywords.items():
        if _by_identity(value):
            found += object_reads.below(value, (("object", value), ()), name, codes, keys,
                                        name)
    params = _parameters(fn.func)
    for k, value in enumerate(fn.args):   # ``partial(Model.forward, model)``: the one object
        label = f"partial argument {k}"
        found += object_reads.class_reads(value, label, names_of(codes)) \
            if isinstance(value, type) else \
            object_reads.below(value, (("object", value), ()), label, codes, keys,
                               params[k] if k < len(params) else None)
    return found


def _parameters(func) -> tuple:
    """The names of the positional parameters of the function a partial binds."""
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    return code.co_varnames[:code.co_argcount] if code is not None else ()


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


def _callable(fn, label: str, codes, keys) -> list[tuple]:
    """What the code reads in what a function given as an argument reaches
    (``captures.callable_parts``); a default through the function, which may be given new
    defaults."""
    found = []
    for source, value, text, defaults_of in callable_parts(fn, label):
        if defaults_of is None:
            found += object_reads.below(value, (source, ()), text, codes, keys)
            continue
        holder, name = defaults_of
        for key in (range(len(value)) if type(value) is tuple else value):
            if pystate.read_again(value[key]):
                found.append((("object", holder), value[key], f"{text}[{key!r}]",
                              (("attr", name), ("item", key))))
    return found
