"""``np.float32(x)`` and NumPy's other scalar types called on a traced value.

A scalar type is a class whose constructor reads its argument in C (``__array__``, or a
Python float's own value): called on a traced value it would end the trace (the signature ran
eagerly) or freeze the value with a guard on it (a ``.item()`` float: traced again for every
value). The class itself cannot be replaced in the body's ``numpy`` (``creation.NumpyView``):
``x.dtype.type is np.float32`` and ``isinstance(v, np.float32)`` must see NumPy's. So the view
gives a wrapper only where the attribute is loaded to be called right away -- the caller's
bytecode marks such a load (``_call_loads``) -- and NumPy's class everywhere else.

The wrapper records what the constructor computes: for an array, a cast to that dtype (the
array itself where it has that dtype already, as NumPy gives it back); for a 0-d value or a
traced Python float, a NumPy scalar of that type (a cast, or a copy where the dtype is that
already: a traced Python float then promotes as NumPy's float64 does, no longer weak). Other
arguments (none traced, a string, several) go to NumPy's class. A global bound to a type
(``from numpy import float32``) is wrapped alike where it is called (``overlay.Overlay``); a
type bound to a local name first (``f32 = np.float32``) is NumPy's class, which runs the
signature eagerly (docs/tracing.md, "Weak floats")."""
from __future__ import annotations

import dis
import functools
import sys

import numpy as np

from ..ir.types import SUPPORTED_DTYPES
from .context import surface
from .guards import live
from .math_view import float_tracer
from .registry import FUNCTIONS
from .tracer import Tracer

_ATTRIBUTE_LOADS = ("LOAD_ATTR", "LOAD_METHOD")
_METHOD_BIT = sys.version_info >= (3, 12)   # LOAD_ATTR's low oparg bit: a method-style load


def _is_scalar_type(value) -> bool:
    """A concrete NumPy scalar type of a dtype the compiler takes (not ``np.floating``)."""
    if not (isinstance(value, type) and issubclass(value, (np.number, np.bool_))):
        return False
    try:
        return np.dtype(value).type is value and np.dtype(value) in SUPPORTED_DTYPES
    except TypeError:   # an abstract type
        return False


NAMES = frozenset(name for name in dir(np) if _is_scalar_type(getattr(np, name, None)))
TYPES = frozenset(getattr(np, name) for name in NAMES)


def called(frame) -> bool:
    """Whether the attribute ``frame`` is loading now is loaded to be called right away."""
    code = frame.f_code
    offsets = _CALLS.get(code)
    if offsets is None:
        offsets = _CALLS[code] = _call_loads(code)
    return frame.f_lasti in offsets


def _call_loads(code) -> frozenset:
    """The offsets of the loads in ``code`` whose value is called right away: ``LOAD_METHOD``
    (3.11), ``LOAD_ATTR`` with its method bit (3.12), and where a ``LOAD_GLOBAL`` pushed the
    call's NULL (``float32(...)``; Python compiles a call of an imported module's attribute
    so too), the global itself or the last attribute loaded from it."""
    found = []
    instructions = list(dis.get_instructions(code))
    for k, ins in enumerate(instructions):
        after = instructions[k + 1] if k + 1 < len(instructions) else None
        last = after is None or after.opname not in _ATTRIBUTE_LOADS
        if ins.opname == "LOAD_GLOBAL" and ins.arg & 1 and last:
            found.append(ins.offset)
        if ins.opname not in _ATTRIBUTE_LOADS:
            continue
        before = instructions[k - 1] if k else None
        if ins.opname == "LOAD_METHOD" or (_METHOD_BIT and ins.arg & 1) or (
                before is not None and before.opname == "LOAD_GLOBAL" and before.arg & 1
                and last):
            found.append(ins.offset)
    return frozenset(found)


_CALLS: dict = {}   # code object -> ``_call_loads``; the body's code lives as long as fusejit


@functools.cache
def wrapper(scalar_type):
    @functools.wraps(scalar_type, updated=())
    def construct(*args, **kwargs):
        traced = _traced(args[0]) if len(args) == 1 and not kwargs else None
        if traced is None:
            return scalar_type(*args, **kwargs)
        return surface(scalar_type, _record, (traced,), {})
    return construct


def _traced(value):
    """The proxy ``value`` is or stands for (an ``.item()`` float), when traced now."""
    if isinstance(value, Tracer):
        return value if live(value) else None
    return float_tracer(value)


def traced_scalar(value):
    """``_traced`` for a scalar (a NumPy scalar's proxy, a Python float's), not an array."""
    traced = _traced(value)
    return None if traced is None or isinstance(traced.value, np.ndarray) else traced


def scalar_array(convert, value, args, kwargs):
    """``np.asarray(value, ...)`` of a traced scalar: a new 0-d array, recorded."""
    return surface(lambda v: convert(v, *args, **kwargs), _record, (traced_scalar(value),), {})


def _record(rec, concrete, x):
    """What ``np.astype`` records (``x`` itself, a copy or a cast), to NumPy's result dtype."""
    return FUNCTIONS[np.astype](rec, concrete, x, concrete.dtype)
