"""Captured arrays handed to the body as proxies while it is traced.

NumPy code on captured arrays alone (``R *= 0.9`` on a global, ``self.rm *= 1 - mom``,
``np.sum(W ** 2)``) never reaches the tracer when the body reads plain arrays: it would run
once, while tracing, and replays would lose it. So the body is called as a traced copy
(``overlay.py``: globals, closure cells, helper functions of its module), and the arrays held
by ``self`` and the other argument objects (attributes, and the lists, dicts and objects they
hold, down to ``OBJECT_DEPTH`` steps) are swapped in place for ``CapturedTracer``s while it
runs. The objects themselves stay the same, so identity (``o is DEFAULT``, ``id(o)`` keys, back
references) holds. On exit every slot of those containers that still holds a proxy gets its
array back; a slot the body (or another thread) rebound keeps the new value
(``side_effects.detect`` then replays or refuses traced values bound to an argument object).
Another thread reading such an attribute during the trace sees the proxy, which computes as
its array outside the trace.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import types
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..logs import topic
from . import creation, object_reads, pystate, whole_uses
from .captures import (
    MAX_DEPTH,
    MAX_ITEMS,
    OBJECT_DEPTH,
    bound_parts,
    code_names,
    found_path,
    held_deep,
    slot_items,
    slot_names,
    user_code,
    walked,
)
from .code_reads import constant_keys
from .context import unwrap
from .loc import classify
from .overlay import Copies, proxyable, rebuildable
from .plain_reads import AliasPlainRead
from .side_effects import has_traced, rebound, watchable
from .tracer import CapturedTracer, Tracer

_BUILTIN_METHODS = (types.BuiltinMethodType, types.MethodWrapperType)
_CALLABLES = (types.MethodType, functools.partial, *_BUILTIN_METHODS)
_ATOMS = (int, float, complex, bool, str, bytes, type(None))   # hold no arrays
_MAX_REVISITS = 20_000   # a graph sharing objects on many paths: the first paths suffice
_MAX_OBJECTS = 200_000   # objects, lists and dicts looked into per trace
log = topic("trace")
LEAKED = ("side effect that replay would lose: a traced value stored into a list, dict or "
          "object reached from a global or closure")
LEAKED_INTO = ("side effect that replay would lose: a traced value bound to an item of a dict "
               "or list subclass ({})")


@dataclass
class Plan:
    """How to call the body on proxies, and how to copy its bindings back afterwards."""

    fn: object
    swaps: _Swaps
    copies: Copies


class _Swaps:
    """Arrays in argument objects swapped for proxies, and the proxies' paths."""

    def __init__(self, recorder):
        self.recorder = recorder
        self.seen: set = set()       # ids of the objects and containers looked into
        self.walking: set = set()    # ids of those the walk is below now
        self.revisits = 0            # objects reached again (their paths noted as aliases)
        self.back_references: list = []   # (object, where) of cycles past MAX_DEPTH steps
        self.in_library = 0          # objects of Python's library the walk is below now
        self.proxies: dict = {}      # id(array) -> its proxy
        self.arrays: dict = {}       # id(proxy) -> its array
        self.containers: dict = {}   # id -> dict, list or __dict__ that got a proxy
        self.tuples: dict = {}       # id(tuple) -> its copy holding proxies
        self.originals: dict = {}    # id(that copy) -> (the tuple, the copy)
        self.shared: list = []       # lists, dicts and __dict__s reached from globals, cells
        self.plain: dict = {}        # id(shared slots) -> (text, step, plain values, where)
        self.names: set = set()      # attribute names the body's code reads (classes, modules)
        self.classes_of: set = set()   # classes of objects whose attributes were swapped
        self.firsts: dict = {}       # id -> where: a user object reached from a global, cell
        self.aliases: list = []      # (object, where) of the other paths to one of them
        self.held_before: dict = {}   # id(shared object slots) -> {name: value} before
        self.contents: dict = {}   # id(shared object slots) -> whole_uses.contents_of
        self.bound: set = set()      # ids of the objects a compiled partial binds
        self.read_objects: list = []   # (object, where): user objects below them, named
        #                                tuples below them and globals (what their code reads)

    def proxy(self, array, where):
        """The one proxy of ``array``, reading it through ``where`` = (source, steps,
        label) as in ``captures``; each other ``where`` is an alias of its capture."""
        self.recorder.note_path(array, where[0], where[1])
        proxy = self.proxies.get(id(array))
        if proxy is None:
            source, steps, label = where
            path = (source, steps, found_path(source, label, steps)[2])
            proxy = self.proxies[id(array)] = CapturedTracer(array, self.recorder, path)
            self.arrays[id(proxy)] = array
        return proxy

    def stand_in(self, value, where: tuple):
        """The body's copy of an argument's dict or list where a global, closure or object
        holds the dict or list itself (``STATE`` passed as ``d`` too), else None. Eagerly
        both names are one object: an item stored through one is read through the other, so
        the body sees the copy under both. The runtime replays the trace only while that
        place still holds the argument (``runtime.relations``)."""
        copy = self.recorder.stand_ins.get(id(value))
        if copy is not None:
            self.recorder.substituted.append((where[0], where[1]))
        return copy

    def swap(self, value, where: tuple, depth: int = OBJECT_DEPTH, again: bool = False) -> None:
        """Swap the arrays held by ``value`` (``depth`` levels down) for proxies. Below a
        value reached ``again`` (``a.cfg is b.cfg``), only the new paths to proxies are noted.
        Past ``MAX_DEPTH`` steps, neither the objects of Python's library (``held_deep``) nor
        what they hold, nor a cycle (``attn.parent = block``: only the paths to the arrays its
        object holds itself, ``_note_back_references``)."""
        if depth == 0 or type(value) in _ATOMS:
            return
        deep = len(where[1]) >= MAX_DEPTH
        if deep and (self.in_library or id(value) in self.walking) or \
                not walked(value, len(where[1])):
            if id(value) in self.walking:   # a back reference: ``self.parent.w`` reads
                self.back_references.append((value, where))
                self._note_alias(value, where, again)
            return   # a cycle, or a library's object (a logger's handler), this far down
        self._note_alias(value, where, again)
        again = again or id(value) in self.seen
        if not self._looks_into(value, again):
            return
        library = not deep and not isinstance(value, (list, dict, tuple, deque)) and \
            not held_deep(value)   # ``LOG.parent.handlers[0].formatter``: not past three
        self.walking.add(id(value))
        self.in_library += library
        try:
            self._swap(value, where, depth, again)
        finally:
            self.walking.discard(id(value))
            self.in_library -= library
        if not self.walking:
            self._note_back_references()

    def _note_alias(self, value, where: tuple, again: bool) -> None:
        """Notes the first path from a global, cell or partial to each user object, and
        each other path to it (not those below an object reached again: the paths through
        it hold it while it holds them), whose numbers no read checks: ``held_reads`` reads
        there that both places hold one object."""
        if again or not (_shared_root(where) or self._bound_root(where)) or not (
                _slotted(value) or (watchable(value) and _user_class(value))):
            return
        if id(value) in self.firsts:
            self.aliases.append((value, where))
            return
        self.firsts[id(value)] = where
        if id(value) in self.seen:   # reached from an argument first (``model.layer is
            self.read_objects.append((value, where))   # GLOBAL.layer``): read here too

    def _bound_root(self, where) -> bool:
        """Reached from an object the compiled partial binds (``partial(Model.forward, m)``),
        the same on every call."""
        return where[0][0] == "object" and id(where[0][1]) in self.bound

    def _note_back_references(self) -> None:
        """The arrays an object holds itself, through each back reference to it found more
        than ``MAX_DEPTH`` steps down (``blocks[0].attn.parent`` of ``blocks[0]``): another
        path to each, checked before every replay (``parent`` rebound to another block)."""
        while self.back_references:
            value, where = self.back_references.pop()
            if self._looks_into(value, True):
                self._swap(value, where, 1, True)

    def _looks_into(self, value, again: bool) -> bool:
        """Counts ``value`` in (the first time: ``seen``); False past the limits: an object
        reached again past ``_MAX_REVISITS`` (its other paths go unnoted), a new one past
        ``_MAX_OBJECTS`` (its arrays stay plain ones: a warning says so)."""
        if again:
            self.revisits += 1
            if self.revisits == _MAX_REVISITS + 1:
                log.debug("stopped noting other paths to captured arrays after %d objects "
                          "reached again", _MAX_REVISITS)
            return self.revisits <= _MAX_REVISITS
        if len(self.seen) >= _MAX_OBJECTS:
            if len(self.seen) == _MAX_OBJECTS:
                log.warning("looked into %d objects below the body's arguments, globals and "
                            "closures; the arrays below the others are read as plain arrays",
                            _MAX_OBJECTS)
                self.seen.add(None)   # warned once
            return False
        self.seen.add(id(value))
        return True

    def _swap(self, value, where: tuple, depth: int, again: bool) -> None:
        if type(value) is tuple:
            for key, item in enumerate(value):
                self.swap(item, _below(where, "item", key), depth - 1, again)
            return
        kind = pystate.compiled_kind(value)
        if type(value) in _BUILTIN_METHODS and isinstance(getattr(value, "__self__", None),
                                                          (list, dict)):
            self.swap(value.__self__, _below(where, "attr", "__self__"), depth, again)
            return   # ``GET = TABLE.__getitem__``
        if type(value) is functools.partial:
            # its function's object and the objects it binds; its arrays are read by
            # reference where the body uses them (``captures.find_captures``)
            self.swap(value.func, _below(where, "attr", "func"), depth, again)
            for key, item in [*enumerate(value.args), *value.keywords.items()]:
                step = "args" if type(key) is int else "keywords"
                self.swap(item, _below(_below(where, "attr", step), "item", key), depth - 1,
                          again)
            return
        if type(value) is types.MethodType or kind == "bound":
            # ``G = model.g``: its object, as ``MODEL``'s (``G = Cfg.cm``: its class)
            self.swap(value.__self__, _below(where, "attr", "__self__"), depth, again)
            return
        if kind == "compiled":   # ``COBJ = fusejit.compile(obj)``: the object it calls
            self.swap(value.__wrapped__, _below(where, "attr", "__wrapped__"), depth, again)
            return
        for slots, step in self._slots_of(value, again):
            if (_shared_root(where) or isinstance(slots, _Subclass)) and not again:
                self.shared.append(slots)
                text = found_path(where[0], where[2], where[1])[2]
                self.plain[id(slots)] = (text, step, _plain(slots), where)
                if step == "attr":   # an object's: what each attribute held (``rebound``)
                    self.held_before[id(slots)] = dict(_items(slots))
                    self.contents[id(slots)] = whole_uses.contents_of(_items(slots))
            elif self._bound_root(where) and not again and not isinstance(value, type) and \
                    (isinstance(slots, _Slots) or slots is getattr(value, "__dict__", None)):
                self.read_objects.append((value, where))
            items = _items(slots)
            if len(items) > MAX_ITEMS:   # data (a tokenizer's merges): three steps, as before
                depth = min(depth, max(MAX_DEPTH - len(where[1]), 1))
            for key, item in items:
                if id(item) in self.arrays:        # a proxy put there: another path to it
                    self.proxy(self.arrays[id(item)], _below(where, step, key))
                elif again and id(item) in self.recorder.originals:   # a copy put there
                    self.recorder.substituted.append(_below(where, step, key)[:2])
                elif proxyable(item):
                    if not again:
                        slots[key] = self.proxy(item, _below(where, step, key))
                        self.containers[id(slots)] = slots
                elif id(item) in self.recorder.stand_ins and not again:
                    copy = slots[key] = self.stand_in(item, _below(where, step, key))
                    self.originals[id(copy)] = (item, copy)   # ``unswap`` puts it back
                    self.containers[id(slots)] = slots
                elif rebuildable(item) and not again:
                    copy = self.tuple_copy(item, _below(where, step, key), depth - 1)
                    if copy is not item:
                        slots[key] = copy
                        self.containers[id(slots)] = slots
                else:
                    self.swap(item, _below(where, step, key), depth - 1, again)

    def tuple_copy(self, value: tuple, where: tuple, depth: int = OBJECT_DEPTH) -> tuple:
        """A tuple (or named tuple) holding arrays cannot take proxies in place
        (``self.cache = (x, h)``, then ``h * h`` in another method): a copy of it with its
        arrays' proxies (one copy per tuple, whatever path reaches it) stands in for it while
        the body runs. Lists, dicts and objects inside it are swapped in place."""
        if depth == 0:
            return value
        if type(value) is not tuple and (_shared_root(where) or self._bound_root(where)):
            self.read_objects.append((value, where))   # ``P.apply`` reading ``self.k``
        items = []
        for key, item in enumerate(value):
            here = _below(where, "item", key)
            if proxyable(item):
                item = self.proxy(item, here)
            elif id(item) in self.recorder.stand_ins:
                item = self.stand_in(item, here)
            elif rebuildable(item):
                item = self.tuple_copy(item, here, depth - 1)
            else:
                self.swap(item, here, depth - 1)
            items.append(item)
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        copy = self.tuples.get(id(value))
        if copy is None:
            copy = tuple(items) if type(value) is tuple else type(value)._make(items)
            self.tuples[id(value)] = copy
            self.originals[id(copy)] = (value, copy)
        return copy

    def watch(self, func, text: str) -> None:
        """Attributes of a function the body calls (``helper.calls += 1``): checked like
        those of an object reached from a global."""
        slots = func.__dict__
        if id(slots) not in self.plain:
            self.shared.append(slots)
            self.plain[id(slots)] = (text, "attr", _plain(slots), (("object", func), (), text))

    def _slots_of(self, value, again: bool) -> list[tuple[object, str]]:
        """(slots, step) pairs whose arrays ``value`` holds: a list's or dict's items, an
        object's attributes, or both (a user's dict subclass with attributes of its own)."""
        if type(value) in (list, dict, deque):
            return [(value, "item")]
        if isinstance(value, Tracer):
            return []
        found = []
        if plain_subclass(value):
            found.append((_Subclass(value), "item"))   # OrderedDict, defaultdict, P(dict)
        elif isinstance(value, (list, dict)) and not again:
            self.shared.append(_Subclass(value))   # its own __setitem__: arrays stay, a traced
            #                                        value bound is refused
        if _slotted(value):
            found.append((_Slots(value), "attr"))      # a user class with __slots__
        elif isinstance(value, (type, types.ModuleType)) and user_code(value):
            names = self.names | object_reads.class_names(value) if isinstance(value, type) \
                else self.names   # ``cls.table`` in a classmethod
            found.append((_Attributes(value, names), "attr"))   # ``cls.table``
        elif watchable(value) and _user_class(value):
            found.append((_Uncached(value) if pystate.has_library_cache(value) else vars(value),
                          "attr"))
            if not again and type(value) not in self.classes_of and user_code(type(value)):
                # its class's arrays, under the names its methods load (``self.W``), read
                # through the first object reached of that class; not those it shadows
                self.classes_of.add(type(value))
                names = object_reads.class_names(type(value)) - vars(value).keys()
                found.append((_Attributes(type(value), names), "attr"))
        return found

    def restore(self) -> None:
        """Every slot that holds a proxy gets its array back. A traced value the body stored
        into a list, dict or object reached from a global or closure (``CACHE[k] =
        np.empty(n)``) is a side effect replay would lose: its array is stored instead, and
        the signature runs eagerly (argument objects: ``side_effects.detect``)."""
        self.unswap()
        for slots in self.shared:
            for key, item in _items(slots):
                if isinstance(item, Tracer) or has_traced(item):
                    slots[key] = unwrap(item, self.recorder.originals)
                    self.recorder.set_fallback(
                        LEAKED_INTO.format(type(slots.target).__name__)
                        if isinstance(slots, _Subclass) else LEAKED, None)
            self._check_state(slots)

    def unswap(self) -> None:
        """Every swapped slot that holds a proxy gets its array back (also while the body
        runs, once it runs eagerly: ``type_checks``)."""
        for slots in self.containers.values():
            for key, item in _items(slots):
                if id(item) in self.arrays:      # a proxy (each stays alive in ``proxies``)
                    slots[key] = self.arrays[id(item)]
                elif id(item) in self.originals and self.originals[id(item)][1] is item:
                    slots[key] = self.originals[id(item)][0]

    def held_reads(self, codes) -> list[tuple]:
        """(source, value, label, path[, cls]): the plain and named values the code the trace
        ran reads through the objects, dicts and lists reached from globals, closure cells
        and defaults (``object_reads``). One the body changed is ``_check_state``'s."""
        keys = frozenset().union(*map(constant_keys, codes))
        objects, found = [], []
        for slots in self.shared:
            text, step, _, where = self.plain.get(id(slots), ("", "", None, None))
            if isinstance(slots, _Attributes) and isinstance(slots.owner, type) and \
                    where is not None and pystate.walk(pystate.source_root(where[0]),
                                                       where[1]) is slots.owner:
                objects.append((slots.owner, where, text))   # ``cls.K`` in a classmethod
                continue
            if isinstance(slots, _Subclass) and where is not None:   # a dict subclass's
                found += object_reads.items(slots.target, where, text, keys, depth=1,
                                            subclasses=True)   # ``self["k"]`` in its method
                continue
            if isinstance(slots, _Slots) and where is not None:   # ``@dataclass(slots=True)``
                objects.append((slots.target, where, text))
                continue
            if where is None or type(slots) not in (dict, list, deque):
                continue   # a module's attributes: ``code_reads``
            if step == "item":
                found += object_reads.items(slots, where, text, keys, depth=1)
                continue
            obj = pystate.walk(pystate.source_root(where[0]), where[1])
            if getattr(obj, "__dict__", None) is slots:
                objects.append((obj, where, text))
        objects += [(obj, where, found_path(where[0], where[2], where[1])[2])
                    for obj, where in self.read_objects]
        places = self.recorder.code_places
        return found + object_reads.reads(objects, codes, places.handed if places else None)

    def alias_reads(self) -> list[AliasPlainRead]:
        """The reads of each other place that reached a user object (``held_reads`` reads
        its numbers through the first)."""
        found = []
        for value, (source, steps, label) in self.aliases:
            first_source, first_steps, first_label = self.firsts[id(value)]
            first = found_path(first_source, first_label, first_steps)[2]
            found.append(AliasPlainRead(source, steps, found_path(source, label, steps)[2],
                                        (first_source, first_steps), pystate.AliasOf(first)))
        return found

    def _check_state(self, slots) -> None:
        """A plain Python value the body changed in a container reached from a global or
        closure (``STATE["step"] += 1``, ``CONFIG.scale = 2``): replay would not change it."""
        text, step, before, where = self.plain.get(id(slots), ("", "", None, None))
        if before is None:
            return
        found = pystate.first_change(before, _plain(slots), _container(slots)) or \
            self._rebound(slots) or self._whole_changed(slots)
        if found is not None:
            (key,), old, new = found
            label = f"{text}.{key}" if step == "attr" else f"{text}[{key!r}]"
            watch = pystate.in_source(label, where[0], (*where[1], (step, key)))
            if type(old) is pystate.Contents:   # a list or set used whole
                watch = whole_uses.watch_of(watch)
            self.recorder.state_changed(watch, old, new)

    def _whole_changed(self, slots):
        """((name,), old, new) of a list or set attribute the body changed that its code uses
        whole (``whole_uses.changed``: ``MODEL.seen.add(n)`` and ``len(self.seen)``)."""
        before = self.contents.get(id(slots))
        found = whole_uses.changed(before, dict(_items(slots)), self.recorder.entered) \
            if before else None
        return None if found is None else ((found[0],), *found[1:])

    def _rebound(self, slots):
        """((name,), old, new) of an attribute the body bound to another object
        (``side_effects.rebound``: ``self.cur, self.nxt = self.nxt, self.cur``), else None."""
        before = self.held_before.get(id(slots))
        for key, new in _items(slots) if before is not None else ():
            old = before.get(key, pystate.ABSENT)
            if old is not new and rebound(old, new, lambda: self._held_ids):
                return (key,), old, new
        return None

    @functools.cached_property
    def _held_ids(self) -> set:
        """ids of the objects looked into, and of those the objects' attributes held."""
        return self.seen | {id(value) for held in self.held_before.values()
                            for value in held.values()}


