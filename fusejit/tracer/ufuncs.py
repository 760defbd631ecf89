"""Ufunc calls on proxies (NEP 13): elementwise core ops at the ufunc's loop dtype.

``ufunc.resolve_dtypes`` gives the loop NumPy itself picks (weak Python scalars passed as
``float``/``int``), every operand is cast to it, and the homogeneous core op is emitted.
``out=`` writes the result into the target (a proxy or a raw captured array) functionally.
"""
from __future__ import annotations

import functools

import numpy as np
import scipy.special

from ..errors import EagerFallback
from ..ir import Lit, Var, indexing
from .context import active, int_beyond, surface, unwrap
from .tracer import Tracer, wrap, write

UFUNC_OPS = {
    np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
    np.floor_divide: "floordiv", np.remainder: "mod", np.power: "pow", np.negative: "neg",
    np.positive: "copy", np.absolute: "abs", np.maximum: "max", np.minimum: "min",
    np.fmax: "fmax", np.fmin: "fmin", np.exp: "exp", np.expm1: "expm1", np.log: "log",
    np.log1p: "log1p", np.log2: "log2", np.log10: "log10", np.sqrt: "sqrt",
    np.square: "square", np.reciprocal: "reciprocal", np.tanh: "tanh", np.sinh: "sinh",
    np.cosh: "cosh", np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arctan: "arctan",
    np.arctan2: "arctan2", np.sign: "sign", np.floor: "floor", np.ceil: "ceil",
    np.rint: "rint", np.isnan: "isnan", np.isinf: "isinf", np.isfinite: "isfinite",
    np.logical_and: "and", np.logical_or: "or", np.logical_not: "not", np.logical_xor: "xor",
    np.equal: "eq", np.not_equal: "ne", np.less: "lt", np.less_equal: "le",
    np.greater: "gt", np.greater_equal: "ge", np.bitwise_and: "bitand",
    np.bitwise_or: "bitor", np.bitwise_xor: "bitxor", np.invert: "invert",
    scipy.special.erf: "erf", np.matmul: "matmul",
}
REDUCE_METHODS = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max,
                  np.minimum: np.min, np.logical_and: np.all, np.logical_or: np.any}
# ``ufunc.reduce`` options the mapped function does not take (``np.max`` has no ``dtype=``,
# ``np.all`` no ``initial=``): such a call runs as NumPy's own method, a host op.
_REDUCE_REFUSES = {np.maximum: {"dtype"}, np.minimum: {"dtype"},
                   np.logical_and: {"dtype", "initial"}, np.logical_or: {"dtype", "initial"}}


def ufunc_label(ufunc) -> str:
    return "scipy.special.erf" if ufunc is scipy.special.erf else f"np.{ufunc.__name__}"


def handle_ufunc(ufunc, method, inputs, kwargs):
    if method == "at" and ufunc is np.add:
        return surface(np.add.at, _record_add_at, inputs, {})
    if method == "at" and not kwargs:   # NumPy's, on a copy, written over the target
        from .inplace_calls import recorder
        return surface(ufunc.at, recorder(ufunc.at, f"{ufunc_label(ufunc)}.at"), inputs, {})
    if method == "reduce" and ufunc in REDUCE_METHODS and not _REDUCE_REFUSES.get(
            ufunc, set()) & {k for k, v in kwargs.items() if v is not None}:
        kwargs.setdefault("axis", 0)
        for name in ("out", *_REDUCE_REFUSES.get(ufunc, ())):   # given as None: dropped
            if kwargs.get(name) is None:
                kwargs.pop(name, None)
        if isinstance(kwargs.get("out"), tuple):   # np.sum(x, out=o) is this reduce
            kwargs["out"], = kwargs["out"]
        return REDUCE_METHODS[ufunc](*inputs, **kwargs)
    if method == "__call__" and ufunc in (np.equal, np.not_equal) and not kwargs:
        answer = _compared_with_no_number(ufunc, inputs)
        if answer is not None:
            return answer
    if method == "__call__" and ufunc in _COMPARISONS and not kwargs:
        answer = _compared_beyond_range(ufunc, inputs)
        if answer is not None:
            return answer
    if method == "__call__" and _masked_into_out(ufunc, kwargs):
        return surface(ufunc, functools.partial(_record_masked_into, ufunc=ufunc), inputs,
                       kwargs)
    unknown = set(kwargs) - {"out", "casting"}
    if method != "__call__" or ufunc not in UFUNC_OPS or unknown or _matmul_of_dynamic(
            ufunc, inputs, kwargs):
        return _host_ufunc(ufunc, method, inputs, kwargs)
    out = kwargs.get("out")
    record = lambda rec, concrete, *xs, **kw: record_ufunc(rec, concrete, ufunc, xs, out)
    compute = _cube if ufunc is np.power and _is_float_cube(inputs, kwargs) else ufunc
    return surface(compute, record, inputs, kwargs)


