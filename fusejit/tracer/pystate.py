"""Plain Python state the body changes: ``self.t += 1``, ``STATE["step"] += 1``, ``global n``.

A replay runs no Python: it neither makes such a change nor reads the new value (an Adam
step's ``1 - b1 ** self.t`` would stay the first step's). The tracer compares the plain values
(numbers, bools, strings, None, enums and tuples of them) that the body can reach through its
argument objects, globals and closures before and after the body; a change makes that call's
trace run no program, every signature's paths go, and the next call traces again
(``Fallback.retry``). A flag set once (``self.built = True``) does not change then, and that
trace compiles, with the values it left checked before each replay (``Watch``): where another
call moved them (``self.last_batch = len(x)`` under another signature), that call runs
eagerly. A counter changes again, and the signature runs eagerly for good.
"""
from __future__ import annotations

import enum
import functools
import inspect
import logging
import re
import types
import weakref
from collections import deque
from dataclasses import dataclass

import numpy as np

STATE_CHANGED = ("Python state that replay would not update: {} {} in the body (a counter "
                 "compiles when kept in a NumPy array updated in place, such as a 0-d np.int64 "
                 "step count)")
ABSENT = object()   # a name or item that is not there (before the body made it, or removed)
PRESENT = object()  # what a read holds where the code asked only whether a key is there (``in``)
NESTED = 3          # levels of lists and dicts looked into below an attribute
_SCALARS = (bool, int, float, complex, str, bytes, type(None), enum.Enum)
# what a read holds by identity (``ACT = np.tanh``, a helper, a class) or by value (a dtype,
# ``slice(1, 5)``, ``range(4)``): ``is_named``
_BY_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                functools.partial, np.ufunc, type, staticmethod, classmethod)
_BY_VALUE = (np.dtype, slice, range)
PROXIES = (weakref.ProxyType, weakref.CallableProxyType)
_MUTABLE = (list, dict, set, deque, bytearray)   # containers compared by what they hold


# Attributes that a class of Python's library fills as a cache of its own: the body does not
# change them and a replay need not repeat them (a logger's level cache, which the body's first
# ``log.info(...)`` fills)
_LIBRARY_CACHES = ((logging.Logger, "_cache"),)


def has_library_cache(obj) -> bool:
    return isinstance(obj, tuple(cls for cls, _ in _LIBRARY_CACHES))


def library_cache(obj, name: str) -> bool:
    return any(isinstance(obj, cls) and name == attr for cls, attr in _LIBRARY_CACHES)


def is_plain(value) -> bool:
    """A number, bool, string, None, enum member or NumPy scalar, or a short tuple of them."""
    if type(value) in PROXIES:   # a weak proxy: ``isinstance`` raises once its object died
        return False
    if isinstance(value, _SCALARS):
        return True
    if isinstance(value, np.generic):
        return not isinstance(value, np.void)    # a structured scalar compares by dtype
    return type(value) in (tuple, frozenset) and len(value) <= 64 and all(map(is_plain, value))


def is_named(value) -> bool:
    """A function, method, partial, ufunc or class (held by identity), or a dtype, slice or
    range (by value): what the body calls or passes on (``ACT(x)``, ``x.astype(DT)``,
    ``x[SL]``), which a replay takes as the trace read it; or a short tuple holding one
    (``ACTS = (np.tanh, np.sin)``), or a named tuple of such values or plain ones
    (``Cfg(eps=1e-5)``). Read again like a plain value, but not state: the body rebinding one
    is not watched."""
    cls = type(value)
    if issubclass(cls, _BY_IDENTITY + _BY_VALUE) or compiled_kind(value) is not None:
        return True
    return issubclass(cls, tuple) and (cls is tuple or hasattr(cls, "_fields")) and \
        len(value) <= 64 and not is_plain(value) and all(map(read_again, value))