def _plain(slots) -> dict:
    """The plain Python values (numbers, strings) among the slots, by key (a path of one)."""
    return {(key,): item for key, item in _items(slots) if pystate.is_plain(item)}


def _container(slots):
    """The list, dict or ``__dict__`` the slots are, or the list or dict subclass they wrap
    (an object's slots and a class's attributes: None)."""
    if type(slots) in (list, dict, deque):
        return slots
    return slots.target if isinstance(slots, _Subclass) else None


def _items(slots) -> list:
    """(key, item) pairs of a dict, list, deque, ``__dict__`` or ``_Attributes``, taken before any
    is replaced; not weak proxies (``weakref.proxy``: looking at one whose object died
    raises), which hold no array of their own."""
    pairs = enumerate(slots) if type(slots) in (list, deque) else slots.items()
    return [(key, item) for key, item in pairs if type(item) not in pystate.PROXIES]


class _Subclass:
    """A ``dict`` or ``list`` subclass as slots to swap, read and set with ``dict``'s and
    ``list``'s own methods: its ``__setitem__`` (validation, conversion) is its own code,
    which swapping a proxy in and the array back must not run. Binding a traced value to an
    item is a side effect replay would lose: that signature runs eagerly."""

    def __init__(self, target):
        self.target = target
        self.base = dict if isinstance(target, dict) else list

    def items(self):
        if self.base is dict:
            return list(dict.items(self.target))
        return list(enumerate(list.__iter__(self.target)))

    def __setitem__(self, key, value):
        self.base.__setitem__(self.target, key, value)


