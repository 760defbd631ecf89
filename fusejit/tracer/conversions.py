"""``np.asarray``, ``np.asanyarray`` and ``np.array`` on traced arrays, while a trace runs.

NumPy's array constructors are C functions that NEP 18 does not reach: given a Tracer they call
its ``__array__``, which turns the traced value into a concrete one and so runs the signature
eagerly. Yet user code calls them on what already is an array, most often ``x = np.asarray(x)``
at the top of a function. While a trace runs, those attributes of the ``numpy`` module are
wrapped: a traced array as the first argument gets what NumPy gives an array (itself, a cast,
a copy, a reshape for ``ndmin``), recorded like any other op, and a flat list of arrays some of
which are traced gets their stack. Every other call goes to NumPy unchanged. ``np.arange``
is wrapped too: an ``.item()`` value among its arguments is guarded, since its C code reads
the float itself and the result's length depends on it (``from numpy import arange`` keeps
NumPy's, which reads the traced value with no guard: README, "Sharp edges"). Code that imported
a constructor by name (``from numpy import asarray``) keeps NumPy's, and so the eager fallback.

Conversions to a layout (``np.ascontiguousarray``, ``np.asfortranarray``, ``order="C"`` or
``"F"``) return ``x`` itself or a copy by the layout of the array passed in, and an in-place
update of the result reaches ``x`` in one case only: they follow NumPy's array in the trace and
the path keeps the layouts that decision rests on (``layouts.note``), as a reshape does.
A traced scalar alone (``x.sum()``, a float argument, an ``.item()`` value) given to
``np.asarray``, ``np.asanyarray`` or ``np.array`` with at most a dtype is a new 0-d array, a
copy or cast recorded (``scalar_types.scalar_array``). ``order="A"``, nested lists, lists with
Python numbers, ``like=``, ``device=`` and ``copy=False`` with a cast are left
to NumPy.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
import threading

import numpy as np

from . import layouts
from .context import active
from .scalar_types import scalar_array, traced_scalar
from .tracer import Tracer

# as_strided views the memory of ``np.array(x, copy=None)`` with strides of the user's choice:
# it gets the array itself, and the signature runs eagerly.
_AS_STRIDED = np.lib.stride_tricks.as_strided.__code__
RAW_MEMORY = ("np.lib.stride_tricks.as_strided views the array's raw memory, which fusejit "
              "does not trace")
# ``np.ma`` makes its masked array a view of the array itself, in C: it gets the array, and
# the signature runs eagerly.
_MASKED = os.path.dirname(np.ma.core.__file__)
MASKED = "np.ma makes a masked array of the array's memory, which fusejit does not trace"
DUCK_CONVERSION = ("a conversion to an array of an object of class {} (its __array__), which reads "
                   "the arrays it holds in code of its own")
_lock = threading.Lock()
_depth = 0             # traces running, over all threads
_originals: dict = {}  # name -> NumPy's function, while wrapped


@contextlib.contextmanager
def traced_conversions():
    """Wrap the constructors for the duration of a trace (nested or concurrent traces share
    one wrapping; the last to finish restores NumPy's functions)."""
    global _depth
    with _lock:
        if _depth == 0:
            for name, convert in _CONVERTERS.items():
                _originals[name] = getattr(np, name)
                setattr(np, name, _wrapper(_originals[name], convert))
            _originals["arange"] = np.arange
            np.arange = _guarding(np.arange)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                for name, original in _originals.items():
                    if getattr(getattr(np, name), "__wrapped__", None) is original:
                        setattr(np, name, original)
                _originals.clear()


_COPY_MODES = {np._CopyMode.ALWAYS: True, np._CopyMode.IF_NEEDED: None,
               np._CopyMode.NEVER: False}   # ``copy=np._CopyMode.IF_NEEDED``, as SciPy passes


def _wrapper(original, convert):
    takes_copy = "copy" in inspect.signature(original).parameters

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        if args and active() is not None:
            first = args[0]
            if isinstance(kwargs.get("copy"), np._CopyMode):
                kwargs = {**kwargs, "copy": _COPY_MODES[kwargs["copy"]]}
            if type(first) in (list, tuple) and kwargs.get("copy", True) is not False:
                first = _stacked(first)
                if first is not None and takes_copy:
                    kwargs = {**kwargs, "copy": None}    # the stack is the new array
            caller = sys._getframe(1).f_code
            if _traced_array(first) and (caller is _AS_STRIDED or
                                         caller.co_filename.startswith(_MASKED)):
                active().set_fallback(RAW_MEMORY if caller is _AS_STRIDED else MASKED)
                args = (first.value, *args[1:])
            elif _traced_array(first):
                result = convert(first, *args[1:], **kwargs)
                if result is not NotImplemented:
                    return result
            elif convert in (_asarray, _array) and _scalar_call(args, kwargs):
                return scalar_array(original, first, args[1:], kwargs)
            elif _users_array_like(first):   # its ``__array__`` reads the arrays it holds,
                active().set_fallback(DUCK_CONVERSION.format(type(first).__name__))
                if active().unswap is not None:   # not their proxies
                    active().unswap()
        return original(*args, **kwargs)
    return wrapper


def _users_array_like(value) -> bool:
    """An object of a user class that NumPy converts through its ``__array__``."""
    from .code_reads import users_class
    return hasattr(type(value), "__array__") and not isinstance(
        value, (np.ndarray, np.generic, Tracer)) and users_class(type(value))


def _scalar_call(args, kwargs) -> bool:
    """``np.asarray(s)``/``np.array(s, dtype)`` of a traced scalar (``x.sum()``, a float
    argument, an ``.item()`` value): a 0-d array of it, recorded (``scalar_types``)."""
    return len(args) <= 2 and set(kwargs) <= {"dtype"} and traced_scalar(args[0]) is not None


def _guarding(original):
    """``np.arange(v)`` of an ``.item()`` value: NumPy's C code reads the float itself, and
    the result's length depends on it, so the value is guarded (a new one traces again)."""
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        from .scalars import TracedFloat
        if active() is not None:
            args = tuple(a._guard() if isinstance(a, TracedFloat) else a for a in args)
            kwargs = {k: v._guard() if isinstance(v, TracedFloat) else v
                      for k, v in kwargs.items()}
        return original(*args, **kwargs)
    return wrapper


def _traced_array(value) -> bool:
    return isinstance(value, Tracer) and type(value.__dict__.get("value")) is np.ndarray


def _stacked(items):
    """``np.stack(items)`` for a flat list of arrays or NumPy scalars of one shape, at least
    one of them traced (``np.array([a, b])``, ``np.array([loss1, loss2])``): what NumPy builds
    from them, a new array. None for anything else (nested lists, Python numbers)."""
    def array_like(item):
        if isinstance(item, Tracer):
            return not item.weak
        return isinstance(item, (np.ndarray, np.generic))
    if not items or not any(isinstance(item, Tracer) for item in items):
        return None
    if not all(array_like(item) for item in items) or len({np.shape(i) for i in items}) != 1:
        return None
    return np.stack(items)


def _asarray(a, dtype=None, order=None, *, device=None, copy=None, like=None):
    if like is not None or device not in (None, "cpu"):
        return NotImplemented
    return _converted(a, dtype, order, copy)


def _array(a, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, like=None):
    if like is not None:
        return NotImplemented
    result = _converted(a, dtype, order, copy)
    if result is NotImplemented or ndmin <= a.ndim:
        return result
    return result.reshape((1,) * (ndmin - a.ndim) + a.shape)


def _converted(a, dtype, order, copy):
    """What NumPy gives for array ``a``: ``a`` itself, a cast or a copy."""
    value = a.value
    order = order.upper() if isinstance(order, str) else order
    if order not in (None, "K", "C", "F"):
        return NotImplemented     # "A": itself or a copy, by the layout of each call's array
    if dtype is not None and np.dtype(dtype) != value.dtype:
        if copy is False:
            return NotImplemented
        a, copy = a.astype(dtype), None     # a new array: laid out anew below if need be
    if order in ("C", "F"):
        return laid_out(a, order, copy)
    return np.copy(a) if copy else a


def laid_out(a, order, copy):
    """``a`` itself where NumPy's array is already ``order``-contiguous and no copy is
    asked for, else a copy laid out in ``order``. Which one rests on the layout of the traced
    call's arrays, which the path keeps (``layouts.note``); ``copy=False`` where a copy is
    needed is NumPy's to refuse."""
    flags = a.value.flags
    if a.value.size > 1:     # x[::2] of a 1-d x is contiguous in neither order
        layouts.note(active(), a)
    if copy is not True and (flags.c_contiguous if order == "C" else flags.f_contiguous):
        return a
    if copy is False:
        return NotImplemented
    return np.copy(a, order=order)


def _contiguous(order):
    def convert(a, dtype=None, *, like=None):
        if like is not None:
            return NotImplemented
        result = _converted(a, dtype, order, None)
        if result is NotImplemented or result.ndim:
            return result
        return result.reshape(1)          # at least 1-d: a view of a 0-d array, as NumPy's
    return convert


_CONVERTERS = {"asarray": _asarray, "asanyarray": _asarray, "array": _array,
               "ascontiguousarray": _contiguous("C"), "asfortranarray": _contiguous("F")}
