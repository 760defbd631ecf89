"""Python side effects that a replay would lose, found by comparing argument objects.

Before recording, each argument object (a non-pytree leaf with a ``__dict__`` or
``__slots__``, and ``fn.__self__`` for a bound method), the user objects it holds down to
``OBJECT_DEPTH`` steps (``self.layers[0]``, ``net.inner``), and the classes of the argument
objects have their attributes copied shallowly; every list or dict held by such an attribute
has its items noted too. After recording:

- an attribute of an object's ``__dict__`` rebound to a pytree whose leaves are all traced
  arrays becomes an ``AttrWrite``: the runtime finds the object again by its path and sets the
  attribute after each replay (``self.w = self.w - lr * g``, ``for l in net.layers: l.w =
  l.w - g``);
- items of a list or dict attribute replaced by traced arrays, its keys as they were, become
  an ``AttrWrite`` with ``keys``: the runtime stores the new arrays into that container
  (``self.m[k] = b1 * self.m[k] + g``);
- any other change holding traced values or arrays makes the trace an eager fallback, since
  replay would lose it: an attribute rebound to a traced Python float, to a mix of traced and
  untraced leaves, or to an array that an object held before or the body read (``b.cur,
  b.prev = b.prev, b.cur``); a traced value added to a list or dict attribute
  (``self.history.append(loss)``), a slot, or a class attribute; an attribute set through
  its class's own code (a custom ``__setattr__``, a property setter), which a replay would
  not run; a deleted attribute.

Either way the objects are left holding concrete values, never proxies. Plain Python values
the body changes (``self.steps += 1``, ``if self.buf is None: self.buf = np.zeros(n)``, in
list and dict attributes too) are ``pystate``'s: the next call traces again.
"""
from __future__ import annotations

import functools
import inspect
import operator
import sys
import types
from dataclasses import dataclass

import numpy as np

from . import pystate, whole_uses
from .captures import (
    MAX_ITEMS,
    OBJECT_DEPTH,
    method_owner,
    slot_items,
    slot_names,
    walked,
)
from .context import unwrap
from .loc import classify
from .pytree import TreeDef, flatten, is_traced_leaf
from .random_draws import is_generator

_OPAQUE = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)
_ATOMS = (tuple, str, bytes, int, float, complex, bool, type(None), np.ndarray)
STATIC = "static"   # ``Snapshot.leaf`` of an object bound by a partial (static_argnames)
_MAX_OBJECTS = 256   # objects snapshotted per trace (a model's layers, not a whole library)
_WATCH_DEPTH = 2 * OBJECT_DEPTH   # steps below a root whose objects are snapshotted


@dataclass(frozen=True)
class AttrWrite:
    leaf: int | None          # argument leaf index of the root object; None: ``fn.__self__``
    name: str
    treedef: TreeDef
    # each leaf of the new value: its graph output index, or ("arg", leaf index) /
    # ("capture", capture index) for an argument or captured array stored as it is
    # (``self.cache = (x, h)``: eagerly the attribute holds ``x`` itself)
    outputs: tuple = ()
    scalars: tuple[bool, ...] = ()  # leaf k was a NumPy scalar (runtime: ``v[()]``)
    steps: tuple = ()         # ("attr", name) / ("item", key) from the root to the object
    old_tree: TreeDef | None = None  # a container it held before: replays check it still does
    keys: tuple = ()          # items stored into the list or dict it holds, not a rebinding


@dataclass
class Snapshot:
    leaf: int | None
    steps: tuple
    obj: object
    attrs: dict
    lists: dict               # attribute name -> the items of the list or dict it held
    label: str
    plain: dict = None        # attribute name -> its list's or dict's plain values (pystate)
    root: str | None = None   # the argument's name (pystate.Watch.root)
    aliases: list = None      # (leaf, steps, label) of the other paths that reach ``obj``
    copies: dict = None       # attribute name -> (keys, items) of a list or dict holding none
    contents: dict = None     # attribute name -> pystate.Contents of a list, set or dict of
    #                           plain values (``whole_uses``)


def watchable(obj) -> bool:
    return (not is_traced_leaf(obj) and not isinstance(obj, _OPAQUE)
            and isinstance(getattr(obj, "__dict__", None), dict))