class _Slots:
    """The ``__slots__`` attributes of a user object as slots to swap, set with
    ``object.__setattr__`` (a frozen slots dataclass refuses ``setattr``). A slot rebound to
    a traced value is ``side_effects.detect``'s to refuse."""

    def __init__(self, target):
        self.target = target

    def items(self):
        return slot_items(self.target)

    def __setitem__(self, key, value):
        object.__setattr__(self.target, key, value)


def plain_subclass(obj) -> bool:
    """A ``dict`` or ``list`` subclass whose items are read and set by C code (``OrderedDict``,
    ``defaultdict``, ``class Params(dict): pass``). One with its own ``__getitem__`` or
    ``__setitem__`` in Python (validating or converting values) keeps its arrays: that code
    would be given proxies, which are not ndarrays."""
    if not isinstance(obj, (list, dict)) or isinstance(obj, Tracer):
        return False
    return all(isinstance(inspect.getattr_static(type(obj), name),
                          (types.WrapperDescriptorType, types.MethodDescriptorType))
               for name in ("__getitem__", "__setitem__"))


def _slotted(obj) -> bool:
    """An instance of a user class with ``__slots__`` (its ``__dict__``, if any, is swapped as
    ``vars``; only its slots here)."""
    cls = type(obj)
    if not slot_names(cls) or isinstance(obj, Tracer):
        return False
    module = sys.modules.get(cls.__module__)
    return classify(getattr(module, "__file__", None) or "<unknown>") == "user"


