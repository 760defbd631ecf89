"""Array functions: movement ops become view ops, joins and copies become injective ops."""
from __future__ import annotations

import math

import numpy as np

from ..errors import EagerFallback
from ..ir import Lit, Var
from ..ir.ops import inverse_perm
from . import layouts
from .context import int_beyond, unwrap
from .registry import (
    handle_function,
    implements,
    normalize_axes,
    normalize_axis,
    permutation_of,
    unsupported,
)
from .scalars import is_live_float
from .tracer import Tracer, ViewLink, note_shape_seen, wrap, write

__all__ = ["handle_function"]


def view_result(rec, concrete, base, derive, key=None, undo=None):
    """Record a view op; the proxy stays linked to ``base`` when NumPy returned a view
    (``undo``: the base from a new value of a view holding each of its elements once)."""
    base_var = rec.operand(base)
    var = derive(rec, base_var)
    link = None
    if (isinstance(base, Tracer) and isinstance(concrete, np.ndarray)
            and isinstance(base.value, np.ndarray) and np.may_share_memory(concrete, base.value)):
        link = ViewLink(base, derive, key, base.ir_var, undo)
        if id(base.value) in rec.read_only:   # a view of a broadcast: read-only too
            rec.read_only[id(concrete)] = concrete
    return wrap(rec, concrete, var, link, source=unwrap(base))


def _reshape_to(shape):
    shape = tuple(shape)
    return lambda rec, v: v if v.type.shape == shape else rec.emit("reshape", [v], {"shape": shape})


def _guard_sizes(*values) -> None:
    """Guard each traced integer among sizes or split points (``x.reshape(n, -1)`` with an
    ``np.int64`` argument ``n``): the result's shape depends on its value, which the program
    does not compute, so a replay checks it."""
    for value in values:
        if isinstance(value, Tracer):
            value.tolist()   # records the guard (``guards.to_list``)
        elif isinstance(value, (tuple, list)):
            _guard_sizes(*value)


@implements(np.reshape)
def _reshape(rec, concrete, a, shape=None, order="C", *, copy=None, **kwargs):
    order = _index_order(rec, a, order)
    _guard_sizes(shape, *kwargs.values())
    to_shape = _reshape_in(order, np.shape(concrete))
    if copy:   # a new array, which later updates of ``a`` do not reach
        return wrap(rec, concrete, rec.emit("copy", [to_shape(rec, rec.operand(a))]))
    if np.ndim(a) > 1 and _beyond_ones(np.shape(a), np.shape(concrete)):
        layouts.note(rec, a)   # a view or a copy, as a's strides allow
    return view_result(rec, concrete, a, to_shape, undo=_reshape_in(order, np.shape(a)))


def _reshape_in(order: str, shape):
    """A reshape to ``shape`` reading and writing elements in index ``order``; the undo of
    a reshape view is the reshape back, in the same order."""
    if order == "C":
        return _reshape_to(shape)
    backwards = _reshape_to(tuple(shape)[::-1])   # ``a.T.reshape(reversed shape).T``
    return lambda rec, v: _reversed(rec, backwards(rec, _reversed(rec, v)))


def _beyond_ones(shape, new_shape) -> bool:
    """Whether a reshape does more than add or drop axes of length 1 (always a view)."""
    return [n for n in shape if n != 1] != [n for n in new_shape if n != 1]


@implements(np.ravel)
def _ravel(rec, concrete, a, order="C"):
    order = _index_order(rec, a, order)
    if np.size(a) > 1:
        layouts.note(rec, a)   # a view when a is C-contiguous (F: a.T is), else a copy
    result = view_result(rec, concrete, a, _reshape_in(order, np.shape(concrete)),
                         undo=_reshape_in(order, np.shape(a)))
    if isinstance(result, Tracer) and result.link is None and isinstance(a, Tracer) \
            and isinstance(a.value, np.ndarray) and np.size(a) > 1:
        # NumPy copied (a is not C-contiguous) where a reshape may view (``x[:, ::2]``, a
        # broadcast ``x``): the program copies too, so the result is the caller's own array
        return wrap(rec, concrete, rec.emit("copy", [result.ir_var]))
    return result


