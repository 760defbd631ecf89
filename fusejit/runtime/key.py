"""Cache keys (DESIGN.md §2): pytree structure + each traced leaf's shape and dtype + static
values + target. Building a key is on the hot path of every call: keep it lean."""
from __future__ import annotations

import dataclasses
import types
import weakref

import numpy as np

from ..ir.types import SUPPORTED_DTYPES
from ..tracer.layouts import stride_order
from .device import is_device_array

_ARRAY, _GENERIC, _FLOAT, _STATIC, _BY_ID = "a", "g", "f", "s", "i"


class UntraceableInput(Exception):
    """An argument the compiler cannot handle (object dtype, array subclass...): run eagerly."""


def leaf_signature(leaf):
    cls = type(leaf)
    if cls is np.ndarray:
        return _array_signature(leaf)
    if cls is float:
        return _FLOAT
    if isinstance(leaf, np.generic):
        return (_GENERIC, leaf.dtype)
    if is_device_array(leaf):
        return (_ARRAY, tuple(leaf.shape), np.dtype(leaf.dtype), "device")
    if isinstance(leaf, np.ndarray):
        raise UntraceableInput(f"an ndarray subclass ({cls.__name__}) is not traced")
    if cls is memoryview or cls is bytearray:
        raise UntraceableInput(f"a {cls.__name__} is a buffer NumPy reads in C, which a trace "
                               "cannot follow")
    if hasattr(cls, "__array__"):
        raise UntraceableInput(f"an object with __array__ ({cls.__name__}) is read by NumPy's "
                               "own code, which a trace cannot follow")
    if getattr(cls, "__array_ufunc__", None) is not None or \
            getattr(cls, "__array_function__", None) is not None:
        raise UntraceableInput(f"an object that overrides NumPy's functions ({cls.__name__}, "
                               "__array_ufunc__ or __array_function__) runs its own code, "
                               "which a trace cannot follow")
    if cls is slice:  # unhashable before Python 3.12; by value and type (1 == 1.0)
        leaf = typed((leaf.start, leaf.stop, leaf.step))
    if cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__:
        return (_BY_ID, id(leaf))   # equal only to itself: by id, not kept alive by the key
    try:
        hash(leaf)
    except Exception:   # noqa: BLE001 -- unhashable, or a hash of the user's that raises
        return (_BY_ID, id(leaf))
    if cls is int or cls is str or cls is bool or leaf is None:   # the common statics
        return (_STATIC, cls, leaf)
    if isinstance(cls.__eq__, types.FunctionType):   # the user's ``==``: see ``_Compared``
        return (_STATIC, _Compared(typed(leaf)))
    return (_STATIC, typed(leaf))


class _Compared:
    """A static value whose class compares in Python, as a key holds it: the user's ``==``
    may return an array (an array-like) or raise, where a key lookup needs a bool. Such a
    comparison counts as not equal (the call traces a signature of its own)."""

    __slots__ = ("value", "hash")

    def __init__(self, value):
        self.value, self.hash = value, hash(value)

    def __hash__(self):
        return self.hash

    def __eq__(self, other):
        if type(other) is not _Compared:
            return NotImplemented
        if self.value is other.value:
            return True
        try:
            return bool(self.value == other.value)
        except Exception:   # noqa: BLE001 -- the user's ``==`` raised, or gave no bool
            return False

    def __repr__(self):
        return repr(self.value)


def _array_signature(array: np.ndarray) -> tuple:
    """Shape and dtype, and the axis order of an array laid out otherwise than C's (its
    path compiles for that order: ``input_layouts``)."""
    order = stride_order(array)
    if order is None:
        return (_ARRAY, array.shape, array.dtype)
    return (_ARRAY, array.shape, array.dtype, order)


def typed(value, depth: int = 3):
    """``value`` with the type of each element beside it: ``2`` and ``2.0`` are equal and
    hash alike, but trace differently (``x * n`` is an int array for one of them). Floats
    go by their text: ``-0.0`` is not ``0.0`` there, and every NaN is one value. Tuples,
    frozensets, dataclasses (their fields) and objects whose class compares in Python (their
    ``__dict__``) are typed too, fields ``depth`` objects down: ``Cfg(2) == Cfg(2.0)``. Where
    those fields do not hash, the object stands for itself (its own ``==`` and hash); where
    they do, it stands beside them (state kept outside ``__dict__``: slots, a ``str`` base)."""
    cls = type(value)
    if cls is int or cls is str or cls is bool or value is None:
        return (cls, value)
    if cls is float or isinstance(value, (float, complex, np.inexact)):
        return (cls, repr(value))
    if isinstance(value, tuple):
        return (cls, tuple([typed(v, depth) for v in value]))
    if cls is frozenset:
        return (cls, frozenset([typed(v, depth) for v in value]))
    fields = _fields(value, cls) if depth else None
    if fields is None:
        return (cls, value)
    fields = (cls, tuple([typed(v, depth - 1) for v in fields]), value)   # and its own ==
    try:
        hash(fields)
    except TypeError:
        return (cls, value)
    return fields


def _fields(value, cls) -> list | None:
    """A dataclass's field values, or the (name, value) items of the ``__dict__`` of an object
    whose class compares in Python; None for any other object (compared by its own ``==``)."""
    names = _FIELD_NAMES.get(cls)
    if names is None and hasattr(cls, "__dataclass_fields__"):
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    if names is not None:
        try:
            return [getattr(value, name) for name in names]
        except AttributeError:
            return None
    attrs = getattr(value, "__dict__", None)
    if type(attrs) is dict and isinstance(cls.__eq__, types.FunctionType):
        return sorted(attrs.items())
    return None