def snapshot(leaves, fn=None, names=()) -> list[Snapshot]:
    """``names``: the parameter name of each leaf (``self``, ``model``), for messages."""
    labels = [names[i] if i < len(names) else f"argument {i}" for i in range(len(leaves))]
    roots = [(i, leaf, labels[i], ()) for i, leaf in enumerate(leaves) if _object(leaf)]
    roots += [(i, obj, labels[i] + text, steps) for i, leaf in enumerate(leaves)
              for steps, obj, text in bound_objects(leaf)]   # ``body(x, ema.update)``
    owner = method_owner(fn)
    if owner is not None and _object(owner):
        roots.append((None, owner, "self", ()))   # its watches' root: pystate.OWNER
    if isinstance(fn, functools.partial):   # static_argnames objects, partial-bound ones
        roots += [(STATIC, value, name, ()) for name, value in fn.keywords.items()
                  if _object(value)]
        roots += [(STATIC, value, f"partial argument {i}", ())
                  for i, value in enumerate(fn.args) if _object(value)]
    snaps: list[Snapshot] = []
    seen: dict[int, Snapshot] = {}
    for index, obj, label, steps in roots:
        first = len(snaps)
        _walk(obj, index, steps, label, _WATCH_DEPTH, snaps, seen)
        for snap in snaps[first:]:
            snap.root = pystate.OWNER if index is None else label
    classes = {id(type(s.obj)): type(s.obj) for s in snaps if _user_object(s.obj)}
    for cls in classes.values():
        attrs = dict(vars(cls))
        snaps.append(Snapshot(-1, (), cls, attrs, _lists(attrs), f"class {cls.__name__}",
                              _plain_items(attrs)))
    return snaps


def bound_objects(value) -> list:
    """(steps, object, label) of the objects a callable argument carries: a bound method's
    ``__self__``, a partial's arguments (a method it binds too); a replay reads and writes
    them through the argument, as it does an argument object's."""
    if type(value) is types.MethodType:
        return [((("attr", "__self__"),), value.__self__, ".__self__")] \
            if _object(value.__self__) else []
    if type(value) is not functools.partial:
        return []
    found = [((("attr", "func"), *steps), obj, ".func" + text)
             for steps, obj, text in bound_objects(value.func)]
    found += [((("attr", "args"), ("item", i)), arg, f".args[{i}]")
              for i, arg in enumerate(value.args) if _object(arg)]
    return found + [((("attr", "keywords"), ("item", k)), arg, f".keywords[{k!r}]")
                    for k, arg in value.keywords.items() if _object(arg)]


def _walk(obj, leaf, steps, label, depth, snaps, seen) -> None:
    """Snapshot ``obj`` and the user objects it holds (directly or in list, tuple and dict
    attributes, nested too: ``self.stages["enc"][0]``), ``depth`` steps down; another path to
    one snapshotted is noted as its alias."""
    first = seen.get(id(obj))
    if first is not None:
        first.aliases = first.aliases or []
        first.aliases.append((leaf, steps, label))
        return
    if len(snaps) >= _MAX_OBJECTS or not walked(obj, len(steps)):
        return
    attrs = _attributes(obj)
    snaps.append(Snapshot(leaf, steps, obj, attrs, _lists(attrs), label, _plain_items(attrs),
                          copies=_copies(attrs), contents=whole_uses.contents_of(attrs.items())))
    seen[id(obj)] = snaps[-1]
    for name, value in attrs.items():
        for here, text, item in _held_objects(value, (*steps, ("attr", name)),
                                              f"{label}.{name}", depth):
            _walk(item, leaf, here, text, depth - (len(here) - len(steps)), snaps, seen)


def _held_objects(value, steps: tuple, label: str, depth: int, nested: bool = True):
    """(steps, label, object) of ``value`` if it is a user object, else of those in it if it
    is a list, tuple or dict, each step down costing one of ``depth``; in the lists, tuples
    and dicts inside one of more than ``MAX_ITEMS`` items (data), none."""
    if depth <= 1:
        return
    if type(value) in (types.MethodType, functools.partial):   # ``self.cb = ema.update``
        for more, obj, text in bound_objects(value):
            if _user_object(obj):
                yield (*steps, *more), label + text, obj
    elif _object(value) and _user_object(value):
        yield steps, label, value
    elif nested and type(value) in (list, tuple, dict):
        items = list(value.items() if type(value) is dict else enumerate(value))
        for key, item in items:
            yield from _held_objects(item, (*steps, ("item", key)), f"{label}[{key!r}]",
                                     depth - 1, len(items) <= MAX_ITEMS)


