"""Plain and named values read through objects the body reaches from its globals, closure
cells and defaults: ``MODEL.forward(x)`` reading ``self.scale``, a callable object ``ACT(x)``
reading ``self.slope``, ``cfg = CONFIG; cfg.eps``.

Code that runs as it is reads them through local names, which ``code_reads`` (chains from
globals) does not follow. So for each object ``capture_proxies`` walked from a global, cell
or default, or from an object a compiled partial binds (``captures.OBJECT_DEPTH`` steps
down), the places read again before each replay are:

- the paths the methods of its class that the trace ran read below ``self``
  (``code_reads.self_reads``: ``self.t``, ``self.layers[3].s``, ``self.cfg["eps"]``, a class
  attribute ``self.K``, a method ``self.act``); a count kept on another object under the same
  name (``MODEL.opt.t``) is not one of them;
- its attributes under the names any code the trace ran loads otherwise (``layer.s`` of a
  loop variable), and the ``__call__`` its class runs (``x = layer(x)``: a layer swapped for
  one of another class);
- the items of its lists and dicts under the keys the code subscripts by a constant;
- the paths a function that is no method reads below its first parameter (``apply(MODEL,
  x)``), on every object;
- a list, set or dict of plain values at the end of such a path that the code uses whole
  (``for d in self.dims``: ``whole_uses``), as its ``pystate.Contents``.

Each is walked from the global, cell or default again (``plain_reads.PlainRead``), so a
global rebound to another object is seen too. One the body changed itself is
``capture_proxies``' state check, not a read.
"""
from __future__ import annotations

import types
from collections import deque

import numpy as np

from . import pystate, whole_uses
from .captures import names_of, slot_names
from .code_reads import (
    contained_keys,
    get_keys,
    getattr_names,
    in_class,
    self_reads,
    users_class,
)
from .loc import in_stdlib

_METHODS = (types.FunctionType, staticmethod, classmethod)
_WRAPS = 4   # decorators looked through (``__wrapped__``) to the code a method runs
_ARRAY_NAMES = frozenset(dir(np.ndarray))
_TUPLE_LOOKUP = tuple.__getattribute__   # a named tuple's: as ``object``'s


def reads(objects, codes, handed=None) -> list[tuple]:
    """(source, value, label, path[, cls]) for each ``(obj, where, text)`` walked from a global,
    cell or default; ``codes``: the user code objects the trace ran."""
    loose = set().union(*(self_reads(code)[1] for code in codes))
    found_uses = whole_uses.of(codes, handed)   # ``handed``: ``whole_uses.note_handed``
    optional = frozenset({("attr", name) for code in codes for name in getattr_names(code)}
                         | {("item", key) for code in codes for key in get_keys(code)})
    loose = {(("attr", name),) for name in loose | {"__call__"}
             if not name.startswith("__") or name == "__call__"} | _free_paths(codes) | \
        {(step,) for step in optional if step[0] == "attr"}   # ``getattr(m, "neg", False)``
    found: list = []
    by_class: dict = {}   # a class -> the paths read below its objects, in order
    for obj, where, text in objects:
        if isinstance(obj, type):   # a class: what its methods read below ``cls``
            if type(obj) is type and users_class(obj):
                paths = by_class.setdefault(("class", obj), sorted(_self_paths(obj, codes),
                                                                   key=repr))
                found += [read for path in paths
                          for read in _along(obj, path, where, text, uses=found_uses)]
            continue
        cls = type(obj)
        if cls is not types.SimpleNamespace and type.__getattribute__(
                cls, "__getattribute__") not in (object.__getattribute__, _TUPLE_LOOKUP):
            continue   # its own attribute lookup
        if cls not in by_class:   # (path, whether ``self.`` code of its methods reads it)
            own = _self_paths(cls, codes)
            by_class[cls] = sorted({(path, path in own) for path in own | loose}, key=repr)
        for path, own in by_class[cls] + [(path, True) for path in _own_method_paths(obj, codes)]:
            found += _along(obj, path, where, text, optional, own, found_uses)
    return found


def _free_paths(codes) -> set:
    """The paths a function that is no method (its first parameter not named ``self`` or
    ``cls``: a helper, a static method) reads below its first argument (``def apply(model,
    x): return x * model.blocks[0].scale``, called as ``apply(MODEL, x)``): which object it is
    given is not known, so any of them; not one that starts as an array's attribute does
    (``x.size``, ``x.T``: a helper given an array, which a count kept under that name would
    fail on every call). Not Python's own library's functions (``dis``, ``weakref``)."""
    return {path for code in codes
            if not (code.co_argcount and code.co_varnames[0] in ("self", "cls"))
            and not in_stdlib(code.co_filename) and not code.co_filename.startswith("<frozen")
            for path in self_reads(code)[0] if path[0][1] not in _ARRAY_NAMES}


