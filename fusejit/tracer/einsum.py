"""Contractions: ``np.dot``, ``np.tensordot`` and two-operand ``np.einsum`` lowered to
permute / reshape / batched ``matmul`` / ``sum``."""
from __future__ import annotations

import math

import numpy as np

from ..ir.ops import inverse_perm
from . import layouts
from .context import unwrap
from .functions import view_result
from .reductions import bool_reduce
from .registry import implements, normalize_axis, unsupported
from .tracer import wrap
from .ufuncs import write_out


def _reshape(rec, var, shape):
    shape = tuple(shape)
    return var if var.type.shape == shape else rec.emit("reshape", [var], {"shape": shape})


def _permute(rec, var, perm):
    perm = tuple(perm)
    return var if perm == tuple(range(len(perm))) else rec.emit("permute", [var], {"perm": perm})


def contract(rec, a, b, batch, a_free, b_free, contracted):
    """(batch..., a_free..., b_free...) = sum over contracted of a * b, via one matmul.

    ``batch``/``contracted`` are lists of (a_axis, b_axis) pairs; ``a_free``/``b_free`` axes.
    """
    sa, sb = a.type.shape, b.type.shape
    if any(sa[i] != sb[j] for i, j in batch + contracted):
        raise unsupported("np.einsum with broadcasting between operands")
    a = _permute(rec, a, [i for i, _ in batch] + a_free + [i for i, _ in contracted])
    b = _permute(rec, b, [j for _, j in batch] + [j for _, j in contracted] + b_free)
    batch_shape = [sa[i] for i, _ in batch]
    m = math.prod(sa[i] for i in a_free)
    n = math.prod(sb[j] for j in b_free)
    k = math.prod(sa[i] for i, _ in contracted)
    a = _reshape(rec, a, batch_shape + [m, k])
    b = _reshape(rec, b, batch_shape + [k, n])
    product = rec.emit("matmul", [a, b])
    shape = batch_shape + [sa[i] for i in a_free] + [sb[j] for j in b_free]
    return _reshape(rec, product, shape)


@implements(np.tensordot)
def _tensordot(rec, concrete, a, b, axes=2):
    dtype = concrete.dtype
    va, vb = rec.operand(a, dtype), rec.operand(b, dtype)
    if isinstance(axes, (int, np.integer)):   # a count of axes, as NumPy takes any integer
        axes_a = list(range(va.type.ndim - int(axes), va.type.ndim))
        axes_b = list(range(int(axes)))
    else:
        axes_a, axes_b = (list(np.atleast_1d(x)) for x in axes)
    axes_a = [normalize_axis(int(i), va.type.ndim) for i in axes_a]
    axes_b = [normalize_axis(int(j), vb.type.ndim) for j in axes_b]
    a_free = [i for i in range(va.type.ndim) if i not in axes_a]
    b_free = [j for j in range(vb.type.ndim) if j not in axes_b]
    var = contract(rec, va, vb, [], a_free, b_free, list(zip(axes_a, axes_b, strict=True)))
    return wrap(rec, concrete, var)


@implements(np.dot)
def _dot(rec, concrete, a, b, out=None):
    """``out=``: NumPy took it (its exact dtype, C order, shape); the product is written into
    it as a copy would be, after reading both operands (NumPy buffers an overlap too)."""
    dtype = np.asarray(concrete).dtype
    va, vb = rec.operand(a, dtype), rec.operand(b, dtype)
    if va.type.ndim == 0 or vb.type.ndim == 0:
        var = rec.emit("mul", [va, vb])
    elif vb.type.ndim <= 2:
        var = rec.emit("matmul", [va, vb])
    else:
        last, second = va.type.ndim - 1, vb.type.ndim - 2
        var = contract(rec, va, vb, [], list(range(last)),
                       [j for j in range(vb.type.ndim) if j != second], [(last, second)])
    if out is None:
        return wrap(rec, concrete, var)
    written = write_out(rec, out, var)   # NumPy returns ``out``, a 0-d one's value unwrapped
    return wrap(rec, concrete, var) if np.ndim(unwrap(out)) == 0 else written


