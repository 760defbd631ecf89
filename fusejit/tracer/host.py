"""Host ops: NumPy calls the compiler does not map run as opaque ``host`` nodes at run time.

The call is recorded as it was made: ``fn`` (the NumPy callable), ``name`` (its dotted name for
the printer), ``spec`` (a hashable template of ``(args, kwargs)`` in which each array operand is
a ``("__operand__", k)`` placeholder for the node's k-th input; lists, tuples, dicts and slices
are tagged) and ``nout``. Output types come from NumPy's own result. Outputs whose shape depends
on the data (``np.nonzero``, ``np.unique``, ``x[mask]``, one-argument ``np.where``) each get a
``shape`` guard where code planned for that shape reads them (``dynamic.py``), so that a
replay whose shape differs takes another path there.

Calls that cannot be replayed (file I/O, random numbers, results that are not arrays) are eager
fallbacks with the reason.
"""
from __future__ import annotations

import numpy as np

from ..errors import EagerFallback
from ..ir import TensorType
from ..ir.types import numeric
from .context import active, surface, unwrap
from .dynamic import call_leaves, note_host_results
from .guards import add_guard
from .registry import WRITERS
from .tracer import Tracer, wrap

DENYLIST_MODULES = ("numpy.random", "numpy.lib.npyio", "numpy.lib._npyio_impl", "numpy.testing")
DENYLIST = frozenset({"save", "savez", "savez_compressed", "savetxt", "load", "loadtxt",
                      "genfromtxt", "fromfile", "tofile", "memmap", "frombuffer", "asarray",
                      "asanyarray", "array", "ascontiguousarray", "shares_memory",
                      "may_share_memory"})
DATA_DEPENDENT = frozenset({"nonzero", "flatnonzero", "argwhere", "unique", "unique_values",
                            "unique_counts", "unique_inverse", "unique_all", "extract",
                            "compress", "trim_zeros", "where", "getitem", "setdiff1d",
                            "intersect1d", "union1d", "setxor1d", "bincount", "delete",
                            "insert", "histogram", "histogram_bin_edges", "roots"})


def refusal(fn, name: str) -> str | None:
    """Why ``fn`` cannot be a host op, or None."""
    module = getattr(fn, "__module__", "") or ""
    short = getattr(fn, "__name__", name)
    if module.startswith(DENYLIST_MODULES) or short in DENYLIST:
        return f"{name} cannot be replayed (I/O, randomness or raw memory)"
    if fn in WRITERS:   # their own recorders trace the write (reached only if one refused)
        return f"{name} writes into its argument, which a host op would not replay"
    return None


class _Template:
    """Builds the spec; collects the array operands in order."""

    def __init__(self, recorder):
        self.recorder, self.operands = recorder, []

    def encode(self, item):
        if isinstance(item, (Tracer, np.ndarray)):
            self.operands.append(self.recorder.operand(item))
            python = type(item.value) if isinstance(item, Tracer) else None
            if python in (float, int, bool, complex):   # a weak scalar: Python's own again
                return ("__operand__", len(self.operands) - 1, python)
            return ("__operand__", len(self.operands) - 1)
        if type(item) in (list, tuple):
            tag = "__list__" if type(item) is list else "__tuple__"
            return (tag, *(self.encode(x) for x in item))
        if type(item) is dict:
            return ("__dict__", *((k, self.encode(v)) for k, v in sorted(item.items())))
        if type(item) is slice:
            return ("__slice__", item.start, item.stop, item.step)
        if isinstance(item, float) and type(item) is not float and not isinstance(
                item, np.generic):
            return self._traced_float(item)
        try:
            hash(item)
        except TypeError:
            raise EagerFallback(
                f"host call with an argument of type {type(item).__name__}") from None
        return item


    def _traced_float(self, item):
        """An ``.item()`` value passed as a parameter (``np.percentile(x, q)``): an operand
        given back as a Python float, so a replay passes the value it computed; outside its
        trace, its value, guarded."""
        from .scalars import TracedFloat
        if isinstance(item, TracedFloat) and item.live() and \
                item.tracer.recorder is self.recorder:
            self.operands.append(self.recorder.operand(item.tracer))
            return ("__operand__", len(self.operands) - 1, float)
        return item._guard() if isinstance(item, TracedFloat) else float.__float__(item)


def _results(concrete, name):
    results = tuple(concrete) if isinstance(concrete, (tuple, list)) else (concrete,)
    if not results or not all(isinstance(r, (np.ndarray, np.generic)) for r in results):
        raise EagerFallback(f"host call {name} returned {type(concrete).__name__}, not arrays")
    for r in results:
        if type(r) is not np.ndarray and not isinstance(r, np.generic) or \
                not numeric(r.dtype):
            raise EagerFallback(f"host call returning {type(r).__name__} of dtype {r.dtype}")
    return results