def _own_method_paths(obj, codes) -> list:
    """The paths below ``self`` that a method bound on the object itself reads
    (``obj.g = types.MethodType(alt, obj)``), where the trace ran it."""
    attrs = getattr(obj, "__dict__", None)
    if type(attrs) is not dict:
        return []
    ran = [value.__func__.__code__ for value in attrs.values()
           if type(value) is types.MethodType and value.__self__ is obj
           and type(value.__func__) is types.FunctionType and value.__func__.__code__ in codes]
    return sorted({path for code in ran for path in self_reads(code)[0]}, key=repr)


def class_names(cls: type) -> set:
    """The names the code of a class's methods loads (``cls.W``, ``self.K``)."""
    return names_of(_codes_of(cls))


def items(container, where, text: str, keys: frozenset, depth: int = pystate.NESTED,
          subclasses: bool = False, uses: frozenset = frozenset(),
          missing: frozenset = frozenset(), present: frozenset = frozenset()) -> list[tuple]:
    """The reads of ``keyed_items`` of a list or dict reached at ``where``; of a dict, also
    whether the ``missing`` keys it lacks are still missing (``cfg.get("neg")``, ``"neg" in
    cfg``) and the ``present`` keys it holds still there."""
    found = [(where[0], value, text + pystate.path_text(path),
              (*where[1], *(("item", key) for key in path)))
             for path, value in keyed_items(container, keys, depth, subclasses, uses)]
    if isinstance(container, (dict, types.MappingProxyType)):
        held = container.keys()
        found += [(where[0], mark, f"{text}[{key!r}]", (*where[1], ("item", key)))
                  for mark, chosen in ((pystate.ABSENT, missing - held),
                                       (pystate.PRESENT, (present & held) - keys))
                  for key in sorted(chosen, key=repr)]
    return found


def keyed_items(container, keys: frozenset, depth: int = pystate.NESTED,
                subclasses: bool = False, uses: frozenset = frozenset()):
    """(path, value): the plain and named items of a list or dict (``subclasses``: or a
    subclass, a ``MappingProxyType``) under the constant keys the code subscripts by (a
    list's from either end), and of the lists and dicts it holds there, ``depth`` levels
    down; a list, set or dict of plain values there that the code uses whole (``uses``:
    ``len(self.cfg["sizes"])``), as its ``pystate.Contents``."""
    for key, value in _keyed_pairs(container, keys, subclasses):
        held = whole_uses.held(uses, "item", key, value)
        if pystate.read_again(held):
            yield (key,), held
            if not _keys_only(held):   # a dict whose keys alone the code reads: items too
                continue
        if isinstance(value, tuple):   # a named tuple of an array and numbers: all of them
            yield from (((key, k), item) for k, item in enumerate(value)
                        if pystate.read_again(item))
        elif depth > 1:
            yield from (((key, *path), item) for path, item in keyed_items(
                value, keys, depth - 1, uses=uses))


def _keys_only(held) -> bool:
    return type(held) is pystate.Contents and held.keys_only


def _keyed_pairs(container, keys: frozenset, subclasses: bool) -> list:
    """(key, item) of the items of a list or dict under ``keys``, each as the code writes
    it: a list's ``self.w[-1]`` as -1, the last item however many there are."""
    if type(container) is dict or (subclasses and isinstance(
            container, (dict, types.MappingProxyType))):
        return [(key, value) for key, value in list(container.items()) if key in keys]
    if not (type(container) in (list, deque) or (subclasses and isinstance(container, list))):
        return []
    items = list(container)
    return [(key, items[key]) for key in sorted(k for k in keys if type(k) is int)
            if -len(items) <= key < len(items)]


def class_value(cls: type, name: str):
    """What a lookup of ``name`` on a user class gives, where another lookup gives the same
    (a plain value, a function, a static method's function, a dict it holds); ABSENT for a
    class method (bound anew each time), a descriptor, or a name it does not hold."""
    if type(cls) is not type or not users_class(cls) or in_class(cls, name) is pystate.ABSENT:
        return pystate.ABSENT   # a metaclass may answer otherwise (an Enum's members)
    value = pystate.get_attribute(cls, name)
    if type(value) is types.MethodType or hasattr(type(value), "__set__"):
        return pystate.ABSENT
    return value