def read_again(value) -> bool:
    """A value a read of a global, cell, default or attribute is checked for on replay."""
    return is_plain(value) or is_named(value) or type(value) is Contents


MAX_CONTENTS = 256   # plain values of a list, set, dict or deque read whole, at most in all
_CONTENT_KINDS = (list, dict, set, deque)


class Contents:
    """What a list, set, dict or deque of plain or named values (``self.dims = [64, 32]``,
    ``SKIP = {"b"}``, nested ones too) held when the code used it whole (``for d in
    self.dims``, ``len(NAMES)``, ``name in SKIP``: ``whole_uses``): read again as a value,
    the same kind holding items of the same types, equal and in the same order (a set's
    too: it is iterated in that order), without keeping the container, which may change
    inside. ``keys_only``: a dict whose keys alone the code reads (``for k in self.cfg``,
    ``k in self.cfg``)."""

    __slots__ = ("kind", "items", "keys", "keys_only", "item_types", "key_types", "length")

    def __init__(self, kind: type, items: tuple, keys: tuple | None, keys_only: bool = False,
                 length: int | None = None):
        self.kind, self.items, self.keys, self.keys_only = kind, items, keys, keys_only
        self.item_types, self.key_types = _flat_types(items), _flat_types(keys or ())
        self.length = len(keys if keys is not None else items) if length is None else length

    @classmethod
    def length_of(cls, value) -> Contents:
        """A list or deque of objects or arrays, by its length alone (``len(self.layers)``:
        what each item holds is read where the code reads it)."""
        return cls(type(value), (), None, True, len(value))

    def matches(self, current) -> bool:
        if type(current) is Contents:   # a watch's snapshot (``whole_uses.watch_of``)
            return current.kind is self.kind and current.keys_only == self.keys_only and \
                current.length == self.length and \
                _all_same(self.keys or (), current.keys or ()) and \
                _all_same(self.items, current.items)
        if type(current) is not self.kind or len(current) != self.length:
            return False
        if self.keys_only and self.keys is None:   # ``length_of``
            return True
        if self.keys is not None:
            if not _all_same(self.keys, tuple(current), self.key_types):
                return False
            if self.keys_only:
                return True
            current = current.values()
        return _all_same(self.items, tuple(current), self.item_types)

    def keys_view(self) -> Contents:
        """The same snapshot of a dict, its keys alone."""
        return Contents(self.kind, (), self.keys, True) if self.keys is not None else self

    def __repr__(self) -> str:
        if self.keys_only and self.keys is None:
            return f"{self.kind.__name__} of {self.length} item{'s' * (self.length != 1)}"
        texts = [shown(item) if type(item) is not Contents else repr(item)
                 for item in self.items]
        if self.keys is not None:
            pairs = zip(self.keys, texts if not self.keys_only else ["..."] * len(self.keys),
                        strict=True)
            texts = [f"{shown(key)}: {text}" for key, text in pairs]
        text = ", ".join(sorted(texts) if self.kind in (set, frozenset) else texts)
        text = f"[{text}]" if self.keys is None and self.kind is not set else f"{{{text}}}"
        return text if self.kind in (list, dict, set) else f"{self.kind.__name__}({text})"


def contents(value, keys_only: bool = False, depth: int = NESTED) -> Contents | None:
    """The ``Contents`` of a list, set, dict or deque (a subclass whose items C code reads:
    ``OrderedDict``, ``defaultdict``) of plain or named values, or of such lists and dicts,
    ``depth`` levels down, ``MAX_CONTENTS`` values in all; None for anything else."""
    room = [MAX_CONTENTS]
    return _snapshot(value, keys_only, depth, room)