def _index_order(rec, a, order) -> str:
    """``"C"`` or ``"F"``: the index order ``order`` reads ``a`` in. ``"A"`` and ``"K"``
    follow ``a``'s memory layout, which the program's arrays need not share (its kernels
    write C-ordered arrays where NumPy's ufuncs keep an F-ordered input's order): they are
    decided here, and the path keeps the layouts the decision rests on."""
    order = order.upper() if isinstance(order, str) else order
    if order in ("C", "F"):
        return order
    value = a.value if isinstance(a, Tracer) else None
    if order not in ("A", "K") or not isinstance(value, np.ndarray):
        raise unsupported(f"this order ({order!r})")
    layouts.note(rec, a)
    if value.flags.c_contiguous or (order == "A" and not value.flags.f_contiguous):
        return "C"
    if value.flags.f_contiguous:
        return "F"
    raise EagerFallback("np.ravel(order='K') of an array neither C- nor F-contiguous (its "
                        "order in memory is not one a replay takes again)")


def _reversed(rec, v):
    """``v`` with its axes reversed (``v.T``)."""
    return _permute(tuple(reversed(range(v.type.ndim))))(rec, v)


def _permute(perm):
    perm = tuple(perm)
    if perm == tuple(range(len(perm))):
        return lambda rec, v: v
    return lambda rec, v: rec.emit("permute", [v], {"perm": perm})


def _transpose_like(func):
    def record(rec, concrete, a, *args, **kwargs):
        perm = permutation_of(lambda p: func(p, *args, **kwargs), np.ndim(a))
        return view_result(rec, concrete, a, _permute(perm), undo=_permute(inverse_perm(perm)))
    return record


for _func in (np.transpose, np.swapaxes, np.moveaxis, np.matrix_transpose):
    implements(_func)(_transpose_like(_func))


@implements(np.expand_dims)
def _expand_dims(rec, concrete, a, axis):
    axes = normalize_axes(axis, np.ndim(concrete))
    derive = lambda rec, v: rec.emit("expand_dims", [v], {"axes": axes})
    return view_result(rec, concrete, a, derive, undo=_reshape_to(np.shape(a)))


@implements(np.squeeze)
def _squeeze(rec, concrete, a, axis=None):
    shape = np.shape(a)
    axes = (tuple(i for i, d in enumerate(shape) if d == 1) if axis is None
            else normalize_axes(axis, len(shape)))
    derive = (lambda rec, v: rec.emit("squeeze", [v], {"axes": axes})) if axes else (
        lambda rec, v: v)
    return view_result(rec, concrete, a, derive, undo=_reshape_to(shape))


@implements(np.broadcast_to)
def _broadcast_to(rec, concrete, array, shape, subok=False):
    _guard_sizes(shape)
    shape = np.shape(concrete)
    rec.read_only[id(concrete)] = concrete
    return view_result(rec, concrete, array, lambda rec, v: rec.broadcast(v, shape))


@implements(np.copy)
def _copy(rec, concrete, a, order="K", subok=False):
    """``order="K"`` keeps a transposed operand's layout (``np.copy(x.T)`` is F-ordered), so
    passes may compute it untransposed; ``"C"`` (``x.T.copy()``) must stay C-ordered, and
    ``"F"`` F-ordered (canonicalize makes it a C-ordered copy of the transpose)."""
    order = order.upper() if isinstance(order, str) else order
    if order not in ("K", "C", "F"):
        raise unsupported(f"np.copy with order={order!r}")
    attrs = {"order": order} if order != "K" else {}
    return wrap(rec, concrete, rec.emit("copy", [rec.operand(a)], attrs))


@implements(np.astype)
def _astype(rec, concrete, x, dtype, /, *, copy=True, device=None):
    if isinstance(x, Tracer) and concrete is x.value:
        return x
    value = rec.operand(x)
    if isinstance(value, Var) and value.type.dtype == concrete.dtype:
        # NumPy copied without converting: a new array that a later in-place update of x
        # must not reach, also through views of the copy (the cast alone would be x itself).
        return wrap(rec, concrete, rec.emit("copy", [value]))
    return wrap(rec, concrete, rec.cast(value, concrete.dtype))


def _result_dtype(concrete):
    return np.asarray(concrete).dtype


def _operands(rec, arrays, dtype):
    return [rec.broadcast(rec.operand(a, dtype), np.shape(a)) for a in arrays]