def _object(value) -> bool:
    if type(value) in _ATOMS:   # the items of a tokenizer's merges: quickly
        return False
    from .scalars import TracedFloat
    from .tracer import Tracer
    if isinstance(value, (Tracer, TracedFloat)):
        return False
    return watchable(value) or (not is_traced_leaf(value) and not isinstance(value, _OPAQUE)
                                and bool(slot_names(type(value))))


def _user_object(obj) -> bool:
    module = sys.modules.get(type(obj).__module__)
    return classify(getattr(module, "__file__", None) or "<unknown>") == "user"


def _attributes(obj) -> dict:
    """The object's ``__dict__`` and the slots that hold a value, but a cache that Python's
    library fills (``pystate.library_cache``: a logger's level cache)."""
    attrs = dict(vars(obj)) if isinstance(obj, type) or watchable(obj) else {}
    if not isinstance(obj, type):
        attrs.update(slot_items(obj))
    if pystate.has_library_cache(obj):
        return {k: v for k, v in attrs.items() if not pystate.library_cache(obj, k)}
    return attrs


def _lists(attrs: dict) -> dict:
    """The items of each list, dict or deque attribute (``pystate.keyed``: ``OrderedDict``)."""
    return {k: _items(v) for k, v in attrs.items() if pystate.keyed(v)}


def _copies(attrs: dict) -> dict:
    """(keys, items) of each list, dict or deque attribute that holds no list, dict or deque
    (a tokenizer's merges): where the same items are there after the body, it changed
    nothing there (``_untouched``), found without comparing them one by one in Python."""
    found = {}
    for name, value in attrs.items():
        if pystate.keyed(value):
            items = _values(value)
            if not any(map(pystate.keyed, items)):
                found[name] = (list(value) if isinstance(value, dict) else None, items)
    return found


def _whole_changed(recorder, snap, name: str, container) -> bool:
    """A list, set or dict of plain values the body changed that its code uses whole
    (``whole_uses.changed``): state."""
    before = (snap.contents or {}).get(name)
    if before is None or whole_uses.changed({name: before}, {name: container},
                                           recorder.entered) is None:
        return False
    recorder.state_changed(whole_uses.watch_of(_watch(snap, name)), before, container)
    return True


def _untouched(snap, name: str, container) -> bool:
    keys, items = (snap.copies or {}).get(name, (None, None))
    if items is None:
        return False
    now = _values(container)
    return len(now) == len(items) and all(map(operator.is_, now, items)) and \
        (keys is None or list(container) == keys)


def _plain_items(attrs: dict) -> dict:
    """The plain Python values (numbers, strings) in each list, dict or deque attribute (a
    subclass too: ``OrderedDict``)."""
    return {k: pystate.plain_values(v) for k, v in attrs.items() if pystate.keyed(v)}


def _check_plain_items(recorder, snap, name: str, container) -> None:
    """A plain value the body changed, added or removed in a list or dict attribute."""
    found = pystate.first_change(snap.plain[name], pystate.plain_values(container), container)
    if found is not None:
        path, old, new = found
        recorder.state_changed(_watch(snap, name, path), old, new)


def _check_removed(recorder, snap, name: str, container) -> None:
    """An item the body removed from a list or dict attribute, or from one inside it
    (``self.cache.pop(k)``): a replay would not remove it again, where eager code raises
    ``KeyError`` on the next call's pop. That call runs as traced and the next one traces
    again (``pystate``): a removal made once then compiles."""
    if recorder.fallback is not None:
        return
    now = {path for path, _ in _items(container)}
    gone = next((path for path, _ in snap.lists[name] if path not in now), None)
    if gone is not None:
        watch = _watch(snap, name, gone)
        recorder.watches.append(watch)
        recorder.set_fallback(f"Python state that replay would not update: {watch.label} "
                              "removed in the body", None, retry=True)


