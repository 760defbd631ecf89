"""Arrays the body creates (``np.zeros``, ``np.empty``, ``np.full``, ``np.eye``...) as proxies.

An array the body creates from no traced value is plain NumPy: storing traced values into it
(``out[:, :k] = a``, ``Y[np.arange(n), labels] = 1``) or indexing it with a traced index
(``np.eye(n)[labels]``) asks the traced value for a concrete array, and the signature runs
eagerly. So the traced copy of the function (``capture_proxies``) sees, in place of a global
bound to the ``numpy`` module, a view of it whose creation functions return a proxy of NumPy's
result when called with no traced argument; a global bound to one of those functions
(``from numpy import zeros``) gets the wrapped one. A constant fill is a ``full`` node computed
in the kernels; ``np.eye`` and ``np.identity`` are constants of the program. Fortran-ordered
results and ``like=`` are left to NumPy, and so are calls made elsewhere: NumPy's own code,
compiled extensions, and functions of other modules (``overlay`` copies only the helpers that
live in the traced function's module).
"""
from __future__ import annotations

import functools
import sys
import types

import numpy as np

from . import scalar_types
from .context import active, mentions_tracer
from .loc import classify
from .tracer import CapturedTracer, Tracer, wrap

FILLS = {"zeros": 0, "ones": 1, "empty": 0, "zeros_like": 0, "ones_like": 1, "empty_like": 0}
FULLS = ("full", "full_like")
CONSTANTS = ("eye", "identity")


class MadeTracer(CapturedTracer):
    """A constant the body made (``np.eye(n)``), written like a captured array."""

    @property
    def ir_var(self):
        return self.recorder.raw_var(self.value, fresh=True)


def _constant(recorder, result):
    """A proxy of a made constant, registered now: before the body writes into it."""
    proxy = MadeTracer(result, recorder)
    recorder.raw_var(result, fresh=True)
    return proxy


def wrapper(name: str, original):
    @functools.wraps(original)
    def wrapped(*args, **kwargs):
        recorder = active()
        if (recorder is None or recorder.fallback is not None or kwargs.get("like") is not None
                or classify(sys._getframe(1).f_code.co_filename) != "user"):
            return original(*args, **kwargs)
        traced = _traced_full(recorder, name, original, args, kwargs) if name in FULLS else None
        if traced is not None:
            return traced
        result = original(*args, **kwargs)
        if not _plain(result) or mentions_tracer(args, kwargs):
            return result
        return _proxy(recorder, name, result, args, kwargs)
    return wrapped


def _traced_full(recorder, name, original, args, kwargs):
    """``np.full(shape, x.mean())``, ``np.full_like(w, m)`` of a traced scalar fill: NumPy
    reads ``np.asarray(fill)`` (its dtype) or copies the fill into a new array, which a traced
    value cannot give; the fill is cast and broadcast instead. A ``.item()`` float fills as
    its traced value. None: not such a call, NumPy's (an array fill, a 0-d result)."""
    from .scalars import lift
    positional = len(args) > 1
    fill = lift(args[1] if positional else kwargs.get("fill_value"))
    if not isinstance(fill, Tracer) or np.ndim(fill.value) != 0:
        return None
    rest = {key: value for key, value in kwargs.items() if key != "fill_value"}
    if name == "full_like" and isinstance(args[0], Tracer):   # traced as np.full_like
        return original(args[0], fill, *args[2:], **rest)
    tail = list(args[2:])
    if name == "full" and tail and tail[0] is None:
        tail[0] = np.asarray(fill.value).dtype
    elif name == "full" and not tail and rest.get("dtype") is None:
        rest["dtype"] = np.asarray(fill.value).dtype
    result = original(args[0], fill.value, *tail, **rest)
    if not _plain(result) or result.ndim == 0:
        recorder.set_fallback(f"np.{name} of a traced fill into this array")
        return result
    var = recorder.cast(recorder.operand(fill), result.dtype)
    return wrap(recorder, result, recorder.broadcast(var, result.shape))


def _plain(result) -> bool:
    """A C-ordered ndarray of a dtype kernels compute (not ``order="F"``, not a subclass)."""
    return (type(result) is np.ndarray and result.flags.c_contiguous
            and result.dtype.kind not in "OVSUMm")


def _proxy(recorder, name, result, args, kwargs):
    if name in CONSTANTS:
        return _constant(recorder, result)
    if name in FILLS:
        value = FILLS[name]
    else:
        fill = kwargs.get("fill_value", args[1] if len(args) > 1 else None)
        if np.ndim(fill) != 0 or result.size == 0:
            return _constant(recorder, result)
        value = result.reshape(-1)[0].item()
    var = recorder.emit("full", [], {"shape": result.shape, "dtype": result.dtype,
                                     "value": result.dtype.type(value).item()})
    return wrap(recorder, result, var)     # ``result`` itself if the types disagree


NAMES = (*FILLS, *FULLS, *CONSTANTS)
_BY_FUNCTION = {id(getattr(np, name)): name for name in NAMES}


class NumpyView(types.SimpleNamespace):
    """``numpy`` as the traced body sees it: its creation functions wrapped, its scalar types
    where they are called (``scalar_types``), the rest NumPy's."""

    def __getattr__(self, name):
        value = getattr(np, name)
        if name in scalar_types.NAMES and scalar_types.called(sys._getframe(1)):
            return scalar_types.wrapper(value)   # np.float32(x): recorded as a cast
        return value


def numpy_view() -> NumpyView:
    return NumpyView(**{name: wrapper(name, getattr(np, name)) for name in NAMES})


def view_of(recorder) -> NumpyView:
    """The one view of ``numpy`` a trace's code sees, in its globals, defaults, closure cells,
    imports, arguments and ``x.__array_namespace__()``: ``xp is np`` holds in the body where
    it holds eagerly."""
    if recorder.numpy_view is None:
        recorder.numpy_view = numpy_view()
    return recorder.numpy_view


def as_seen(value, recorder):
    """``value`` as the body sees it: the trace's view for the ``numpy`` module."""
    return view_of(recorder) if value is np else value


def replacement(value, view: NumpyView):
    """What a global of the traced copy holds instead of ``value``; None: ``value`` itself."""
    if value is np:
        return view
    name = _BY_FUNCTION.get(id(value))
    if name is not None and value is getattr(np, name):
        return getattr(view, name)
    return None