def record_host(rec, concrete, fn, name, args, kwargs, data_dependent=False):
    reason = refusal(fn, name)
    if reason is not None:
        raise EagerFallback(reason)
    if kwargs.get("out") is not None:
        return _record_into_out(rec, fn, name, args, kwargs, data_dependent)
    results = _results(concrete, name)
    _refuse_identity(results, name, args, kwargs)
    template = _Template(rec)
    spec = (template.encode(tuple(args)), template.encode(dict(kwargs)))
    types = [TensorType(np.shape(r), r.dtype) for r in results]
    attrs = {"fn": fn, "name": name, "spec": spec, "nout": len(results)}
    outs = rec.emit_typed("host", template.operands, attrs, types)
    _note_views(rec, results, name, args, kwargs)
    if len(outs) == 1 and len(template.operands) == 1 and rec.opaque_views \
            and rec.opaque_views[-1][0] is results[0]:
        rec.host_views.add(outs[0])
    proxies = [wrap(rec, r, var) for r, var in zip(results, outs, strict=True)]
    data_dependent = data_dependent or getattr(fn, "__name__", "") in DATA_DEPENDENT
    note_host_results(rec, outs, data_dependent and rec.shapes_vary)   # dynamic.py
    if data_dependent:
        for r, var in zip(results, outs, strict=True):
            if var.type.ndim == 0 or not rec.shapes_vary:
                add_guard(rec, var, "shape", tuple(np.shape(r)))
    if isinstance(concrete, (tuple, list)):
        return _same_container(concrete, proxies)
    return proxies[0]


def _record_into_out(rec, fn, name, args, kwargs, data_dependent):
    """``np.take(x, i, out=o)``, ``x.round(1, out=o)``: the call without ``out=`` as a host
    op, then a traced write of its result into ``o``, which is returned (NumPy returns
    ``out`` itself). Where NumPy's result without ``out=`` has another dtype or shape than
    ``o`` (it may then compute in ``o``'s dtype), the signature runs eagerly."""
    from .ufuncs import write_out
    out = kwargs["out"]
    target = out[0] if type(out) is tuple and len(out) == 1 else out
    if not isinstance(target, Tracer) and type(target) is not np.ndarray:
        raise EagerFallback(f"{name} with out= of type {type(target).__name__}")
    rest = {k: v for k, v in kwargs.items() if k != "out"}
    fresh = fn(*unwrap(args), **unwrap(rest))
    value = target.value if isinstance(target, Tracer) else target
    if not isinstance(fresh, np.ndarray) or (fresh.dtype, fresh.shape) != (value.dtype,
                                                                            value.shape):
        raise EagerFallback(f"{name} with out= of another dtype or shape than its result")
    result = record_host(rec, fresh, fn, name, args, rest, data_dependent)
    return write_out(rec, target, result.ir_var)


def _refuse_identity(results, name, args, kwargs) -> None:
    """A result that is an operand itself, from a call given a traced number
    (``np.linalg.matrix_power(a, n)`` for n == 1): whether NumPy returns its argument may
    depend on that value, which a replay does not check, so the signature runs eagerly. Given
    arrays and static options alone (``np.atleast_2d(x)``), it depends on what the signature
    fixes (ndim, shape, dtype)."""
    leaves = list(call_leaves((args, kwargs)))
    if not any(isinstance(item, Tracer) and np.ndim(item.value) == 0 for item in leaves):
        return
    operands = {id(item.value if isinstance(item, Tracer) else item) for item in leaves}
    if any(isinstance(r, np.ndarray) and id(r) in operands for r in results):
        raise EagerFallback(f"{name} returned its argument itself, given a traced number: "
                            "a replay cannot tell when it does")


def _note_views(rec, results, name, args, kwargs) -> None:
    """Results that share memory with an operand (``np.flip(h)``) are views the IR does not
    model: a later write into the operand would not reach them on a replay
    (``tracer.check_opaque_views``)."""
    leaves = call_leaves((args, kwargs))
    operands = [item.value if isinstance(item, Tracer) else item for item in leaves]
    operands = [a for a in operands if isinstance(a, np.ndarray)]
    for r in results:
        if isinstance(r, np.ndarray) and any(np.may_share_memory(r, a) for a in operands):
            rec.opaque_views.append((r, name))


def _same_container(concrete, items):
    """``items`` in the container type NumPy returned: a named tuple (``QRResult``,
    ``EighResult``, ``SVDResult``, ``SlogdetResult``) takes its fields positionally."""
    if isinstance(concrete, tuple) and hasattr(type(concrete), "_make"):
        return type(concrete)._make(items)
    return type(concrete)(items)


def _round_float(value, ndigits: int):
    return np.float64(round(value, ndigits))


def python_round(tracer, ndigits: int):
    """``round(v, ndigits)`` of a Python float argument, as Python rounds it: a float,
    correctly rounded (``np.round`` scales by ``10**ndigits``, which can overflow to inf and
    round a halfway decimal otherwise); a host op each replay runs again."""
    rec, value = tracer.recorder, round(tracer.value, ndigits)
    if active() is not rec:
        return value
    template = _Template(rec)
    spec = (template.encode((tracer, ndigits)), template.encode({}))
    attrs = {"fn": _round_float, "name": "round", "spec": spec, "nout": 1}
    [var] = rec.emit_typed("host", template.operands, attrs,
                           [TensorType((), np.dtype(np.float64), weak=True)])
    return Tracer(value, var, rec)


def host_call(fn, name, args, kwargs, data_dependent=False):
    """Run ``fn`` and record it as a host op (through ``surface``: concrete result first). A
    call that recorded traced work of its own meanwhile (a function given to
    ``np.apply_along_axis`` that reads a traced value) runs eagerly: the replay would call it
    with that value as it was while tracing."""
    rec = active()
    before = (len(rec.nodes), len(rec.guards)) if rec is not None else None

    def record(rec, concrete, *a, **kw):
        if (len(rec.nodes), len(rec.guards)) != before:
            raise EagerFallback(f"a function given to {name} computed with traced values")
        return record_host(rec, concrete, fn, name, a, kw, data_dependent)
    return surface(fn, record, args, kwargs)