def _masked_into_out(ufunc, kwargs) -> bool:
    """``np.divide(a, b, out=o, where=b != 0)``: a mapped elementwise ufunc writing only
    where the mask holds into a target it is given."""
    return (ufunc in UFUNC_OPS and ufunc.signature is None and ufunc.nout == 1
            and kwargs.get("out") is not None and "where" in kwargs
            and set(kwargs) <= {"out", "where", "casting"})


def _record_masked_into(rec, concrete, *inputs, ufunc, out, where, casting="same_kind"):
    """The ufunc over every element, then ``o[...] = where(m, result, o)`` as an in-place
    write: the elements NumPy skips keep ``o``'s values (a quotient by zero there is computed
    and dropped; the replay is quiet). NumPy has already checked the casting rule and
    written the concrete value. An integer power runs eagerly: its kernel refuses a negative
    exponent that NumPy's mask may skip."""
    target = out[0]
    if not isinstance(target, Tracer) and type(target) is not np.ndarray:
        raise EagerFallback(f"{ufunc_label(ufunc)} with out= of type {type(target).__name__}")
    var, loop = _in_loop(rec, ufunc, inputs)
    if ufunc is np.power and loop[-1].kind in "iu":
        raise EagerFallback("an integer np.power with where= and out=")
    dtype, shape = target.dtype, target.shape
    result = rec.broadcast(rec.cast(var, dtype), shape)
    mask = rec.broadcast(rec.operand(where, np.bool_), shape)
    return write_out(rec, target, rec.emit("where", [mask, result, rec.operand(target)]))


def _compared_with_no_number(ufunc, inputs):
    """``x == None``, ``x != "a"`` (and ``None in x``) of a traced array: NumPy compares
    them as objects, equal nowhere, so the answer is a constant of ``x``'s shape."""
    arrays = [v for v in inputs if isinstance(v, Tracer) and isinstance(v.value, np.ndarray)]
    others = [v for v in inputs if v is None or isinstance(v, (str, bytes))]
    if len(inputs) != 2 or len(arrays) != 1 or len(others) != 1:
        return None
    return np.full_like(arrays[0], ufunc is np.not_equal, dtype=np.bool_)


_COMPARISONS = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)


def _compared_beyond_range(ufunc, inputs):
    """``u8 < 256``, ``i8 >= -1000``: NumPy compares an integer array with a Python int its
    dtype cannot hold by the int's value, the same answer for every element: a constant of
    the array's shape (any element of the dtype gives it)."""
    if len(inputs) != 2:
        return None
    arrays = [v for v in inputs if isinstance(v, Tracer) and isinstance(v.value, np.ndarray)]
    if len(arrays) != 1:
        return None
    dtype = arrays[0].value.dtype
    if not any(int_beyond(v, dtype) for v in inputs):
        return None
    sample = [np.zeros(1, dtype) if v is arrays[0] else v for v in inputs]
    return np.full_like(arrays[0], bool(ufunc(*sample)[0]), dtype=np.bool_)


