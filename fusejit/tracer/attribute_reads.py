"""Plain attributes of argument objects and of ``self``: ``if self.bias is not None:``,
``x * self.scale``.

The body's branch on such an attribute, or the number it read there, is Python the replay
does not run: bound to an array later (a bias added after the model was compiled) or to
another number (``layer.scale = 3.0``), a replay would still answer for what was traced. So
each attribute of an argument object or of ``self`` that held None or another plain value
(``pystate.is_plain``: a number, bool, string, enum member, NumPy scalar or a short tuple of
them) while tracing, under a name the code of the body or of those objects' classes reads, is
read again before each replay of that path; one that holds anything else fails the path, and
the call takes another path or traces one of its own. The reverse (an array bound to None)
fails the captured array's read (``Capture.resolve``). An attribute the body changes itself
(``self.t += 1``) is ``pystate``'s watch, not a read.

So is an attribute that held a function, ufunc, class, dtype, slice or range
(``pystate.is_named``: ``self.act = np.tanh``, held by identity), each plain or named item of
a list or dict attribute under a key the code subscripts by a constant (``self.sizes[0]``,
``self.cfg["eps"]``, three levels down), and what the object's class holds under a name the
code reads: a method (the function the call would run, which a class patched later, ``Net.act
= ...``, or an attribute set on the object shadowing it, ``net.act = np.sin``, changes), a
static or class method, a plain class attribute. Attributes come first, the class's last, up
to ``plain_reads.MAX_READS`` in all. Lists, dicts and deques are read by key (an
``OrderedDict``, a ``defaultdict`` too), a tuple holding arrays by its numbers' fields or
indices (``self.p.k``). An object the snapshots reached by a second place (``layers =
[shared, shared]``, ``block.parent = model``) had its numbers read through the first: the
second is checked to hold what the first holds (``AliasRead``). A list, set or dict of plain
values that the code uses whole (``for d in self.dims``, ``name in self.skip``) is read as
its ``pystate.Contents`` (``whole_uses``), a class's own list too (``self.DIMS``).
"""
from __future__ import annotations

import types
from dataclasses import dataclass

from . import object_reads, plain_reads, pystate, whole_uses
from .captures import bound_parts, names_of
from .code_reads import (
    constant_keys,
    contained_keys,
    get_keys,
    getattr_names,
    in_class,
    items_as_attributes,
)
from .loc import classify
from .object_reads import class_reads, keyed_items, served
from .side_effects import STATIC


@dataclass(frozen=True, eq=False)
class AttributeRead:
    """``steps`` below argument ``leaf`` (-1: the compiled method's object) held ``value``;
    ``cls``: for a last ``("method", name)`` step, the class of the object it was read from
    (the fast entry reads ``cls.name`` while the object is still of that class and does not
    shadow it)."""

    leaf: int
    steps: tuple
    label: str
    value: object = None
    cls: type | None = None

    def now(self, leaves, owner):
        return _reach(leaves, owner, self.leaf, self.steps)

    def holds(self, leaves, owner) -> bool:
        now = self.now(leaves, owner)
        return now is self.value or pystate.same(self.value, now)

    def failure(self, leaves, owner) -> str:
        if self.value is None:
            return f"{self.label} no longer holds None"
        return pystate.read_moved_text(self.label, self.value, self.now(leaves, owner))


@dataclass(frozen=True, eq=False)
class AliasRead:
    """``steps`` below argument ``leaf`` (-1: the compiled method's object) reached the object
    that the place ``first`` = (leaf, steps) reached while tracing (``layers = [shared,
    shared]``, a back reference ``block.parent = model``), whose numbers were read through
    ``first`` alone: both places still reach one object (``value`` shows the first)."""

    leaf: int
    steps: tuple
    label: str
    first: tuple
    value: pystate.AliasOf

    def holds(self, leaves, owner) -> bool:
        now = _reach(leaves, owner, self.leaf, self.steps)
        return now is not pystate.ABSENT and now is _reach(leaves, owner, *self.first)

    def failure(self, leaves, owner) -> str:
        return self.value.moved(self.label)