def _watch(snap, name: str, path: tuple = ()) -> pystate.Watch:
    """Where ``snap.obj.name`` (then its items ``path``) is read again before a replay."""
    label = f"{snap.label}.{name}{pystate.path_text(path)}"
    steps = pystate.steps_of(name, path)
    if snap.leaf == -1:   # a class: the function's own state
        return pystate.in_source(label, ("object", snap.obj), steps)
    if snap.leaf == STATIC:   # the cache key compares it by value: another object may come
        return pystate.unwatched(label)
    return pystate.in_argument(label, snap.root, (*snap.steps, *steps))


def traced(value, kinds=(np.ndarray, np.generic)) -> bool:
    """Whether ``value`` is a proxy of a value of one of ``kinds`` that the body computed."""
    from .tracer import Tracer
    return isinstance(value, Tracer) and isinstance(value.value, kinds)


def has_traced(value) -> bool:
    from .scalars import TracedFloat
    from .tracer import Tracer
    leaves, _ = flatten(value)
    return any(isinstance(x, (Tracer, TracedFloat)) for x in leaves)


def detect(recorder, snaps) -> list[AttrWrite]:
    """AttrWrites for replayable rebindings, whose ``outputs`` still hold the proxies (the
    caller turns them into graph output indices); sets the recorder's fallback for the rest."""
    writes = []
    known, held = _known_arrays(recorder, snaps), functools.cache(lambda: _held_before(snaps))
    for snap in snaps:
        current = _attributes(snap.obj)
        if any(name not in current for name in snap.attrs) and snap.leaf != -1:
            _lose(recorder, f"an attribute of {snap.label} deleted")
        for name, value in current.items():
            write = _check_attr(recorder, snap, name, value, known, held)
            if write is not None:
                writes.append(write)
    return writes


def _known_arrays(recorder, snaps) -> set[int]:
    """ids of the arrays the objects held before the body ran, and of those it read."""
    known = set(recorder.raw)
    for snap in snaps:
        for value in snap.attrs.values():
            items = value.values() if isinstance(value, dict) else \
                value if pystate.keyed(value) or type(value) is tuple else (value,)
            known.update(id(x) for x in items if type(x) is np.ndarray)
    return known


def _held_before(snaps) -> set[int]:
    """ids of the objects the snapshots held before the body (themselves, their attributes,
    the items of their lists and dicts), but plain values and arrays."""
    held = {id(snap.obj) for snap in snaps}
    for snap in snaps:
        for value in snap.attrs.values():
            items = (value, *_values(value)) if pystate.keyed(value) else (value,)
            held.update(id(x) for x in items
                        if type(x) is not np.ndarray and not pystate.is_plain(x))
    return held


def _check_attr(recorder, snap, name, value, known=frozenset(), held=frozenset):
    label = f"{snap.label}.{name}"
    old = snap.attrs.get(name, _MISSING)
    if old is value:
        if name in snap.lists and _untouched(snap, name, value):
            return None
        if name in snap.lists and _traced_in_other_kinds(value):   # a deque, ``OrderedDict``
            _unwrap_in_place(value)
            _lose(recorder, f"traced values stored into {label} (a deque or a dict subclass)")
            return None
        if name in snap.lists and _items(value) != snap.lists[name] and has_traced(value):
            write = _item_write(recorder, snap, name, value)
            _check_plain_items(recorder, snap, name, value)
            _unwrap_in_place(value)
            return write
        if _whole_changed(recorder, snap, name, value):
            return None
        if name in snap.lists:
            _check_plain_items(recorder, snap, name, value)
            _check_removed(recorder, snap, name, value)
        return None
    leaves, treedef = flatten(value)
    if _release_objects(recorder, [x for x in leaves if _object(x)], f"{label}", OBJECT_DEPTH):
        return None
    before = pystate.ABSENT if old is _MISSING else old
    if not has_traced(value) and not any(id(x) in known for x in leaves):
        # ``self.t += 1``; a buffer made once: ``if self.buf is None: self.buf = np.zeros(n)``
        if pystate.changed(before, value) or pystate.buffer_changed(before, value) or \
                rebound(before, value, held):
            recorder.state_changed(_watch(snap, name), before, value)
        return None
    _store(snap.obj, name, unwrap(value, recorder.originals))
    if snap.leaf != -1 and (before is pystate.ABSENT or pystate.is_plain(before)):
        # ``if self.buf is None: self.buf = np.zeros(n)``, then ``self.buf += x``: the branch
        # is taken once, a replay of this path would take it on every call
        recorder.state_changed(_watch(snap, name), before, unwrap(value))
        return None
    why = _unreplayable(snap, name, leaves)
    if why:
        _lose(recorder, f"{label} {why}")
    if recorder.fallback is not None:
        return None
    scalars = tuple(isinstance(x.value, np.generic) for x in leaves)
    old_tree = flatten(old)[1] if type(old) in (list, tuple, dict) else None
    return AttrWrite(snap.leaf, name, treedef, tuple(leaves), scalars, snap.steps, old_tree)