def _is_float_cube(inputs, kwargs) -> bool:
    """``x**3`` on a float proxy with a Python 3 / 3.0, no ``out=``: the fold pass compiles it
    to ``(x*x)*x`` (NumPy calls ``powf`` per element, ~60x slower), so the trace computes the
    same products: the first call then agrees bit for bit with every replay, and a GELU in a
    trace no longer costs what eager NumPy's pow does."""
    if kwargs or len(inputs) != 2:
        return False
    x, exponent = inputs
    recorder = active()
    return (recorder is not None and recorder.fallback is None and isinstance(x, Tracer)
            and not x.weak and isinstance(x.value, np.ndarray) and x.value.dtype.kind == "f"
            and type(exponent) in (int, float) and exponent == 3)


def _cube(x, exponent):
    result = np.multiply(x, x)
    if isinstance(result, np.ndarray) and result.ndim:
        return np.multiply(result, x, out=result)
    return np.multiply(result, x)


def _matmul_of_dynamic(ufunc, inputs, kwargs) -> bool:
    """``x[m] @ w``: NumPy's matmul at replay, whatever the count (``dynamic.py``)."""
    from .dynamic import reads_dynamic
    return ufunc is np.matmul and kwargs.get("out") is None and reads_dynamic(
        active(), inputs, {})


def _host_ufunc(ufunc, method, inputs, kwargs):
    """An unmapped ufunc or method (``np.add.accumulate``, ``where=`` without ``out=``,
    whose unselected elements NumPy leaves uninitialised, as the host op does): a host op."""
    from .host import host_call
    fn = ufunc if method == "__call__" else getattr(ufunc, method)
    name = ufunc_label(ufunc) + ("" if method == "__call__" else f".{method}")
    if kwargs.get("out") is not None:
        if method == "__call__" and ufunc.nout == 1 and "where" not in kwargs:
            return _host_ufunc_into(ufunc, inputs, kwargs)
        return _runs_eagerly(fn, f"{name} with out=", inputs, kwargs)
    kwargs.pop("out", None)
    return host_call(fn, name, inputs, kwargs)


def _runs_eagerly(fn, what, inputs, kwargs):
    """NumPy's own call, and the signature runs eagerly: ``what`` writes into ``out=`` as
    no host op's traced write could (only where a mask holds, or reducing into it)."""
    def record(rec, concrete, *args, **kw):
        raise EagerFallback(f"{what} is not traced by fusejit")
    return surface(fn, record, inputs, kwargs)


def _host_ufunc_into(ufunc, inputs, kwargs):
    """``np.right_shift(m, 1, out=m)`` (``m >>= 1``) of an unmapped ufunc: a host op computing
    the result, then a traced write of it into ``out``, when that result already has ``out``'s
    dtype and shape (NumPy may pick another loop for another dtype: then the signature runs
    eagerly). The concrete call is NumPy's own, ``out=`` included."""
    from .host import record_host
    label, plain = ufunc_label(ufunc), {k: v for k, v in kwargs.items() if k != "out"}
    natural = []

    def compute(*args, out, **kw):
        natural.append(ufunc(*args, **kw))
        return ufunc(*args, out=out, **kw)

    def record(rec, concrete, *args, out, **kw):
        target = out[0]
        value = natural[0]
        if not isinstance(value, np.ndarray) or value.dtype != concrete.dtype or \
                value.shape != concrete.shape:
            raise EagerFallback(f"{label} with out= of another dtype or shape than its result")
        result = record_host(rec, value, ufunc, label, args, kw)
        return write_out(rec, target, result.ir_var)

    return surface(compute, record, inputs, dict(plain, out=kwargs["out"]))


def dtype_spec(x):
    """What ``resolve_dtypes`` needs for an operand: a dtype, or a Python type if weak."""
    if isinstance(x, Tracer):
        return float if x.weak else x.ir_var.type.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, (int, float, complex)):  # TracedFloat included: a weak Python float
        return next(t for t in (int, float, complex) if isinstance(x, t))
    return np.asarray(x).dtype