class _Attributes:
    """The attributes of a class or module that the body's code names, as slots to swap (a
    class's ``vars`` is read-only). The others stay arrays: code the tracer does not see
    (an ``@njit`` helper given ``config.B``) may need one. An attribute the class refuses to
    set (a metaclass's ``__setattr__``) stays an array too, read by its path."""

    def __init__(self, owner, names):
        self.owner, self.names = owner, names

    def items(self):
        return [(k, v) for k, v in vars(self.owner).items()
                if k in self.names and not isinstance(v, types.ModuleType)]

    def __setitem__(self, key, value):
        with contextlib.suppress(AttributeError, TypeError):
            setattr(self.owner, key, value)


class _Uncached(_Attributes):
    """The attributes of an object of Python's library but those it fills as a cache of its
    own (``pystate.library_cache``: a logger's ``_cache``)."""

    def __init__(self, owner):
        super().__init__(owner, ())

    def items(self):
        return [(k, v) for k, v in vars(self.owner).items()
                if not pystate.library_cache(self.owner, k)]


def _user_class(obj) -> bool:
    """An instance of a class without ``__slots__`` that is not NumPy's or SciPy's (the user's,
    a ``SimpleNamespace``, a logger): their objects (a sparse matrix) keep their arrays while
    tracing."""
    cls = type(obj)
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None) or "<unknown>"
    return (classify(filename) == "user"
            and not any("__slots__" in vars(base) for base in cls.__mro__))