def _snapshot(value, keys_only: bool, depth: int, room: list) -> Contents | None:
    if not isinstance(value, _CONTENT_KINDS) or depth == 0 or \
            not (type(value) in _CONTENT_KINDS or keyed(value) or type(value) is set):
        return None
    room[0] -= len(value)
    if room[0] < 0:
        return None
    keys = tuple(value) if isinstance(value, dict) else None
    if keys is not None and not all(map(is_plain, keys)):
        return None
    items = []
    for item in () if keys_only else value.values() if keys is not None else tuple(value):
        if not read_again(item):
            item = _snapshot(item, False, depth - 1, room)
            if item is None:
                return None
        items.append(item)
    return Contents(type(value), tuple(items), keys, keys_only and keys is not None)


_FLAT = frozenset({str, int, float, bool, type(None)})


def _flat_types(values: tuple) -> tuple | None:
    """The types of ``values`` where all are ``str``, ``int``, ``float``, ``bool`` or None,
    which C compares (``_all_same``); None otherwise."""
    types_ = tuple(map(type, values))
    return types_ if _FLAT.issuperset(types_) else None


def _all_same(expected: tuple, current: tuple, types_: tuple | None = None) -> bool:
    """Item by item: of the same type, equal (``same``); where ``types_`` are the items'
    (plain scalars alone), C compares them first, each NaN by identity."""
    if len(expected) != len(current):
        return False
    if types_ is not None and expected == current and tuple(map(type, current)) == types_:
        return True
    return all(map(_item_same, expected, current))


def _item_same(expected, current) -> bool:
    if type(expected) is Contents:
        return expected.matches(current)
    if type(current) is not type(expected):   # ``1`` and ``1.0``, ``True`` and ``1``
        return False
    return current is expected or same(expected, current)


def _same_named(expected, current) -> bool:
    if current is expected:
        return True
    if type(current) is not type(expected):
        return False
    if isinstance(expected, tuple):   # a named tuple
        return len(current) == len(expected) and all(map(same, expected, current))
    return (isinstance(expected, _BY_VALUE) or compiled_kind(expected) == "bound") and \
        current == expected


def compiled_kind(value) -> str | None:
    """"compiled" for a ``fusejit.compile``d function, "bound" for one bound to an object (made
    anew on each lookup, as a bound method is: the same where its function and object are);
    None for anything else."""
    return getattr(type(value), "fusejit_kind", None)


