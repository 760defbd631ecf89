"""NumPy functions that write into their first argument and return None: ``np.put``,
``np.put_along_axis``, ``np.putmask``, ``np.place``, ``np.fill_diagonal``, and the ``at``
method of every ufunc but ``np.add`` (``np.maximum.at``; ``np.add.at`` is a ``scatter_add``).

Each is recorded as two steps: a host op that runs the function on a copy of the array and
returns the copy (``written_copy``), then a traced write that makes the copy the array's value,
as an ``out=`` target's. The write is what makes the call replayable: an argument, a captured
array or a view is updated where the caller sees it, and a kernel that read the array before
the call reads the old values. NumPy has run the call on the concrete values already, so a bad
index or shape raised from the user's line before anything was recorded; on a replay, NumPy
raises the same error from the host op, before the write.
"""
from __future__ import annotations

import numpy as np

from ..errors import EagerFallback
from .context import unwrap
from .dynamic import reads_dynamic
from .host import record_host
from .registry import function_label, implements
from .tracer import Tracer, write


def written_copy(fn, target, *args, **kwargs):
    """``fn`` run on a copy of ``target``; the copy (the host op's result)."""
    result = np.array(target, copy=True)
    fn(result, *args, **kwargs)
    return result


def record_written(rec, fn, name, target, args, kwargs):
    """``fn(target, *args, **kwargs)``, which NumPy has run on the concrete values: a host op
    computing the written copy, then a traced write of it into ``target``."""
    if not isinstance(target, Tracer) and type(target) is not np.ndarray:
        raise EagerFallback(f"{name} into a {type(target).__name__}")
    if reads_dynamic(rec, (target, *args), kwargs):
        raise EagerFallback(f"{name} writes into an array whose shape depends on the data")
    after = np.array(unwrap(target), copy=True)   # NumPy has written it already
    copy = record_host(rec, after, written_copy, name, (fn, target, *args), kwargs)
    write(rec, target, rec.operand(copy))   # a new array each call: the target's value


def recorder(fn, name: str):
    """The recorder of ``fn``, a NumPy callable that writes into its first argument."""
    def record(rec, concrete, target, *args, **kwargs):
        record_written(rec, fn, name, target, args, kwargs)
        return concrete
    return record


for _fn in (np.put, np.put_along_axis, np.putmask, np.place, np.fill_diagonal):
    implements(_fn, writes=True)(recorder(_fn, function_label(_fn)))


def _put_method(self, *args, **kwargs):
    """``a.put(indices, values, mode)``: ``np.put``'s. On a NumPy scalar, NumPy's own."""
    if not isinstance(self.value, np.ndarray):
        return Tracer.__getattr__(self, "put")(*args, **kwargs)
    return np.put(self, *args, **kwargs)


Tracer.put = _put_method