def _values(container) -> list:
    return list(container.values() if isinstance(container, dict) else container)


def _nested(container, depth: int = pystate.NESTED, seen=None) -> list:
    """The list, dict or deque (``pystate.keyed``) and those inside it, ``depth`` levels."""
    seen = set() if seen is None else seen
    seen.add(id(container))
    found = [container]
    for item in _values(container):
        if depth > 1 and pystate.keyed(item) and id(item) not in seen:
            found += _nested(item, depth - 1, seen)
    return found


def _traced_in_other_kinds(container) -> bool:
    """A traced value stored into a container of another kind than ``list`` and ``dict``
    (``self.bufs["a"].append(x)`` into a deque), which ``AttrWrite`` does not store again."""
    inside = _nested(container)
    return any(type(c) not in (list, dict) for c in inside) and any(
        has_traced(item) for c in inside for item in _values(c) if not pystate.keyed(item))


def rebound(before, value, held=frozenset) -> bool:
    """An attribute bound to an object (a function, a class) that the caller's objects held
    before the body (``self.cur, self.nxt = self.nxt, self.cur``), to one where it held none
    or a plain value (``if self.helper is None: self.helper = Helper()``), or from one to a
    plain value: a replay would not bind it again, so it is state, as a number the body
    changes. A fresh object bound over another (``self.info = Info(3)`` on every call) stays
    as the trace left it; arrays, numbers (above) and generators (``random_draws``) aside.
    ``held()``: the ids of the objects held before (``_held_before``)."""
    if type(value) is np.ndarray or type(before) is np.ndarray or is_generator(value) or \
            (pystate.is_plain(before) and pystate.is_plain(value)):
        return False
    if before is pystate.ABSENT or pystate.is_plain(before) or pystate.is_plain(value):
        return True
    return id(value) in held() and not pystate.same(before, value)


def _item_write(recorder, snap, name: str, container) -> AttrWrite | None:
    """``self.m[k] = b1 * self.m[k] + g``: the items of a list or dict attribute replaced by
    traced arrays, its keys as they were, become an ``AttrWrite`` whose ``keys`` the replay
    stores into the container (the same object, as eagerly); anything else is lost."""
    label = f"{snap.label}.{name}"
    before, now = dict(snap.lists[name]), _items(container)
    added = _added_once(snap, before, now, container)
    if added is not None:
        watch = _watch(snap, name, added)
        recorder.watches.append(watch)
        recorder.set_fallback(f"Python state that replay would not update: {watch.label} set "
                              f"to {pystate.shown(unwrap(container[added[0]]))} in the body "
                              "(a key added)", None, retry=True)
        return None
    changed = [path for path, item in now if before.get(path) != item]
    items = [container[path[0]] for path in changed if len(path) == 1]
    why = _unreplayable_items(snap, before, now, changed, items)
    if why:
        _lose(recorder, f"traced values stored into the {type(container).__name__} {label}"
                        f"{why}")
        return None
    scalars = tuple(isinstance(x.value, np.generic) for x in items)
    return AttrWrite(snap.leaf, name, None, tuple(items), scalars, snap.steps,
                     flatten(container)[1], keys=tuple(path[0] for path in changed))


def _added_once(snap, before: dict, now: list, container) -> tuple | None:
    """The first key the body added to a dict attribute, where all it added are keys holding
    arrays and none went (``if k not in self.m: self.m[k] = np.zeros_like(p)``): a change made
    once, as ``pystate``'s buffers, so that call runs as traced and the next one traces again
    and compiles; where keys are added on every call, the signature then runs eagerly."""
    if type(container) is not dict or _unreachable(snap):
        return None
    paths = [path for path, _ in now]
    new = [path for path in paths if path not in before]
    if not new or [path for path in paths if path in before] != list(before):
        return None
    arrays = all(len(path) == 1 and (type(container[path[0]]) is np.ndarray
                                     or traced(container[path[0]], np.ndarray))
                 for path in new)
    return new[0] if arrays else None