_FIELD_NAMES: dict = {}   # a dataclass -> its fields' names (``dataclasses.fields`` is slow)


def by_identity(leaves) -> list:
    """The leaves a key holds by their id."""
    return [leaf for leaf in leaves if type(leaf) is not np.ndarray
            and leaf_signature(leaf)[0] == _BY_ID]


def pin(entries: dict, key, objects) -> list:
    """What keeps a key that holds ``objects`` by id from outliving them (another object may
    then get the same id): a weak reference whose callback drops the entry when its object
    dies, or the object itself where it takes no weak reference."""
    def forget(_ref, entries=entries, key=key):
        entries.pop(key, None)

    pins = []
    for obj in objects:
        try:
            pins.append(weakref.ref(obj, forget))
        except TypeError:
            pins.append(obj)
    return pins


def check_dtype(signature) -> None:
    if isinstance(signature, tuple) and signature[0] in (_ARRAY, _GENERIC):
        dtype = signature[2] if signature[0] == _ARRAY else signature[1]
        if dtype not in SUPPORTED_DTYPES or not dtype.isnative:
            raise UntraceableInput(f"dtype {dtype} is not supported by the compiler")


def make_key(args, kwargs, target, containers: list | None = None):
    """The cache key and the leaves. An array passed twice (``f(a, a)``) is one proxy while
    tracing (``x is y`` holds): such calls key apart from calls with two arrays.
    ``containers`` gets the ids of the arguments' dicts, lists and tuples, in key order
    (none where all the arguments are arrays)."""
    if not kwargs:  # the common case, positional arrays only: no flattening
        signature = []
        for a in args:
            if type(a) is not np.ndarray:
                break
            order = None if a.flags.c_contiguous else stride_order(a)   # no call: hot path
            signature.append((a.shape, a.dtype) if order is None else (a.shape, a.dtype, order))
        else:
            if len(args) > 1 and _repeated(args):
                return ("arrays", tuple(signature), _repeats(args), target), args
            return ("arrays", tuple(signature), target), args
    leaves: list = []
    if containers is None:
        containers = []
    try:
        structure = _structure((args, kwargs), leaves, containers)
    except RecursionError:
        raise UntraceableInput("the arguments nest too deeply to be keyed (a dict or list "
                               "that holds itself?)") from None
    if len(set(containers)) < len(containers):
        structure = (structure, _shared(containers))
    if len(set(map(id, leaves))) < len(leaves) and _repeated(
            [leaf for leaf in leaves if type(leaf) is np.ndarray]):
        return (structure, _repeats(leaves), target), leaves
    return (structure, target), leaves


def _repeated(arrays) -> bool:
    if len(arrays) == 2:   # the common cases, two or three positional arrays: no set
        return arrays[0] is arrays[1]
    if len(arrays) == 3:
        a, b, c = arrays
        return a is b or a is c or b is c
    return len(set(map(id, arrays))) < len(arrays)


def _shared(containers: list) -> tuple:
    """For each container (in ``_structure``'s order), the position of the first that is the
    same object. ``f(x, d, d)`` traces with one dict under both names (``share_repeated``):
    its replay reads both names' items from the first, so it must not serve ``f(x, d1,
    d2)``, nor the other way round."""
    first: dict = {}
    return tuple(first.setdefault(ident, i) for i, ident in enumerate(containers))


def _repeats(leaves) -> tuple:
    """For each leaf, the position of the first leaf that is the same array."""
    first: dict = {}
    return tuple(first.setdefault(id(leaf), i) if type(leaf) is np.ndarray else i
                 for i, leaf in enumerate(leaves))


def _structure(tree, leaves: list, containers: list):
    """The key's part for ``tree``: its containers (as ``pytree.flatten`` sees them, dicts in
    insertion order) with each leaf's signature in place; the leaves go to ``leaves``, the
    containers' ids to ``containers``. Plain tuples, built without ``flatten``'s TreeDef
    objects: this runs on every call."""
    cls = type(tree)
    if cls is np.ndarray:   # the most common node first
        leaves.append(tree)
        return _array_signature(tree)
    if cls is dict:
        containers.append(id(tree))
        keys = tuple(tree)
        kinds = tuple(map(type, keys))   # 1, 1.0 and True are one key to a dict, not to us
        if float in kinds or complex in kinds:
            keys = tuple([typed(k) for k in keys])
        return (dict, keys, kinds, _children(tree.values(), leaves, containers))
    if cls is tuple or cls is list or (isinstance(tree, tuple) and hasattr(cls, "_fields")):
        containers.append(id(tree))
        return (cls, _children(tree, leaves, containers))
    leaves.append(tree)
    return leaf_signature(tree)


def _children(items, leaves: list, containers: list) -> tuple:
    """``_structure`` of each item; a C-contiguous array's signature made here (a dict of
    parameters: most items are such arrays)."""
    signatures = []
    for item in items:
        if type(item) is np.ndarray and item.flags.c_contiguous:
            leaves.append(item)
            signatures.append((_ARRAY, item.shape, item.dtype))
        else:
            signatures.append(_structure(item, leaves, containers))
    return tuple(signatures)