def _reach(leaves, owner, leaf: int, steps: tuple):
    return pystate.walk(owner if leaf < 0 else leaves[leaf], steps)


def find(fn, snaps, entered=None, handed=None) -> tuple[AttributeRead, ...]:
    """The attributes of the snapshot objects that held the same plain value before and after
    the body, under a name its code (or their classes' methods) reads. ``entered``: the code
    objects the body's frames ran; a value other than None is read again only under a name
    that code reads (a counter another method of the class advances is no concern of the
    body's unless it reads it), or, where that is not known, any of the classes' methods. An
    item of a list or dict attribute is read again only under a key that code subscripts by
    a constant (``self.cfg["eps"]``, not ``self.state["steps"]`` the caller counts in)."""
    every = _codes(fn, snaps)
    codes = every if entered is None else \
        [code for code in entered if classify(code.co_filename) == "user"]
    names, read = names_of(every), names_of(codes)
    keys = frozenset().union(*map(constant_keys, codes))
    optional = frozenset().union(*map(getattr_names, codes))   # ``getattr(m, "k", 1.0)``
    missing = frozenset().union(*map(get_keys, codes))   # ``m.cfg.get("wd", 0.0)``
    present = frozenset().union(*map(contained_keys, codes))   # ``"b" in m.cfg``
    uses = whole_uses.of(codes, handed)   # ``for d in m.dims``, ``total(m.cfg)``
    found, late = [], []
    for snap in snaps:
        if snap.leaf in (-1, STATIC):
            continue
        leaf = -1 if snap.leaf is None else snap.leaf
        for name, value in snap.attrs.items():
            if name not in (names if value is None else read):
                continue
            held = whole_uses.held(uses, "attr", name, value)
            if pystate.read_again(held):
                found += _held(snap, leaf, (("attr", name),), held)
            if pystate.keyed(value) and (held is value or held.keys_only):   # by key too
                found += _item_reads(snap, leaf, name, keys, missing, present, uses)
            found += _below(snap, leaf, name, value, read, keys)
            found += _tuple_items(snap, leaf, name, value, read, keys, uses)
            found += _bound_object(snap, leaf, name, value, codes)
        late += _class_reads(snap, leaf, read, keys, codes, optional, uses)
        found += _aliases(snap, leaf)
        if items_as_attributes(snap.obj):   # ``cfg.lr`` of an ``AttrDict``
            found += [AttributeRead(leaf, (*snap.steps, ("item", name)),
                                    f"{snap.label}.{name}", value)
                      for name, value in dict.items(snap.obj)
                      if name in read and pystate.read_again(value)]
    return plain_reads.first(found + late, "attributes of the arguments and self")


def _aliases(snap, leaf: int) -> list:
    """The reads of the other places that reached the snapshot's object (``layers = [shared,
    shared]``, a back reference ``block.parent = model``): the numbers read through the first
    are those of the others only while they hold one object."""
    return [AliasRead(-1 if other is None else other, steps, label, (leaf, snap.steps),
                      pystate.AliasOf(snap.label))
            for other, steps, label in snap.aliases or () if other not in (-1, STATIC)]


def _below(snap, leaf: int, name: str, value, read: set, keys: frozenset) -> list:
    """What a class bound to an attribute holds under the names the code reads (``self.cfg =
    Cfg``, then ``self.cfg.eps``), and the items of a list or dict a class holds under
    constant keys (``cfg = {...}`` in the class body, then ``self.cfg["k"]``)."""
    steps, label = (*snap.steps, ("attr", name)), f"{snap.label}.{name}"
    if isinstance(value, type):
        return [AttributeRead(leaf, (*steps, *path), text, held)
                for _, held, text, path in class_reads(value, label, read)]
    if type(value) not in (list, dict) or name in snap.attrs:
        return []
    return [AttributeRead(leaf, (*steps, *pystate.steps_of(name, path)[1:]),
                          f"{label}{pystate.path_text(path)}", item)
            for path, item in keyed_items(value, keys)]