def _unreachable(snap) -> str:
    """Why a replay cannot find ``snap.obj`` to update it ("" when it can)."""
    if snap.leaf == -1:
        return "(a class attribute)"
    if snap.leaf == STATIC:
        return "(of a static argument)"
    if len(snap.steps) >= OBJECT_DEPTH:   # its arrays were read as plain ones (capture_proxies)
        return f"(more than {OBJECT_DEPTH} steps below the argument)"
    return ""


def _unreplayable_items(snap, before: dict, now: list, changed: list, items: list) -> str:
    """Why replay cannot store ``items`` into the container again ("" when it can)."""
    unreachable = _unreachable(snap)
    if unreachable:
        return f" {unreachable}"
    if [path for path, _ in now] != list(before):
        return " (items added or removed)"
    if len(items) != len(changed) or not all(map(traced, items)):
        return " (not traced arrays, or in a container inside it)"
    return ""


def _release_objects(recorder, objects, label: str, depth: int, seen=None) -> bool:
    """Whether objects the body bound to an attribute (``m.inner = Model()``) hold traced
    values, ``depth`` steps down (each object once): a replay cannot rebuild them, so the
    trace runs eagerly and they get concrete values."""
    found, seen = False, set() if seen is None else seen
    for obj in objects:
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        for name, value in _attributes(obj).items():
            leaves = flatten(value)[0]
            if has_traced(value):
                _store(obj, name, unwrap(value, recorder.originals))
                found = True
            elif depth > 1:
                found |= _release_objects(recorder, [x for x in leaves if _object(x)],
                                          label, depth - 1, seen)
    if found:
        _lose(recorder, f"{label} rebound to an object holding traced values")
    return found


def _unreplayable(snap, name, leaves) -> str:
    """Why replay cannot rebind ``snap.obj.name`` to these leaves ("" when it can)."""
    from .tracer import Tracer
    cls = type(snap.obj)
    unreachable = _unreachable(snap)
    if unreachable:
        return f"{unreachable} rebound to a traced value"
    if not all(isinstance(x, Tracer) for x in leaves):
        return "rebound to a value the replay cannot rebuild"
    if not watchable(snap.obj) or name not in vars(snap.obj):
        return "(a slot) rebound to a traced value"
    if not isinstance(cls.__setattr__, types.WrapperDescriptorType) or \
            hasattr(type(inspect.getattr_static(cls, name, None)), "__set__"):
        return f"set through {cls.__name__}'s own code (__setattr__ or a property)"
    return ""


def _store(obj, name: str, value) -> None:
    """Put a concrete value back, without running the class's own code again."""
    if isinstance(obj, type):
        type.__setattr__(obj, name, value)
    elif watchable(obj) and name in vars(obj):
        vars(obj)[name] = value
    else:
        object.__setattr__(obj, name, value)


_MISSING = object()


def _items(container, path=(), seen=None) -> list:
    """(path, id(item)) pairs, of the lists and dicts inside too (``o.layers[0]["w"] = ...``,
    as deep as ``pystate`` looks for plain values; each container once, so one that holds
    itself ends): a container changed when they differ."""
    seen = set() if seen is None else seen
    seen.add(id(container))
    pairs = container.items() if isinstance(container, dict) else enumerate(container)
    found = []
    for key, item in list(pairs):
        found.append((path + (key,), id(item)))
        deeper = len(path) + 1 < pystate.NESTED
        if type(item) in (list, dict) and id(item) not in seen and deeper:
            found += _items(item, path + (key,), seen)
    return found


def _unwrap_in_place(container, seen=None) -> None:
    """The concrete values in place of the proxies the body stored into ``container`` and the
    lists and dicts inside it: the caller's objects never keep a proxy."""
    seen = set() if seen is None else seen
    seen.add(id(container))
    for key, item in list(container.items() if isinstance(container, dict)
                          else enumerate(container)):
        if pystate.keyed(item):
            if id(item) not in seen:
                _unwrap_in_place(item, seen)
        else:
            container[key] = unwrap(item)


def _lose(recorder, what: str) -> None:
    recorder.set_fallback(f"side effect that replay would lose: {what}", loc=None)
