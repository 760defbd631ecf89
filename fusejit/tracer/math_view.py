"""The ``math`` module as the traced body sees it.

``loss.item()`` is a ``TracedFloat``, a float subclass; the ``math`` functions read its plain
value in C, so ``math.exp(v)`` or ``if math.isnan(v):`` would be frozen at the trace's value
with nothing to check it on replay. The body's globals (``overlay.py``) hold instead the
``math`` module's functions wrapped here:

- ``exp``, ``log``, ``sqrt``, ``tanh`` and the other one-argument functions NumPy has are
  traced as NumPy's ufunc (a weak float64, as Python float arithmetic is) and return a
  ``TracedFloat``; where Python raises and NumPy would not (``math.log(0.0)``, ``math.exp(1e3)``
  overflowing, ``math.sin(inf)``), the argument is guarded inside the domain, so a call
  outside it traces again and Python raises;
- ``isnan``, ``isinf`` and ``isfinite`` are traced as NumPy's and the answer guarded (a
  finite loss replays for every finite loss);
- any other function guards the exact value of each traced argument, so Python computes it
  as eagerly and another value traces again.
"""
from __future__ import annotations

import functools
import math
import types

import numpy as np

from .context import surface
from .guards import add_guard, live
from .scalars import TracedFloat, lower
from .tracer import Tracer

PREDICATES = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite}
UFUNCS = {"exp": np.exp, "expm1": np.expm1, "log": np.log, "log2": np.log2,
          "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
          "tan": np.tan, "tanh": np.tanh, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh}
DOMAINS = {   # where Python's function returns (NaN passes through every one)
    "log": lambda t: (t > 0) | np.isnan(t), "log2": lambda t: (t > 0) | np.isnan(t),
    "log10": lambda t: (t > 0) | np.isnan(t), "log1p": lambda t: (t > -1) | np.isnan(t),
    "sqrt": lambda t: (t >= 0) | np.isnan(t), "sin": lambda t: ~np.isinf(t),
    "cos": lambda t: ~np.isinf(t), "tan": lambda t: ~np.isinf(t)}
OVERFLOWS = frozenset({"exp", "expm1", "sinh", "cosh"})   # OverflowError for a finite input
ITERABLES = frozenset({"fsum", "prod"})                    # take one iterable of numbers


def _live(value) -> bool:
    return isinstance(value, TracedFloat) and value.live()


def float_tracer(value):
    """The weak-float64 proxy of a traced Python float (an ``.item()`` value, or a float
    argument), else None."""
    if _live(value):
        return value.tracer
    if isinstance(value, Tracer) and type(value.value) is float and live(value):
        return value
    return None


def _plain(value):
    """A traced value's exact value, guarded; a list or tuple of them, item by item
    (``math.fsum``, ``math.prod``)."""
    if _live(value):
        return value._guard()
    if type(value) in (list, tuple) and any(_live(item) for item in value):
        return type(value)(_plain(item) for item in value)
    return value


def _wrapped(function):
    name = function.__name__
    predicate, ufunc = PREDICATES.get(name), UFUNCS.get(name)

    @functools.wraps(function)
    def call(*args, **kwargs):
        traced = float_tracer(args[0]) if len(args) == 1 and not kwargs else None
        if traced is not None and predicate is not None:
            return bool(predicate(traced))
        if traced is not None and ufunc is not None:
            return _traced(function, ufunc, traced)
        if name in ITERABLES and args and type(args[0]) not in (list, tuple):
            args = (list(args[0]), *args[1:])     # a generator or a dict view, read once
        return function(*(_plain(a) for a in args), **{k: _plain(v) for k, v in kwargs.items()})
    return call


def _traced(function, ufunc, t):
    """``function(t)`` computed by Python (it raises where it raises eagerly), recorded as
    ``ufunc``; the argument guarded inside the domain where Python returns."""
    from .ufuncs import record_ufunc
    record = lambda rec, concrete, x: record_ufunc(rec, concrete, ufunc, (x,), weak=True)
    result = surface(function, record, (t,), {})
    name, rec = function.__name__, t.recorder
    if name in DOMAINS:
        add_guard(rec, DOMAINS[name](t).ir_var, "bool", True)
    if name in OVERFLOWS:    # a finite argument's result is finite (Python raised otherwise)
        add_guard(rec, (np.isfinite(result) | ~np.isfinite(t)).ir_var, "bool", True)
    return lower(result)


@functools.cache
def math_view() -> types.ModuleType:
    """``math`` with its functions wrapped (its constants as they are)."""
    view = types.ModuleType("math", math.__doc__)
    for name in dir(math):
        value = getattr(math, name)
        setattr(view, name, _wrapped(value) if callable(value) else value)
    return view


def replacement(value):
    """What a global of the traced copy holds instead of ``value``; None: ``value`` itself."""
    if value is math:
        return math_view()
    if isinstance(value, types.BuiltinFunctionType) and \
            getattr(value, "__module__", None) == "math" and getattr(math, value.__name__,
                                                                     None) is value:
        return getattr(math_view(), value.__name__)
    return None


def traced_builtins(real, numpy_view) -> dict:
    """The builtins of a traced copy: ``real``'s (a module or its dict), with ``__import__``
    giving ``math_view()`` for ``math`` (``import math`` or ``from math import exp`` inside
    the body) and the trace's view of ``numpy`` for ``numpy``, and ``type`` and ``hasattr``
    answering for a proxy as for its value (``type_checks``)."""
    names = dict(real if isinstance(real, dict) else vars(real))
    importer = names["__import__"]

    def traced_import(name, globals=None, locals=None, fromlist=(), level=0):
        module = importer(name, globals, locals, fromlist, level)
        if module is np:   # ``import numpy as np`` in the body: the view its globals hold
            return numpy_view
        return math_view() if module is math else module
    names["__import__"] = traced_import
    from .type_checks import TracedType, traced_hasattr  # they import the tracer
    names["type"], names["hasattr"] = TracedType, traced_hasattr
    return names