def _tuple_items(snap, leaf: int, name: str, value, read: set, keys: frozenset,
                 uses: frozenset = frozenset()) -> list:
    """The plain and named items of a tuple that holds arrays too, under the field names
    (``self.p.k`` of a named tuple, rebound by ``p._replace(k=7.0)``) or constant indices
    (``self.p[1]``) the code reads; a list or dict of them there that it uses whole (``for
    d in self.t[0]``)."""
    if not isinstance(value, tuple) or pystate.read_again(value):
        return []
    fields = getattr(type(value), "_fields", ())
    steps, found = (*snap.steps, ("attr", name)), []
    for k, item in enumerate(value):
        field = fields[k] if k < len(fields) else None
        item = whole_uses.read_of(uses, "item", k, item) or item
        if not pystate.read_again(item):
            continue
        if field is not None and field in read:
            found.append(AttributeRead(leaf, (*steps, ("attr", field)),
                                       f"{snap.label}.{name}.{field}", item))
        elif k in keys or k - len(value) in keys:
            found.append(AttributeRead(leaf, (*steps, ("item", k)),
                                       f"{snap.label}.{name}[{k}]", item))
    return found


def _bound_object(snap, leaf: int, name: str, value, codes) -> list:
    """What the code reads below the object of a bound method held by the attribute
    (``self.act = other.g``, then ``self.act(x)`` reading ``other.k``)."""
    if type(value) is not types.MethodType and pystate.compiled_kind(value) != "bound":
        return []
    owner = value.__self__
    if isinstance(owner, type) or type(getattr(owner, "__dict__", None)) is not dict:
        return []
    where = (None, (*snap.steps, ("attr", name), ("attr", "__self__")))
    return [AttributeRead(leaf, path, label, held, cls) for _, held, label, path, cls
            in object_reads.reads([(owner, where, f"{snap.label}.{name}.__self__")], codes)]


def _held(snap, leaf: int, steps: tuple, value) -> list:
    """The read of ``value`` at ``steps`` below the snapshot's object, if it still holds it."""
    if not pystate.same(value, pystate.walk(snap.obj, steps)):
        return []   # the body changed it: ``pystate``'s watch
    label = f"{snap.label}.{steps[0][1]}{pystate.path_text(tuple(k for _, k in steps[1:]))}"
    return [AttributeRead(leaf, (*snap.steps, *steps), label, value)]


def _item_reads(snap, leaf: int, name: str, keys: frozenset, missing: frozenset,
                present: frozenset = frozenset(), uses: frozenset = frozenset()) -> list:
    """The reads of the items of the list or dict attribute ``name`` under ``keys``: plain
    ones as they were before the body (one it changed is ``pystate``'s), named ones; and
    those of a dict under ``missing`` keys it lacks (``self.cfg.get("wd", 0.0)``, ``"b" in
    self.cfg``; a subscript too where its class answers a missing key: ``__missing__``), and
    under ``present`` keys it holds, whatever there (``"b" in self.cfg``); a list, set or
    dict of plain values under a key the code uses whole (``len(self.cfg["sizes"])``)."""
    before, found, held = (snap.plain or {}).get(name, {}), [], snap.attrs[name]
    for path, item in keyed_items(held, keys, subclasses=True, uses=uses):
        known = _counted_from_the_start(held, path)   # ``self.w[-1]``: as ``before`` has it
        if known in before or not pystate.is_plain(item):
            found += _held(snap, leaf, pystate.steps_of(name, path), before.get(known, item))
    if isinstance(held, dict):
        if hasattr(type(held), "__missing__"):   # a subscript answers a key it lacks too
            missing = missing | keys
        found += [AttributeRead(leaf, (*snap.steps, *pystate.steps_of(name, (key,))),
                                f"{snap.label}.{name}[{key!r}]", pystate.ABSENT)
                  for key in sorted(missing - held.keys(), key=repr)]
        found += [AttributeRead(leaf, (*snap.steps, *pystate.steps_of(name, (key,))),
                                f"{snap.label}.{name}[{key!r}]", pystate.PRESENT)
                  for key in sorted((present & held.keys()) - keys, key=repr)]
    return found