def _parse(subscripts, count):
    if "..." in subscripts or "->" not in subscripts:
        raise unsupported("np.einsum without an explicit '->' output or with '...'")
    inputs, output = subscripts.replace(" ", "").split("->")
    terms = inputs.split(",")
    if len(terms) != count or any(len(set(t)) != len(t) for t in terms):
        raise unsupported(f"np.einsum({subscripts!r}) (repeated indices or operand count)")
    return terms, output


def _sum_private(rec, var, term, keep):
    """Sum the letters of ``term`` that appear nowhere in ``keep``."""
    axes = tuple(i for i, c in enumerate(term) if c not in keep)
    if not axes:
        return var, term
    var = rec.emit(bool_reduce("sum", var.type.dtype), [var], {"axes": axes, "keepdims": False})
    return var, "".join(c for c in term if c in keep)


@implements(np.einsum)
def _einsum(rec, concrete, subscripts, *operands, out=None, dtype=None, order="K",
            casting="safe", optimize=False):
    """``out=`` of the dtype the operands give: computed as without it, then written into
    it as a copy would be (NumPy buffers an overlap with an operand too)."""
    if not isinstance(subscripts, str) or not 1 <= len(operands) <= 2 or (
            out is not None and (dtype is not None or np.asarray(unwrap(out)).dtype !=
                                 np.result_type(*map(unwrap, operands)))):
        raise unsupported("this form of np.einsum")
    terms, output = _parse(subscripts, len(operands))
    result_dtype = np.asarray(concrete).dtype
    values = [rec.operand(x, result_dtype) for x in operands]
    if out is not None:
        return write_out(rec, out, _contraction(rec, terms, output, values, operands))
    if len(values) == 1 and set(terms[0]) == set(output) and \
            values[0].type.dtype == result_dtype:
        # ``np.einsum("ij->ji", x)``: NumPy returns a view of x, which sees later writes
        perm = tuple(terms[0].index(c) for c in output)
        return view_result(rec, concrete, operands[0], lambda rec, v: _permute(rec, v, perm),
                           undo=lambda rec, v: _permute(rec, v, inverse_perm(perm)))
    return wrap(rec, concrete, _contraction(rec, terms, output, values, operands))


def _contraction(rec, terms, output, values, operands):
    """The einsum of one or two operands' ``values`` (``terms -> output``)."""
    if len(values) == 1:
        var, term = _sum_private(rec, values[0], terms[0], output)
        return _permute(rec, var, [term.index(c) for c in output])
    (a, ta), (b, tb) = zip(values, terms, strict=True)
    private = set(ta) ^ set(tb)
    if private - set(output) and a.type.dtype.kind not in "biu":
        # summed first or after the products, as NumPy's loops happen to do for each form:
        # ``i,j->`` of [inf, 0] and [1, inf] is NaN, ``i,j->i`` is not; NumPy computes it
        raise unsupported(f"np.einsum({','.join(terms)}->{output}) of floats summing an "
                          "index of one operand alone")
    (a, ta), (b, tb) = (_sum_private(rec, v, t, set(output) | set(other))   # exact in ints
                        for v, t, other in ((a, ta, tb), (b, tb, ta)))
    batch = [(ta.index(c), tb.index(c)) for c in ta if c in tb and c in output]
    contracted = [(ta.index(c), tb.index(c)) for c in ta if c in tb and c not in output]
    if contracted and values[0].type.dtype == np.float16:
        # NumPy's einsum adds float16 products in float16; matmul's loop adds in float32
        raise unsupported("np.einsum contracting float16 operands")
    a_free = [ta.index(c) for c in ta if c not in tb]
    b_free = [tb.index(c) for c in tb if c not in ta]
    var = contract(rec, a, b, batch, a_free, b_free, contracted)
    order_now = [ta[i] for i, _ in batch] + [ta[i] for i in a_free] + [tb[j] for j in b_free]
    var = _permute(rec, var, [order_now.index(c) for c in output])
    layouts.link(rec, var, *operands)   # NumPy's einsum lays its result out as its operands
    return var