def class_reads(cls: type, label: str, names: set, optional: frozenset = frozenset()
                ) -> list[tuple]:
    """The plain values and functions a user class holds (or inherits) under ``names`` (those
    the code reads), as a lookup on the class gives them (``object_reads.class_value``); and
    that those among ``optional`` it lacks are still missing (``hasattr(C, "NEG")``)."""
    found = []
    for name in sorted(names | optional):
        value = pystate.ABSENT if name.startswith("__") else class_value(cls, name)
        if pystate.read_again(value) or (name in optional and users_class(cls) and
                                         pystate.get_attribute(cls, name) is pystate.ABSENT):
            found.append((("object", cls), value, f"{label}.{name}", (("attr", name),)))
    return found


def below(value, where, text: str, codes, keys: frozenset, param: str | None = None
          ) -> list[tuple]:
    """What the code reads below a value given to it (an argument that is not traced, a
    closure cell's or a bound method's object, a static argument): an object's paths
    (``reads``), a list's or dict's items, or the value itself where it is plain or named;
    a list, set or dict of plain values bound to the parameter ``param`` that the code uses
    whole (``partial(f, dims)``, ``for d in dims``), as its ``pystate.Contents``."""
    if type(value) in pystate.PROXIES:
        return []
    if pystate.read_again(value):
        return [(where[0], value, text, where[1])]
    uses = whole_uses.of(codes)
    held = whole_uses.read_of(uses, "local", param, value)   # ``partial(f, dims)``: ``for
    found = [] if held is None else [(where[0], held, text, where[1])]   # d in dims``
    if held is not None and not held.keys_only:
        return found
    if isinstance(value, (list, deque, dict, types.MappingProxyType)):   # its items by key
        missing = frozenset().union(*map(get_keys, codes))   # ``cfg.get("neg")``
        present = frozenset().union(*map(contained_keys, codes))   # ``"neg" in cfg``
        return found + items(value, where, text, keys, subclasses=True, uses=uses,
                             missing=missing, present=present)
    if isinstance(getattr(value, "__dict__", None), dict) and not isinstance(
            value, (type, types.ModuleType, types.FunctionType)):
        return reads([(value, where, text)], codes)
    return []


def self_names(cls: type, codes) -> set:
    """The first names of the paths the methods of ``cls`` that the trace ran read below
    ``self``."""
    return {path[0][1] for path in _self_paths(cls, codes) if path[0][0] == "attr"}


def _self_paths(cls: type, codes) -> set:
    methods = _codes_of(cls)
    return set().union(*(self_reads(code)[0] for code in codes if code in methods))


def _codes_of(cls: type) -> set:
    """The code of the functions, static and class methods and property getters a class
    defines or inherits, and of the functions they wrap (a compiled method, a decorator's
    ``functools.wraps``)."""
    found = set()
    for klass in cls.__mro__[:-1]:
        for value in vars(klass).values():
            value = value.fget if isinstance(value, property) else \
                getattr(value, "__func__", value)
            for _ in range(_WRAPS):
                if isinstance(value, types.FunctionType):
                    found.add(value.__code__)
                attrs = getattr(value, "__dict__", None)
                value = attrs.get("__wrapped__") if type(attrs) is dict else None
    return found


def _along(obj, path: tuple, where, text: str, optional: frozenset = frozenset(),
           serve: bool = True, uses: frozenset = frozenset()) -> list:
    """The read at the first place along ``path`` from ``obj`` that holds a plain or named
    value (and past a class, at what the path reads in it), or none where it leads nowhere
    such (an array, a property, a library's object). A last attribute or item that is not
    there, under a name or key in ``optional`` (``getattr(self, "k", 1.0)``,
    ``self.cfg.get("b", 2.0)``: ``(kind, key)`` pairs), is read as missing. ``serve``: a
    path the class's own code reads below ``self``, which its ``__getattr__`` may answer (not
    a name any code loads: ``__getattr__`` may store what it is asked for). A list, set or
    dict of plain values where the code uses it whole (``uses``: ``for d in self.dims``) is
    read as its ``pystate.Contents``."""
    steps, found = [], []
    for j, (kind, key) in enumerate(path):
        if kind == "contains":   # ``"bias" in self.params``: whether it is there
            step, value, cls = _step(obj, "item", key, serve)
            value = value if value is pystate.ABSENT else pystate.PRESENT
            missing = step is not None
        else:
            step, value, cls = _step(obj, kind, key, serve)
            missing = j == len(path) - 1 and (kind, key) in optional
        if step is None and missing and kind == "attr":
            step, value = missing_step(obj, key, serve), pystate.ABSENT
        if step is None:
            break
        steps.append(step)
        if kind != "contains" and (j == len(path) - 1 or path[j + 1][0] == "attr"):
            value = whole_uses.held(uses, "item" if kind == "item" else "attr", key, value)
        if pystate.read_again(value) or (value is pystate.ABSENT and missing) or \
                value is pystate.PRESENT:
            label = text + "".join(f".{k}" if s != "item" else f"[{k!r}]" for s, k in steps)
            found.append((where[0], value, label, (*where[1], *steps), cls))
            if not isinstance(value, type):   # a class: its attributes below it too
                break
        if value is pystate.ABSENT or value is pystate.PRESENT or pystate.is_plain(value) \
                or cls is not None:
            break
        obj = value
    return found