def equal(a, b) -> bool:
    """Plain values that a replay may take for one another (NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if type(a) is tuple:
        return len(a) == len(b) and all(map(equal, a, b))
    try:
        return bool(a == b) or (a != a and b != b)
    except (TypeError, ValueError):
        return False


def changed(old, new) -> bool:
    """Whether ``old`` (a plain value, or ``ABSENT``) became another plain value, or went."""
    if old is new or not (is_plain(old) or old is ABSENT):
        return False
    if new is ABSENT or old is ABSENT:
        return is_plain(new) or is_plain(old)
    return is_plain(new) and not equal(old, new)


def buffer_changed(old, new) -> bool:
    """A plain value (``None``) or nothing rebound to an array made in the body, or an array
    to a plain value: ``if self.buf is None: self.buf = np.zeros(n)`` runs once, and a replay
    of that path would make it on every call; ``self.pending = None`` after adding it would
    leave it there."""
    if type(new) is np.ndarray:
        return old is ABSENT or is_plain(old)
    return type(old) is np.ndarray and is_plain(new)


class AliasOf:
    """What an alias read (``attribute_reads.AliasRead``, ``plain_reads.AliasPlainRead``)
    shows as its value: the first place that reached the object its place reaches too."""

    __slots__ = ("first",)

    def __init__(self, first: str):
        self.first = first

    def __repr__(self) -> str:
        return f"{self.first} (the same object)"

    def moved(self, label: str) -> str:
        """Why a replay does not apply: the place ``label`` holds another object now."""
        return f"{label} no longer holds the object {self.first} holds"


def same(expected, current, depth: int = NESTED) -> bool:
    """A watched value as the compiling trace left it (an array: any array, read anew; a
    list, tuple or dict: one of the same keys and kind of items, which a replay rebinds, as
    ``self.cache = {"h": h}`` set where there was none; a ``Contents``: equal ones)."""
    if type(expected) is Contents:
        return expected.matches(current)
    if type(expected) is np.ndarray:
        return type(current) is np.ndarray
    if type(expected) in (list, tuple, dict) and not is_plain(expected):
        if type(current) is not type(expected) or len(current) != len(expected):
            return False
        if depth == 0:   # deeper (or a container holding itself): its kind alone
            return True
        if type(expected) is dict:
            return list(expected) == list(current) and all(
                same(expected[k], current[k], depth - 1) for k in expected)
        return all(same(a, b, depth - 1) for a, b in zip(expected, current, strict=True))
    if current is expected and not isinstance(expected, _MUTABLE):   # an object, by identity
        return True   # (``self.helper``); a set or deque may have changed inside
    if expected is PRESENT:   # ``"bias" in self.params``: whatever it holds
        return current is not ABSENT
    if expected is ABSENT or current is ABSENT:
        return False
    if is_plain(current):
        return equal(expected, current)
    return is_named(expected) and _same_named(expected, current)


def shown(value) -> str:
    if value is ABSENT:   # an attribute ``getattr(obj, "k", 1.0)`` found missing
        return "(nothing)"
    if value is PRESENT:
        return "(there)"
    if type(value) is np.ndarray:
        return f"an array {value.dtype}{list(value.shape)}"
    try:
        text = repr(value)
    except Exception:   # noqa: BLE001 -- the user's __repr__ raised: the type says enough
        text = f"<{type(value).__name__} object>"
    if is_named(value):   # ``<function block>``: no address, the same text in every run
        text = _ADDRESS.sub("", text)
    return text if len(text) <= 40 else text[:37] + "..."


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def read_moved_text(label: str, read, now) -> str:
    """A plain value a trace read (``global SCALE``) that a replay finds otherwise."""
    return f"{label} was {'nothing' if read is ABSENT else shown(read)} when traced, now " + \
        ("nothing" if now is ABSENT else shown(now))


def change_text(old, new) -> str:
    if old is ABSENT:
        return f"set to {shown(new)}"
    if new is ABSENT:
        return f"removed (it was {shown(old)})"
    return f"changed from {shown(old)} to {shown(new)}"


def plain_values(container, depth: int = NESTED) -> dict:
    """Path (a tuple of keys) -> plain value, in a list or dict and the lists, dicts and
    tuples it holds (a named tuple of an array and a number), ``depth`` levels down."""
    found = {}
    pairs = container.items() if isinstance(container, dict) else enumerate(container)
    for key, value in list(pairs):
        if is_plain(value):
            found[(key,)] = value
        elif depth > 1 and (type(value) in (list, dict) or isinstance(value, tuple)):
            found.update({(key, *path): v for path, v in plain_values(value, depth - 1).items()})
    return found


def first_change(before: dict, now: dict, container):
    """(path, old, new) of the first plain value that changed, appeared or went, in the order
    the paths were seen; else None. Items appended to a list are not changes: a log the body
    keeps (``log.append(x)``, as ``print``) runs while tracing only."""
    paths = [*before, *(path for path in now if path not in before)]
    for path in paths:
        old, new = before.get(path, ABSENT), now.get(path, ABSENT)
        appended = old is ABSENT and type(get_path(container, path[:-1])) is list
        if changed(old, new) and not appended:
            return path, old, new
    return None


def path_text(path: tuple) -> str:
    return "".join(f"[{key!r}]" for key in path)


OWNER = "<self>"   # ``Watch.root`` of the compiled bound method's object


@dataclass(frozen=True)
class Watch:
    """Where a value the body changed lives, read again before each replay: ``read(root)``
    gives it now (or ABSENT). ``root``: the argument it is below, by its name and pytree path
    (``model``, ``opts.1``; each signature finds its own leaf of that name), or ``OWNER``; then
    ``read`` takes that object of the call at hand, and none is kept alive. None: a global,
    cell, class or function the watch reads by itself. ``key``: the place, whatever the
    label. ``read`` None: a place that cannot be read again (an attribute of a static
    argument, which the cache key compares by value)."""

    label: str
    read: object
    key: tuple
    root: str | None = None

    @property
    def copied(self) -> bool:
        """It reads an argument, which ``explain`` traces a copy of."""
        return self.root is not None and self.root != OWNER


def get_attribute(obj, name: str):
    """``obj.name`` from its ``__dict__`` (a class's too), else its slot; ABSENT if none."""
    attrs = getattr(obj, "__dict__", None)
    if attrs is not None and name in attrs:
        return attrs[name]
    return getattr(obj, name, ABSENT)


def get_path(container, path: tuple):
    for key in path:
        if isinstance(container, dict) and type(container) is not dict and \
                not dict.__contains__(container, key):
            return ABSENT   # not ``defaultdict``'s ``__missing__``, which would add it
        try:
            container = container[key]
        except (LookupError, TypeError):
            return ABSENT
    return container


def keyed(value) -> bool:
    """A list, dict or deque, or a subclass of list or dict whose items C code reads and sets
    (``OrderedDict``, ``defaultdict``): one whose items a read walks to by key."""
    if type(value) in (list, dict, deque):
        return True
    return isinstance(value, (list, dict)) and all(
        isinstance(inspect.getattr_static(type(value), name),
                   (types.WrapperDescriptorType, types.MethodDescriptorType))
        for name in ("__getitem__", "__setitem__", "__contains__"))


def walk(target, steps: tuple):
    """Follows ("attr", name), ("item", key), ("method", name) and ("getattr", name) steps;
    ABSENT where one does not lead on."""
    for step, key in steps:
        if target is ABSENT:
            break
        target = get_attribute(target, key) if step == "attr" else \
            method_of(target, key) if step == "method" else \
            served(target, key) if step == "getattr" else get_path(target, (key,))
    return target


def served(obj, name: str):
    """``obj.name`` as its class's ``__getattr__`` answers it (a torch-like module serving
    ``self.training`` from a dict of its own); ABSENT where that raises."""
    try:
        return getattr(obj, name)
    except Exception:   # noqa: BLE001 -- the user's code: its error is the eager call's
        return ABSENT


def method_of(obj, name: str):
    """The function ``obj.name`` calls: a method's own function (the class's, unless the
    object's own attribute shadows it), or what the attribute holds; ABSENT if none."""
    found = getattr(obj, name, ABSENT)
    if (type(found) is types.MethodType or compiled_kind(found) == "bound") and \
            (found.__self__ is obj or found.__self__ is type(obj)):
        return found.__func__   # a method, a classmethod: made anew on each lookup
    return found


def source_root(source):
    """The object a capture source names now: a global's value, a cell's, an object."""
    kind = source[0]
    if kind == "global":
        return source[1].get(source[2], ABSENT)
    if kind == "cell":
        try:
            return source[1].cell_contents
        except ValueError:
            return ABSENT
    return source[1]


def in_source(label: str, source, steps: tuple) -> Watch:
    """A place below a global, closure cell or object the function holds (``STATE["step"]``,
    ``CFG.inner.t``, a class, a helper function), found again from the global's current
    value."""
    read = (lambda root: walk(source_root(source), steps))
    return Watch(label, read, (source[0], id(source[1]), *source[2:], steps))


def in_argument(label: str, root: str, steps: tuple) -> Watch:
    """A place ``steps`` below the argument named ``root`` (or ``OWNER``)."""
    return Watch(label, lambda obj: walk(obj, steps), ("argument", root, steps), root)


def unwatched(label: str) -> Watch:
    return Watch(label, None, ("unwatched", label))


def steps_of(name: str, path: tuple = ()) -> tuple:
    return (("attr", name), *(("item", key) for key in path))