@implements(np.concatenate)
def _concatenate(rec, concrete, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        raise unsupported("np.concatenate with out=")
    values = _operands(rec, arrays, concrete.dtype)
    if axis is None:
        values = [_reshape_to((int(np.size(a)),))(rec, v) for a, v in zip(arrays, values,
                                                                           strict=True)]
        axis = 0
    axis = normalize_axis(axis, concrete.ndim)
    return wrap(rec, concrete, rec.emit("concatenate", values, {"axis": axis}))


@implements(np.stack)
def _stack(rec, concrete, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        raise unsupported("np.stack with out=")
    axis = normalize_axis(axis, concrete.ndim)
    values = [rec.emit("expand_dims", [v], {"axes": (axis,)})
              for v in _operands(rec, arrays, concrete.dtype)]
    return wrap(rec, concrete, rec.emit("concatenate", values, {"axis": axis}))


def _at_least(rec, arrays, dtype, ndim):
    values = []
    for a, v in zip(arrays, _operands(rec, arrays, dtype), strict=True):
        shape = np.shape(a)
        target = (1,) * max(ndim - len(shape), 0) + shape
        values.append(_reshape_to(target)(rec, v))
    return values


@implements(np.hstack)
def _hstack(rec, concrete, tup, *, dtype=None, casting="same_kind"):
    values = _at_least(rec, tup, concrete.dtype, 1)
    axis = 0 if values[0].type.ndim == 1 else 1
    return wrap(rec, concrete, rec.emit("concatenate", values, {"axis": axis}))


@implements(np.vstack)
def _vstack(rec, concrete, tup, *, dtype=None, casting="same_kind"):
    values = _at_least(rec, tup, concrete.dtype, 2)
    return wrap(rec, concrete, rec.emit("concatenate", values, {"axis": 0}))


@implements(np.split, np.array_split)
def _split(rec, concrete, ary, indices_or_sections, axis=0):
    _guard_sizes(indices_or_sections)
    axis = normalize_axis(axis, np.ndim(ary))
    bounds = np.cumsum([0] + [np.shape(part)[axis] for part in concrete]).tolist()
    pieces = rec.emit("split", [rec.operand(ary)], {"indices": tuple(bounds[1:-1]),
                                                    "axis": axis})
    results = []
    for part, var, start, stop in zip(concrete, pieces, bounds, bounds[1:], strict=False):
        key = ((("slice", None, None, None),) * axis + (("slice", start, stop, 1),))
        derive = lambda rec, v, key=key: rec.emit("getitem", [v], {"key": key})
        link = ViewLink(ary, derive, key, ary.ir_var) if isinstance(ary, Tracer) else None
        results.append(wrap(rec, part, var, link))
    return results


@implements(np.pad)
def _pad(rec, concrete, array, pad_width, mode="constant", **kwargs):
    value = kwargs.pop("constant_values", 0)
    if mode != "constant" or kwargs or np.ndim(value) != 0 or isinstance(value, Tracer):
        raise unsupported(f"np.pad with mode={mode!r} or array-valued/traced constant_values")
    width = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (np.ndim(array), 2))
    width = tuple(tuple(int(w) for w in row) for row in width)
    attrs = {"width": width, "value": concrete.dtype.type(value)}
    return wrap(rec, concrete, rec.emit("pad", [rec.operand(array)], attrs))


@implements(np.tile)
def _tile(rec, concrete, A, reps):
    reps = tuple(int(r) for r in np.atleast_1d(reps))
    return wrap(rec, concrete, rec.emit("tile", [rec.operand(A)], {"reps": reps}))


@implements(np.repeat)
def _repeat(rec, concrete, a, repeats, axis=None):
    if isinstance(repeats, Tracer):   # the result's length is the data's: a host op
        from .host import record_host
        return record_host(rec, concrete, np.repeat, "np.repeat", (a, repeats),
                           {"axis": axis}, True)
    repeats = int(repeats) if np.ndim(repeats) == 0 else tuple(int(r) for r in np.ravel(repeats))
    axis = None if axis is None else normalize_axis(axis, np.ndim(a))
    attrs = {"repeats": repeats, "axis": axis}
    return wrap(rec, concrete, rec.emit("repeat", [rec.operand(a)], attrs))


@implements(np.where)
def _where(rec, concrete, condition, *xy):
    if not xy:  # np.nonzero: data-dependent shape, a host op with shape guards
        from .host import record_host
        return record_host(rec, concrete, np.where, "np.where", (condition,), {}, True)
    cond = rec.operand(condition, np.bool_)
    x, y = (rec.operand(_wrapped_int(v, concrete.dtype), concrete.dtype) for v in xy)
    if all(isinstance(v, Lit) for v in (cond, x, y)):
        cond = rec.materialize(cond)
    return wrap(rec, concrete, rec.emit("where", [cond, x, y]))


def _wrapped_int(value, dtype):
    """``np.where(m, u8, 1000)``: NumPy casts a Python int its integer result dtype cannot
    hold as C does (1000 -> 232), with no warning."""
    if not int_beyond(value, dtype):
        return value
    as_array = np.asarray(value)
    return as_array.astype(dtype)[()] if as_array.dtype != object else value


@implements(np.clip)
def _clip(rec, concrete, a, a_min=None, a_max=None, out=None, **kwargs):
    missing = lambda v: v is None or v is np._NoValue
    a_min = kwargs.pop("min", None) if missing(a_min) else a_min
    a_max = kwargs.pop("max", None) if missing(a_max) else a_max
    a_min, a_max = (None if missing(v) else v for v in (a_min, a_max))
    if kwargs:
        raise EagerFallback(f"np.clip with {', '.join(sorted(kwargs))}= is not traced")
    a_min, a_max = _bounds_in_range(a, a_min, a_max)
    if a_min is None and a_max is None:   # NumPy's copy (``np.clip(u8, 0, 300)``)
        return np.positive(a) if out is None else np.positive(a, out=out)
    if out is not None:
        return _clip_into(rec, out, a, a_min, a_max)
    var = _clipped(rec, a, a_min, a_max, _result_dtype(concrete))
    return wrap(rec, concrete, rec.broadcast(var, np.shape(concrete)))


def _bounds_in_range(a, a_min, a_max):
    """NumPy's rule for an integer array: a Python int bound beyond its dtype's range is no
    bound (``np.clip(u8, -5, 300)`` clips nothing)."""
    dtype = getattr(a, "dtype", None)
    if dtype is None or dtype.kind not in "iu":
        return a_min, a_max
    info = np.iinfo(dtype)
    a_min = None if type(a_min) is int and a_min <= info.min else a_min
    a_max = None if type(a_max) is int and a_max >= info.max else a_max
    return a_min, a_max


def _clipped(rec, a, a_min, a_max, dtype):
    # NumPy keeps a value equal to the bound (its -0.0 against a bound of 0.0) when both bounds
    # are single values, and gives the bound when one is an array or absent (np.maximum's rule).
    single = all(v is not None and _one_value(v) for v in (a_min, a_max))
    low, high = ("clamp_lo", "clamp_hi") if single else ("max", "min")
    var = rec.operand(a, dtype)
    if a_min is not None:
        var = rec.emit(low, [var, rec.operand(a_min, dtype)])
    if a_max is not None:
        var = rec.emit(high, [var, rec.operand(a_max, dtype)])
    return var


def _one_value(value) -> bool:
    shape = value.shape if isinstance(value, Tracer) else np.shape(unwrap(value))
    return math.prod(shape) == 1


def _clip_into(rec, out, a, a_min, a_max):
    """``np.clip(a, lo, hi, out=t)``: clipped in the dtype NumPy computes in (what it returns
    without ``out=``), then cast into ``t`` as an in-place write. NumPy already refused a
    cast that breaks its casting rule while computing the concrete result."""
    from .ufuncs import write_out
    target = out[0] if isinstance(out, tuple) else out
    if not isinstance(target, Tracer) and type(target) is not np.ndarray:
        raise EagerFallback(f"np.clip with out= of type {type(target).__name__}")
    dtype = np.asarray(np.clip(*_stand_ins(a, a_min, a_max))).dtype
    return write_out(rec, target, _clipped(rec, a, a_min, a_max, dtype))


@implements(np.copyto, writes=True)
def _copyto(rec, concrete, dst, src, casting="same_kind", where=True):
    """``np.copyto(dst, src, where=m)``: recorded as ``dst[...] = where(m, src, dst)``, a
    ``setitem`` into ``dst``'s buffer (never a view of ``src``). NumPy has already checked
    the casting rule and the shapes, and written the concrete value."""
    from .indexing import ONE_BY_ONE, one_by_one
    from .ufuncs import encode_index
    if not isinstance(dst, Tracer) and type(dst) is not np.ndarray:
        raise EagerFallback(f"np.copyto into a {type(dst).__name__}")
    if where is True and one_by_one(dst, src):
        rec.set_fallback(ONE_BY_ONE)
    dtype, old = dst.dtype, rec.operand(dst)
    if isinstance(src, (Tracer, np.ndarray, list, tuple)) or is_live_float(src):
        value = rec.cast(rec.operand(src), dtype)
    else:   # a scalar, converted as NumPy converts it under ``casting``
        value = rec.materialize(Lit(_scalar_into(src, dtype, casting), dtype))
    if where is not True:
        value = rec.emit("where", [rec.operand(where, np.bool_), value, old])
    key, operands = encode_index(rec, Ellipsis)
    write(rec, dst, rec.emit("setitem", [old, value, *operands], {"key": key}))


def _scalar_into(value, dtype, casting):
    scratch = np.empty((), dtype)
    with np.errstate(all="ignore"):   # NumPy warned from the user's line already
        np.copyto(scratch, unwrap(value), casting=casting)
    return scratch[()]


def _like(value_of):
    def record(rec, concrete, a, *args, **kwargs):
        dtype, shape = concrete.dtype, concrete.shape
        if isinstance(a, Tracer):
            note_shape_seen(a, always=True)   # the result has a's shape but does not read it
        fill = value_of(args, kwargs)
        # NumPy's is laid out as ``a`` (order="K"): made in memory order, then seen in a's
        # axes (an F-ordered view); an array fill broadcasts over the result's own axes first
        order = layouts.stride_order(concrete)
        stored = shape if order is None else tuple(shape[axis] for axis in order)
        if isinstance(fill, Tracer) or (isinstance(fill, (list, tuple, np.ndarray))
                                        and np.ndim(fill) != 0):
            var = rec.broadcast(rec.operand(fill, dtype), shape)
            if order is not None:
                var = rec.emit("permute", [var], {"perm": tuple(order)})
            var = rec.emit("copy", [var], {"order": "C"})   # a new array, not a view of fill
        else:
            var = rec.emit("full", [], {"shape": stored, "dtype": dtype,
                                        "value": dtype.type(fill)})
        if order is not None:
            var = rec.emit("permute", [var], {"perm": inverse_perm(order)})
        if kwargs.get("order", "K") in ("K", "A"):   # laid out as ``a``, which it does not read
            layouts.link(rec, var, a)
        return wrap(rec, concrete, var)
    return record


implements(np.zeros_like, np.empty_like)(_like(lambda args, kwargs: 0))
implements(np.ones_like)(_like(lambda args, kwargs: 1))
implements(np.full_like)(_like(lambda args, kwargs: args[0] if args else kwargs["fill_value"]))


@implements(np.outer)
def _outer(rec, concrete, a, b, out=None):
    """``a.ravel()[:, None] * b.ravel()[None, :]``; with ``out=``, computed in the dtype NumPy
    multiplies in and written into ``out`` (NumPy has already checked the cast)."""
    from .ufuncs import write_out
    dtype = concrete.dtype if out is None else np.outer(*_stand_ins(a, b)).dtype
    left = _reshape_to((int(np.size(a)), 1))(rec, rec.operand(a, dtype))
    right = _reshape_to((1, int(np.size(b))))(rec, rec.operand(b, dtype))
    product = rec.emit("mul", [left, right])
    if out is None:
        return wrap(rec, concrete, product)
    if not isinstance(out, Tracer) and type(out) is not np.ndarray:
        raise EagerFallback(f"np.outer with out= of type {type(out).__name__}")
    return write_out(rec, out, product)


def _stand_ins(*values):
    """One-element arrays of the values' dtypes (weak Python scalars as themselves): what a
    NumPy function given them computes in."""
    return [np.zeros(1, v.dtype) if isinstance(v, (Tracer, np.ndarray, np.generic))
            and not getattr(v, "weak", False) else unwrap(v) for v in values]