def plan(fn, recorder, leaves: list, hints: list[str]) -> Plan:
    """The callable to trace; the arrays of argument objects are swapped for proxies."""
    swaps = _Swaps(recorder)
    result = Plan(fn, swaps, Copies(swaps))
    if isinstance(fn, functools.partial) and type(_unbound(fn.func)) is types.FunctionType:
        # a function's bound arguments, or a compiled method's static ones
        swaps.names = code_names(_unbound(fn.func).__code__)
        args = [_bound(swaps, value, i) for i, value in enumerate(fn.args)]
        keywords = {k: _bound(swaps, value, k) for k, value in fn.keywords.items()}
        func = result.copies.function(_unbound(fn.func))
        if isinstance(fn.func, types.MethodType):
            swaps.swap(fn.func.__self__, (("object", fn.func.__self__), (), "self"))
            func = types.MethodType(func, fn.func.__self__)
        result.fn = functools.partial(func, *args, **keywords)
        return _argument_objects(result, leaves, hints)
    bound, func = bound_parts(fn)
    if type(func) is types.FunctionType:
        swaps.names = code_names(func.__code__)
        func = result.copies.function(func)
        result.fn = func if bound is None else types.MethodType(func, bound)
    if bound is not None:
        swaps.swap(bound, (("object", bound), (), "self"))
    return _argument_objects(result, leaves, hints)