def record_ufunc(rec, concrete, ufunc, inputs, out=None, weak=False):
    var = _in_loop(rec, ufunc, inputs, weak)[0]
    if out is None:
        return wrap(rec, concrete, var)
    return write_out(rec, out[0], var)


def _in_loop(rec, ufunc, inputs, weak=False):
    """(the ufunc's op over ``inputs`` cast to the loop NumPy picks, that loop's dtypes)."""
    loop = ufunc.resolve_dtypes(tuple(dtype_spec(x) for x in inputs) + (None,) * ufunc.nout)
    values = [rec.operand(x, loop[i]) for i, x in enumerate(inputs)]
    return emit_ufunc(rec, UFUNC_OPS[ufunc], values, weak), loop


def write_out(rec, target, var):
    """``var`` cast and broadcast into an ``out=`` target (a proxy or a plain array), as NumPy
    writes it; returns what NumPy returns."""
    target_value = target.value if isinstance(target, Tracer) else target
    if isinstance(target, Tracer) and rec.dynamic.get(target.ir_var) and not (
            isinstance(var, Var) and rec.dynamic.get(var)):
        rec.shape_seen.add(target.ir_var)   # given a value of the traced shape: guarded
        #                                     (dynamic.py); ``t *= 2`` keeps t's own shape
    var = rec.broadcast(rec.cast(var, target_value.dtype), target_value.shape)
    write(rec, target, var)
    if not isinstance(target, Tracer) and body_created(rec, target):
        # ``acc += x`` rebinds ``acc`` to what this returns: its later reads are traced
        return wrap(rec, target, var)
    return target


def body_created(rec, array) -> bool:
    """An array the body made with NumPy (a ``const`` capture), which nothing outside sees."""
    entry = rec.raw.get(id(array))
    return entry is not None and entry[2] is not None and \
        rec.captures[entry[2]].source[0] == "const"


def emit_ufunc(rec, op, values, weak=False):
    if op == "square":
        return rec.emit("mul", [values[0], values[0]], weak=weak)
    if all(isinstance(v, Lit) for v in values):  # Lits only: materialize one
        values = [rec.materialize(values[0])] + list(values[1:])
    return rec.emit(op, values, weak=weak)


class _Boxed:
    """An index item that must stay an operand (never baked into the key): a proxy (whose
    ``__class__`` says ndarray or np.int64) or a raw integer array."""

    def __init__(self, array):
        self.array = array


def encode_index(rec, index):
    """(key, operand Vars) for a NumPy index: proxies and raw int arrays become operands."""
    items = index if isinstance(index, tuple) else (index,)
    items = tuple(_Boxed(i) if isinstance(i, Tracer)
                  or (type(i) is np.ndarray and i.dtype.kind in "iu") else i for i in items)
    arrays: list = []
    key = indexing.encode(items, arrays)
    operands = [rec.operand(a.array if isinstance(a, _Boxed) else a) for a in arrays]
    return key, operands


def _record_add_at(rec, concrete, target, index, value):
    """``np.add.at(target, index, value)``: NumPy adds in the dtype the target and the value as
    an array promote to (a Python float is float64 here, not weak) and casts each sum back (an
    int32 -3 plus 1.5 is -1, not -3 + 1), so the value keeps that dtype."""
    target_value = target.value if isinstance(target, Tracer) else target
    key, operands = encode_index(rec, index)
    base = rec.operand(target)
    as_array = value.dtype if isinstance(value, Tracer) else np.asarray(unwrap(value)).dtype
    update = rec.operand(value, np.result_type(target_value.dtype, as_array))
    if isinstance(update, Lit):
        update = rec.materialize(update)
    write(rec, target, rec.emit("scatter_add", [base, update, *operands], {"key": key}))
    return concrete

