"""The ``__array_function__`` dispatch table (NEP 18): NumPy function -> recorder."""
from __future__ import annotations

import inspect

import numpy as np

from ..errors import EagerFallback, UnsupportedError
from .context import surface, unwrap
from .loc import current_loc
from .tracer import Tracer, note_shape_seen

FUNCTIONS: dict = {}
# functions that write into an argument (``np.copyto``, ``np.put``): their recorders trace the
# write, which a host op running them would lose
WRITERS: set = set()


def implements(*funcs, writes: bool = False):
    def register(record):
        for func in funcs:
            FUNCTIONS[func] = record
            if writes:
                WRITERS.add(func)
        return record
    return register


def function_label(func) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    parts = [p for p in module.split(".") if not p.startswith("_")]
    if parts and parts[0] == "numpy":
        parts[0] = "np"
    return ".".join(parts + [func.__name__])


def unsupported(what: str) -> UnsupportedError:
    return UnsupportedError(f"{what} is not supported by fusejit yet (called at {current_loc()})")


# Functions of the static type only (shape, dtype): answered from the concrete value.
STATIC_FUNCTIONS = frozenset({np.shape, np.ndim, np.size, np.iscomplexobj, np.isrealobj,
                              np.result_type, np.can_cast, np.min_scalar_type})


def handle_function(func, args, kwargs):
    if func in STATIC_FUNCTIONS:
        for arg in args[:1]:
            if isinstance(arg, Tracer):
                note_shape_seen(arg, skip=4)   # np.shape(t), np.size(t) in the user's code
        return func(*unwrap(args), **unwrap(kwargs))
    record = FUNCTIONS.get(func)
    if record is None or _of_dynamic(func, args, kwargs):
        if func is np.squeeze and kwargs.get("axis") is None and len(args) < 2:
            for arg in args[:1]:   # a count of one drops the axis: its ndim follows the data
                if isinstance(arg, Tracer):
                    note_shape_seen(arg, always=True)
        from .host import host_call
        return host_call(func, function_label(func), args, kwargs)
    return surface(func, _or_host_op(func, record), args, kwargs)


def _of_dynamic(func, args, kwargs) -> bool:
    """A call on a value whose shape depends on data (``np.sum(x[m])``): NumPy's own call, a
    host op that takes any shape (``dynamic.py``). Not one that writes into an argument
    (``out=``, ``WRITERS``): a host op's writes would not be traced."""
    from .context import active
    from .dynamic import reads_dynamic
    return kwargs.get("out") is None and func not in WRITERS and reads_dynamic(
        active(), args, kwargs)


def _or_host_op(func, record):
    """``record``, or a host op where it refuses the call's options (``np.sum(x, initial=1)``,
    ``np.reshape(x, s, order="F")``, ``np.einsum("ii->i", a)``): NumPy runs them at replay.
    Not a call that writes an ``out=`` array (a host op's writes would not be traced): that
    one runs eagerly."""
    def apply(rec, concrete, *args, **kwargs):
        try:
            return record(rec, concrete, *args, **kwargs)
        except UnsupportedError:
            if _writes_out(func, args, kwargs):   # NumPy's call, and the signature eager
                raise EagerFallback(f"{function_label(func)} with out= and options fusejit "
                                    "does not trace") from None
            from .host import record_host
            return record_host(rec, concrete, func, function_label(func), args, kwargs)
    return apply


def _writes_out(func, args, kwargs) -> bool:
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return True     # no signature to read: assume it may
    return bound.arguments.get("out") is not None


def normalize_axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


def normalize_axes(axis, ndim: int) -> tuple[int, ...]:
    """None -> all axes; int or tuple -> sorted non-negative ints."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(normalize_axis(int(a), ndim) for a in axis))
    return (normalize_axis(int(axis), ndim),)


def permutation_of(fn, ndim: int) -> tuple[int, ...]:
    """The axis permutation a NumPy transpose-like ``fn`` applies, found on a strided probe
    whose axes have distinct strides (no data is read)."""
    strides = tuple(8 * (i + 1) for i in range(ndim))
    probe = np.lib.stride_tricks.as_strided(np.empty(1), shape=(1,) * ndim, strides=strides)
    return tuple(strides.index(s) for s in fn(probe).strides)


def static_dtype(x) -> np.dtype:
    return getattr(x, "dtype", None) or np.result_type(x)


