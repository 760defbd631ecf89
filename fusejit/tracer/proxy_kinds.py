"""The proxy's class for each kind of traced value, so that the body's feature tests
(``hasattr(v, "__len__")``, ``hasattr(lr, "shape")``, ``isinstance(v, Iterable)``,
``try: len(v) except TypeError``) take the branch they take eagerly.

``Tracer.__new__`` makes each proxy an instance of a subclass of the requested class, built
once per class and kind of value:

- an **array**'s has the sequence protocol (``len``, iteration, ``in``, item assignment) and
  is not hashable (``__hash__`` is None, as ``ndarray``'s);
- a **NumPy scalar**'s (one class per scalar type, named as NumPy's, so Python's messages
  read as eagerly: ``'numpy.float32' object is not iterable``) can be indexed (``s[()]``),
  and its ``__iter__`` is None, as Python spells "not iterable";
- a **Python float** argument's (named ``float``) has neither.

A scalar's or float's proxy hides from the user's code (``hasattr``, ``getattr``) every
attribute its value's type lacks: ``shape`` and ``sum`` of a float, ``__index__`` of
``np.float64``, ``__array_function__``. fusejit's and NumPy's own code still find them, and
operators and NumPy's dispatch look them up on the class, never through the instance.
"""
from __future__ import annotations

import sys

import numpy as np

from .loc import classify

# attributes of a proxy's own (``Tracer.__init__``, ``CapturedTracer``)
_OWN = frozenset({"value", "recorder", "link", "owns", "path", "masked_read"})
# looked up on the instance by NumPy's compiled code, which has no frame of its own: the
# frame seen is the user's line, so these are never hidden
_KEEP = frozenset({"__array__", "__array_priority__", "__array_interface__",
                   "__array_struct__", "__dict__", "__weakref__", "__class__",
                   "__getattribute__", "__getattr__", "__setattr__", "__init__", "__new__",
                   "__module__", "__qualname__", "__doc__", "__annotations__",
                   "__reduce_ex__", "__reduce__"})


def type_name(value) -> str:
    """A type's name as Python's messages print it: ``float``, ``numpy.float32``."""
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else \
        f"{kind.__module__}.{kind.__name__}"


class Indexed:
    """``x[key]``: an array's or a NumPy scalar's (``s[()]``, ``s[...]``)."""

    def __getitem__(self, key):
        from .indexing import getitem
        return getitem(self, key)


class Sequence(Indexed):
    """What an array has and a scalar lacks: ``len``, iteration, ``in``, item assignment."""

    def __len__(self):
        from .tracer import note_shape_seen
        note_shape_seen(self)
        return len(self.value)

    def __contains__(self, value):
        """``v in x``: NumPy's ``(x == v).any()``, its truth guarded."""
        if isinstance(value, (str, bytes)):   # never equal to a number: NumPy's False
            return value in self.value
        return bool(np.any(self == value))

    def __iter__(self):
        """The rows, as NumPy iterates; a 0-d array refuses at once, as eagerly."""
        from .tracer import note_shape_seen
        if self.value.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        note_shape_seen(self)
        return (self[i] for i in range(len(self.value)))

    def __setitem__(self, key, value):
        from .indexing import setitem
        setitem(self, key, value)


class Scalar(Indexed):
    __iter__ = None   # not iterable (``iter``, ``in``, ``isinstance(s, Iterable)``)


class HidesMissing:
    """A scalar's or a float's proxy: what its value's type lacks is hidden from user code."""

    __slots__ = ()
    _hidden: frozenset = frozenset()
    _shown = "float"   # the value's type, as messages name it

    def __getattribute__(self, name):
        if name in type(self)._hidden and \
                classify(sys._getframe(1).f_code.co_filename) == "user":
            raise AttributeError(f"'{type(self)._shown}' object has no attribute {name!r}")
        return object.__getattribute__(self, name)


_variants: dict = {}


def variant(cls, value) -> type:
    """``cls``'s subclass for ``value``'s kind (``cls`` itself where it is one already)."""
    if "_proxy_kind" in cls.__dict__:
        return cls
    array = isinstance(value, np.ndarray)
    key = (cls, None if array else type(value))
    found = _variants.get(key)
    if found is None:
        found = _variants[key] = _make(cls, value, array)
    return found


def _make(cls, value, array: bool) -> type:
    if array:
        # not hashable, as ndarray (``isinstance(x, Hashable)`` is False)
        return type(cls.__name__, (cls, Sequence), {**_namespace(cls, "array"),
                                                    "__hash__": None})
    mixins = (HidesMissing,) if type(value) is float else (HidesMissing, Scalar)
    made = type(type_name(value), (cls, *mixins), _namespace(cls, "scalar"))
    made._hidden, made._shown = hidden_names(made, type(value)), type_name(value)
    return made


def hidden_names(cls, value_type) -> frozenset:
    """What ``cls`` has and ``value_type`` lacks, for ``HidesMissing``."""
    names = {name for klass in cls.__mro__ for name in vars(klass)} | _OWN
    return frozenset(name for name in names - set(dir(value_type)) - _KEEP
                     if not name.startswith("_") or name.endswith("__"))


def _namespace(cls, kind: str) -> dict:
    return {"_proxy_kind": kind, "__qualname__": cls.__qualname__,
            "__module__": cls.__module__, "__doc__": cls.__doc__}