def missing_step(obj, name: str, serve: bool = True):
    """The step that reads ``name`` as missing on a user object that has no attribute of
    that name, nor its class: ``("attr", name)`` where the class has no ``__getattr__``,
    ``("getattr", name)`` where its ``__getattr__`` raises for it (``serve``: a name its own
    methods read below ``self``, a torch-like module's ``running_mean`` not registered yet);
    None otherwise."""
    attrs, cls = getattr(obj, "__dict__", None), type(obj)
    if type(attrs) is not dict or name in attrs or isinstance(obj, type) or \
            not users_class(cls) or in_class(cls, name) is not pystate.ABSENT:
        return None
    answers = in_class(cls, "__getattr__")
    if answers is pystate.ABSENT:
        return "attr", name
    if serve and type(answers) is types.FunctionType and \
            pystate.served(obj, name) is pystate.ABSENT:
        return "getattr", name
    return None


def _step(obj, kind: str, key, serve: bool = True) -> tuple:
    """(the ``pystate.walk`` step, the value there, the class a method step reads) for
    ``obj.key`` or ``obj[key]``; (None, None, None) where it reads elsewhere."""
    if type(obj) in pystate.PROXIES:   # a weak proxy reads its object's, which may be gone
        return None, None, None
    if kind == "item":
        if pystate.keyed(obj) or (isinstance(obj, tuple) and type(key) is int):
            return ("item", key), pystate.get_path(obj, (key,)), None
        return None, None, None
    if isinstance(obj, tuple):   # a named tuple's field (``self.p.k``)
        if key not in getattr(type(obj), "_fields", ()):
            return None, None, None
        return ("attr", key), getattr(obj, key), None
    if isinstance(obj, type):   # ``self.cfg = Cfg``, then ``self.cfg.eps``
        value = class_value(obj, key)
        return (None, None, None) if value is pystate.ABSENT else (("attr", key), value, None)
    attrs = getattr(obj, "__dict__", None)
    if type(attrs) is dict and key in attrs:
        return ("attr", key), attrs[key], None
    held = in_class(type(obj), key)
    if isinstance(held, _METHODS) or pystate.compiled_kind(held) == "compiled":
        # the function a call runs: ``self.act(x)``, ``layer(x)``, a compiled method
        return ("method", key), pystate.method_of(obj, key), type(obj)
    if held is not pystate.ABSENT and not hasattr(type(held), "__get__"):
        return ("attr", key), held, None   # a class attribute: ``self.K``, ``self.cfg[...]``
    if type(held) is types.MemberDescriptorType and key in slot_names(type(obj)):
        value = pystate.get_attribute(obj, key)   # a slot: ``@dataclass(slots=True)``
        return (None, None, None) if value is pystate.ABSENT else (("attr", key), value, None)
    if held is pystate.ABSENT and serve:
        value = served(obj, key)
        if value is not pystate.ABSENT:
            return ("getattr", key), value, None
    return None, None, None


def served(obj, name: str):
    """What the ``__getattr__`` of a user class answers for ``name`` where it answers the same
    twice (a delegated method is made anew on each lookup: it would fail every replay);
    ABSENT where the class has none, or that raises."""
    cls = type(obj)
    if type(in_class(cls, "__getattr__")) is not types.FunctionType or not users_class(cls):
        return pystate.ABSENT
    value = pystate.served(obj, name)
    if value is pystate.ABSENT or not (value is pystate.served(obj, name) or (
            pystate.is_plain(value) and pystate.same(value, pystate.served(obj, name)))):
        return pystate.ABSENT
    return value