def _counted_from_the_start(held, path: tuple) -> tuple:
    key = path[0]
    if isinstance(held, dict) or type(key) is not int or key >= 0:
        return path
    return (key + len(held), *path[1:])


def _class_reads(snap, leaf: int, read: set, keys: frozenset, codes,
                 optional: frozenset = frozenset(), uses: frozenset = frozenset()) -> list:
    """What the object's class holds under the names ``read`` that its own attributes do not
    shadow: a method (the function a call runs: ``self.act(x)``), a static or class method,
    a plain or named class attribute (``self.scale`` set on the class); and the ``__call__``
    a call of the object runs (``x = layer(x)``: a layer swapped for one of another class)."""
    cls, obj = type(snap.obj), snap.obj
    if type.__getattribute__(cls, "__getattribute__") is not object.__getattribute__:
        return []   # its own attribute lookup
    found, own = [], object_reads.self_names(cls, codes)   # what ``self.`` code reads
    called = type(in_class(cls, "__call__")) is types.FunctionType
    for name in sorted(read | ({"__call__"} if called else set())):
        if name in snap.attrs or (name.startswith("__") and name != "__call__"):
            continue
        held = in_class(cls, name)
        if held is pystate.ABSENT:   # what ``__getattr__`` answers, or nothing
            value = served(obj, name) if name in own else pystate.ABSENT
            if pystate.read_again(value):
                found.append(AttributeRead(leaf, (*snap.steps, ("getattr", name)),
                                           f"{snap.label}.{name}", value))
            elif name in optional:   # ``getattr(m, "k", 1.0)`` found nothing there
                step = object_reads.missing_step(obj, name, name in own)
                if step is not None:
                    found.append(AttributeRead(leaf, (*snap.steps, step),
                                               f"{snap.label}.{name}", pystate.ABSENT))
            continue
        if type(held) in (list, dict) or isinstance(held, type):
            found += _below(snap, leaf, name, held, read, keys)
        whole = whole_uses.read_of(uses, "attr", name, held)
        if whole is not None:   # ``for d in self.DIMS`` of a list the class holds
            found.append(AttributeRead(leaf, (*snap.steps, ("attr", name)),
                                       f"{snap.label}.{name}", whole))
        if not (isinstance(held, (types.FunctionType, staticmethod, classmethod)) or
                pystate.compiled_kind(held) == "compiled" or
                (pystate.read_again(held) and not hasattr(type(held), "__get__"))):
            continue   # none, a property, a descriptor: it reads elsewhere
        value = pystate.method_of(obj, name)
        if pystate.read_again(value):
            found.append(AttributeRead(leaf, (*snap.steps, ("method", name)),
                                       f"{snap.label}.{name}", value, cls))
    return found


def _codes(fn, snaps) -> list:
    """The body's code and the methods of the snapshot objects' classes (``self.project(x)``
    reading ``self.bias``)."""
    codes = []
    _, func = bound_parts(getattr(fn, "func", fn))
    if isinstance(func, types.FunctionType):
        codes.append(func.__code__)
    for cls in {type(snap.obj) for snap in snaps if snap.leaf != -1}:
        for klass in cls.__mro__[:-1]:
            for value in vars(klass).values():
                value = getattr(value, "__func__", value)   # staticmethod, classmethod
                if isinstance(value, types.FunctionType):
                    codes.append(value.__code__)
    return codes
