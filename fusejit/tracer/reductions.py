"""Reductions, with NumPy's dtype choices reproduced as explicit casts.

``mean`` and ``var`` follow ``numpy/_core/_methods.py``: integer and bool inputs accumulate in
f64, f16 means accumulate in f32, and the division by the (intp) count runs in
``result_type(acc, intp)`` before casting back to the accumulator.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import EagerFallback
from ..ir import Lit, SizeLit
from .registry import implements, normalize_axes, unsupported
from .tracer import Tracer, wrap
from .ufuncs import write_out


def _check_plain(name, **keywords):
    """Refuses the keywords of a reduction that fusejit does not trace, naming those given
    (``where`` defaults to True, the others to None)."""
    given = [f"{key}=" for key, value in keywords.items()
             if value is not (True if key == "where" else None)]
    if given:
        raise unsupported(f"np.{name} with {', '.join(given)}")


def _result(rec, concrete, var, name, out, reference):
    """The reduction's result, or with ``out=`` (``np.sum(x, 0, out=acc)``) written into
    ``out``, which NumPy returns. NumPy reduces in ``out``'s dtype: where that is not the
    dtype it reduces in without ``out=`` (``reference``, a one-element stand-in's result),
    the signature runs eagerly."""
    if out is None:
        return wrap(rec, concrete, var)
    target = out[0] if type(out) is tuple and len(out) == 1 else out
    if not isinstance(target, Tracer) and type(target) is not np.ndarray:
        raise EagerFallback(f"np.{name} with out= of type {type(target).__name__}")
    if target.dtype != reference.dtype:
        raise EagerFallback(f"np.{name} with out= of dtype {target.dtype}: NumPy reduces in "
                            f"it, not in {reference.dtype}")
    return write_out(rec, target, rec.cast(var, reference.dtype))


def _stand_in(a):
    return np.zeros(1, a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype)


def bool_reduce(op: str, dtype) -> str:
    """The reduction NumPy runs over bools: their add is a logical or, their multiply an and
    (``x.sum(dtype=bool)``, ``np.einsum("ij->j", mask)``)."""
    return {"sum": "any", "prod": "all"}.get(op, op) if dtype == np.bool_ else op


def _reduce(rec, op, var, axes, keepdims):
    if op not in ("argmax", "argmin") and (var.type.ndim == 0 or not axes):
        # ``axis=()``: each element is its own result; NumPy's float sum starts from +0.0,
        # so a -0.0 comes out +0.0 (the sign arctan2 and copysign read)
        if op == "sum" and var.type.dtype.kind == "f":
            return rec.emit("add", [var, Lit(0.0, var.type.dtype)])
        return rec.emit("copy", [var])
    if var.type.ndim == 0:
        axes = ()
    op = bool_reduce(op, var.type.dtype)
    return rec.emit(op, [var], {"axes": axes, "keepdims": bool(keepdims)})


def _simple(op, name, fn):
    def record(rec, concrete, a, axis=None, dtype=None, out=None, keepdims=False,
               initial=None, where=True):
        _check_plain(name, initial=initial, where=where)
        reference = fn(_stand_in(a), dtype=dtype)
        value = rec.cast(rec.operand(a), reference.dtype)
        axes = normalize_axes(axis, value.type.ndim)
        return _result(rec, concrete, _reduce(rec, op, value, axes, keepdims), name, out,
                       reference)
    return record


implements(np.sum)(_simple("sum", "sum", np.sum))
implements(np.prod)(_simple("prod", "prod", np.prod))


def _extreme(op, name):
    def record(rec, concrete, a, axis=None, out=None, keepdims=False, initial=None,
               where=True):
        _check_plain(name, initial=initial, where=where)
        value = rec.operand(a)
        axes = normalize_axes(axis, value.type.ndim)
        return _result(rec, concrete, _reduce(rec, op, value, axes, keepdims), name, out,
                       _stand_in(a))
    return record


implements(np.max, np.amax)(_extreme("reduce_max", "max"))
implements(np.min, np.amin)(_extreme("reduce_min", "min"))


def _logical(op):
    def record(rec, concrete, a, axis=None, out=None, keepdims=False, *, where=True):
        _check_plain(op, where=where)
        value = rec.cast(rec.operand(a), np.bool_)
        axes = normalize_axes(axis, value.type.ndim)
        return _result(rec, concrete, _reduce(rec, op, value, axes, keepdims), op, out,
                       np.zeros(1, np.bool_))
    return record


implements(np.any)(_logical("any"))
implements(np.all)(_logical("all"))


def _arg(op):
    def record(rec, concrete, a, axis=None, out=None, *, keepdims=False):
        value = rec.operand(a)
        axes = normalize_axes(axis, value.type.ndim)
        return _result(rec, concrete, _reduce(rec, op, value, axes, keepdims), op, out,
                       np.zeros(1, np.intp))
    return record


implements(np.argmax)(_arg("argmax"))
implements(np.argmin)(_arg("argmin"))


def _accumulator(dtype, requested, for_mean):
    if requested is not None:
        return np.dtype(requested)
    if dtype.kind in "iub":
        return np.dtype(np.float64)
    if for_mean and dtype == np.float16:
        return np.dtype(np.float32)
    return dtype


def _divide_by_count(rec, var, count, acc):
    """``true_divide(ret, intp_count, out=ret, casting='unsafe')`` as NumPy runs it: integers
    and bools divide as float64 (a bool mean of 1/2 is 0.5, which casts to True). The count is
    a ``SizeLit``: kernels take it as an argument, so a new length reuses the kernel."""
    div_dtype = np.result_type(acc, np.intp)
    if div_dtype.kind in "biu":
        div_dtype = np.dtype(np.float64)
    quotient = rec.emit("div", [rec.cast(var, div_dtype), SizeLit(count, div_dtype)])
    return rec.cast(quotient, acc)


def _count(shape, axes):
    return math.prod(shape[i] for i in axes)


def _mean_var(rec, a, axis, dtype, keepdims):
    value = rec.operand(a)
    acc = _accumulator(value.type.dtype, dtype, True)
    axes = normalize_axes(axis, value.type.ndim)
    total = _reduce(rec, "sum", rec.cast(value, acc), axes, keepdims)
    return _divide_by_count(rec, total, _count(value.type.shape, axes), acc)


@implements(np.mean)
def _mean(rec, concrete, a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    _check_plain("mean", where=where)
    result = _mean_var(rec, a, axis, dtype, keepdims)
    if out is not None:
        return _result(rec, concrete, result, "mean", out, np.mean(_stand_in(a), dtype=dtype))
    return wrap(rec, concrete, rec.cast(result, np.asarray(concrete).dtype))


def _variance(rec, a, axis, dtype, ddof, keepdims):
    value = rec.operand(a)
    if value.type.dtype.kind == "c" or not isinstance(ddof, (int, np.integer)):
        # NumPy squares a complex deviation's magnitude, and divides by n - ddof as a float
        raise unsupported("np.var/np.std of complex values or with a non-integer ddof")
    acc = _accumulator(value.type.dtype, dtype, False)
    axes = normalize_axes(axis, value.type.ndim)
    count = _count(value.type.shape, axes)
    mean = _divide_by_count(rec, _reduce(rec, "sum", rec.cast(value, acc), axes, True),
                            count, acc)
    diff_dtype = np.result_type(value.type.dtype, acc)
    diff = rec.emit("sub", [rec.cast(value, diff_dtype), rec.cast(mean, diff_dtype)])
    square = rec.emit("mul", [diff, diff])
    total = _reduce(rec, "sum", rec.cast(square, acc), axes, keepdims)
    return _divide_by_count(rec, total, max(count - int(ddof), 0), acc)


@implements(np.var)
def _var(rec, concrete, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
         where=True, mean=None, correction=None):
    _check_plain("var", where=where, mean=mean)
    ddof = ddof if correction is None else correction   # NumPy 2's name for it
    result = _variance(rec, a, axis, dtype, ddof, keepdims)
    reference = np.var(_stand_in(a), dtype=dtype)
    return _result(rec, concrete, rec.cast(result, reference.dtype), "var", out, reference)


@implements(np.std)
def _std(rec, concrete, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *,
         where=True, mean=None, correction=None):
    _check_plain("std", where=where, mean=mean)
    ddof = ddof if correction is None else correction   # NumPy 2's name for it
    result = rec.emit("sqrt", [_variance(rec, a, axis, dtype, ddof, keepdims)])
    reference = np.std(_stand_in(a), dtype=dtype)
    return _result(rec, concrete, rec.cast(result, reference.dtype), "std", out, reference)