def _unbound(fn):
    """A bound method's function (a partial binds a compiled method's static arguments)."""
    return fn.__func__ if isinstance(fn, types.MethodType) else fn


def _bound(swaps: _Swaps, value, name):
    """A partial's bound argument (``static_argnames`` values among them): an array is read
    by reference; the arrays an object holds are swapped."""
    if proxyable(value):
        return swaps.proxy(value, (("object", value), (), f"partial argument {name}"))
    if value is np:   # a static ``xp=np``: the body's own view of numpy
        return creation.view_of(swaps.recorder)
    swaps.bound.add(id(value))
    swaps.swap(value, (("object", value), (), name if isinstance(name, str)
                       else f"partial argument {name}"))
    return value


def _argument_objects(result: Plan, leaves, hints) -> Plan:
    for index, leaf in enumerate(leaves):
        if watchable(leaf) or _slotted(leaf) or isinstance(leaf, (list, dict, deque)):
            result.swaps.swap(leaf, (("leaf", index), (), hints[index]))
        elif type(leaf) in _CALLABLES:   # ``body(x, ema.update)``: the objects it binds
            result.swaps.swap(leaf, (("leaf", index), (), hints[index]))
            held = getattr(leaf, "__self__", None)
            if type(leaf) in _BUILTIN_METHODS and type(held) in (list, dict, deque):
                result.swaps.shared.append(held)   # ``out.append``: a traced value put
    return result                                  # there is a side effect (``restore``)


def _shared_root(where) -> bool:
    """Reached from a global, a closure cell or a default argument (``cfg=DEFAULTS``): a
    traced value the body stores there is a side effect a replay would lose (``restore``)."""
    return where[0][0] in ("global", "cell") or where[1][:1] in (
        (("attr", "__defaults__"),), (("attr", "__kwdefaults__"),))


def _below(where, step, key):
    source, steps, label = where
    return source, (*steps, (step, key)), label


@contextmanager
def proxied(fn, recorder, leaves: list, hints: list[str]):
    """The callable to trace, with the arrays of argument objects swapped for proxies until
    the body returns; then the body's bindings are copied back and the arrays restored."""
    traced = plan(fn, recorder, leaves, hints)
    recorder.unswap = traced.swaps.unswap
    recorder.nested = traced.copies.nested
    try:
        yield traced.fn
    finally:
        traced.copies.copy_back(recorder, fn)
        traced.swaps.restore()
