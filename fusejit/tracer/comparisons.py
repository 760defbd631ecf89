"""``np.allclose`` and ``np.array_equal``: a Python bool computed from traced arrays.

NumPy computes them as ``bool(np.all(...))``; run as a host call, their Python bool is no
array, and the signature ran eagerly. Here the reduction is traced and its answer is a proxy
whose value is that Python bool: returned, it comes back as ``bool`` on every replay;
branched on (``if np.allclose(a, b):``), it is a guard, as any traced bool."""
from __future__ import annotations

import numpy as np

from .registry import implements, unsupported
from .tracer import Tracer, wrap


@implements(np.allclose)
def _allclose(rec, concrete, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    close = np.all(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))
    return _python_bool(rec, concrete, close)


@implements(np.array_equal)
def _array_equal(rec, concrete, a1, a2, equal_nan=False):
    if not (_array(a1) and _array(a2)):
        raise unsupported("np.array_equal of a list")   # NumPy's, run as a host call
    if np.shape(a1) != np.shape(a2):
        return concrete                 # False for every call: shapes are part of the key
    same = a1 == a2
    if equal_nan and _inexact(a1) and _inexact(a2):
        same = same | (np.isnan(a1) & np.isnan(a2))
    return _python_bool(rec, concrete, np.all(same))


def _array(value) -> bool:
    return isinstance(value, np.ndarray) or (isinstance(value, Tracer)
                                             and isinstance(value.value, np.ndarray))


def _inexact(value) -> bool:
    return np.result_type(value).kind in "fc"


def _python_bool(rec, concrete: bool, answer):
    """A proxy of ``concrete`` (NumPy's Python bool) computed as the traced ``answer``."""
    if not isinstance(answer, Tracer):   # a fallback was set on the way: no more recording
        if rec.fallback is None:
            raise unsupported("a comparison whose answer was not traced")
        return concrete
    return wrap(rec, concrete, rec.emit("copy", [answer.ir_var]))
