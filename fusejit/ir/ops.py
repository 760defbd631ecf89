"""The op registry: each core op is defined once, and every consumer reads it from here.

An ``OpDef`` holds the op's fusion kind, its NumPy reference implementation (used by the
interpreter, by shape/dtype inference and by the runtime for ops that are not fused), a scalar
template for kernel codegen, and the input domain tests draw from.

Elementwise ops are *homogeneous*: the tracer casts every input to the ufunc's loop dtype first,
so ``add`` of two f32 values is always f32 and codegen never has to re-derive NumPy promotion.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.special

from . import indexing
from .types import TensorType

# Fusion kinds, in the order of TVM's lattice: a consumer of a higher kind absorbs lower ones.
ELEMENTWISE, VIEW, INJECTIVE, REDUCE, MATMUL, OPAQUE = (
    "elementwise", "view", "injective", "reduce", "matmul", "opaque")
KIND_ORDER = (ELEMENTWISE, VIEW, INJECTIVE, REDUCE, MATMUL, OPAQUE)


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: str
    impl: Callable
    arity: int | None = 1          # None: variadic
    scalar: str | dict | None = None  # template over {0}, {1}, ...; dict keyed by dtype kind
    domain: str = "any"            # "any" | "positive" | "unit" | "nonzero" | "bool" for tests
    predicate: bool = False        # output is bool whatever the input dtype
    commutative: bool = False
    cost: int = 1                  # against a kernel's size limit (``passes.fuse``)

    def template(self, dtype) -> str | None:
        """The scalar template for inputs of ``dtype`` (``None``: not fusable)."""
        if isinstance(self.scalar, dict):
            kind = np.dtype(dtype).kind
            return self.scalar.get(kind, self.scalar.get("*"))
        return self.scalar


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    REGISTRY[op.name] = op
    return op


def get(name: str) -> OpDef:
    return REGISTRY[name]


# Vector math is inlined as a range reduction and a polynomial, tens of instructions each, and
# LLVM's time grows faster than the kernel: a chain of tanh/exp/log1p compiled in 3.6 s at 10,
# 7.4 s at 30 and 40 s at 60 in one kernel. Each counts as this many ops against the limit.
INLINED_MATH_COST = 8


def _unary(name, ufunc, scalar, domain="any", predicate=False, cost=1):
    register(OpDef(name, ELEMENTWISE, ufunc, 1, scalar, domain, predicate, cost=cost))


def _binary(name, ufunc, scalar, domain="any", predicate=False, commutative=False):
    register(OpDef(name, ELEMENTWISE, ufunc, 2, scalar, domain, predicate, commutative))


# -- elementwise unary: {0} is the input; function names resolve in the backend's prelude ----
# Signed integer +, -, * and negation go through uint64: Numba emits LLVM's `nsw` flags (overflow
# is undefined behaviour there), and LLVM then folds e.g. float(a + a) > c as if a + a could not
# wrap. Unsigned arithmetic wraps like NumPy; the result dtype's constructor truncates it.
_WRAP = "np.int64(np.uint64({0}) {op} np.uint64({1}))"
_unary("neg", np.negative, {"i": "np.int64(np.uint64(0) - np.uint64({0}))", "*": "-{0}"})
_unary("abs", np.absolute, "abs({0})")
_unary("exp", np.exp, "exp({0})", cost=INLINED_MATH_COST)
_unary("expm1", np.expm1, "expm1({0})", cost=INLINED_MATH_COST)
_unary("log", np.log, "log({0})", "positive", cost=INLINED_MATH_COST)
_unary("log1p", np.log1p, "log1p({0})", "positive", cost=INLINED_MATH_COST)
_unary("log2", np.log2, "log2({0})", "positive")
_unary("log10", np.log10, "log10({0})", "positive")
_unary("sqrt", np.sqrt, "sqrt({0})", "positive")
_unary("rsqrt", lambda x: np.reciprocal(np.sqrt(x)), "rsqrt({0})", "positive")
_unary("reciprocal", np.reciprocal, {"f": "1 / {0}", "*": None}, "nonzero")
_unary("tanh", np.tanh, "tanh({0})", cost=INLINED_MATH_COST)
_unary("sigmoid", lambda x: np.reciprocal(1 + np.exp(-x)), "sigmoid({0})", cost=INLINED_MATH_COST)
_unary("erf", scipy.special.erf, "erf({0})", cost=INLINED_MATH_COST)
_unary("sinh", np.sinh, "sinh({0})")
_unary("cosh", np.cosh, "cosh({0})")
_unary("sin", np.sin, "sin({0})", cost=INLINED_MATH_COST)
_unary("cos", np.cos, "cos({0})", cost=INLINED_MATH_COST)
_unary("tan", np.tan, "tan({0})")
_unary("arctan", np.arctan, "arctan({0})")
_unary("floor", np.floor, {"f": "floor({0})", "*": "{0}"})
_unary("ceil", np.ceil, {"f": "ceil({0})", "*": "{0}"})
_unary("rint", np.rint, {"f": "rint({0})", "*": "{0}"})
_unary("sign", np.sign, {"f": "fsign({0})", "b": None, "*": "isign({0})"})
_unary("isnan", np.isnan, {"f": "isnan({0})", "*": "False"}, predicate=True)
_unary("isinf", np.isinf, {"f": "isinf({0})", "*": "False"}, predicate=True)
_unary("isfinite", np.isfinite, {"f": "isfinite({0})", "*": "True"}, predicate=True)
_unary("not", np.logical_not, "not {0}", predicate=True)
_unary("invert", np.invert, {"b": "not {0}", "*": "~{0}"})
_unary("copy", np.copy, "{0}")

# -- elementwise binary ----------------------------------------------------------------------
_binary("add", np.add, {"b": "{0} or {1}", "i": _WRAP.replace("{op}", "+"), "*": "{0} + {1}"},
        commutative=True)
_binary("sub", np.subtract, {"i": _WRAP.replace("{op}", "-"), "*": "{0} - {1}"})
_binary("mul", np.multiply, {"b": "{0} and {1}", "i": _WRAP.replace("{op}", "*"),
                             "*": "{0} * {1}"}, commutative=True)
_binary("div", np.true_divide, "{0} / {1}", "nonzero")
_binary("floordiv", np.floor_divide, {"f": "ffloordiv({0}, {1})", "i": "sfloordiv({0}, {1})",
                                      "*": "ifloordiv({0}, {1})"}, "nonzero")
_binary("mod", np.remainder, {"f": "fmod_py({0}, {1})", "*": "imod({0}, {1})"}, "nonzero")
_binary("pow", np.power, {"f": "{0} ** {1}", "*": None})
_binary("max", np.maximum, {"f": "fmaximum({0}, {1})", "*": "max({0}, {1})"},
        commutative=True)
_binary("min", np.minimum, {"f": "fminimum({0}, {1})", "*": "min({0}, {1})"},
        commutative=True)
# np.clip's two halves: a value equal to the bound is kept (its sign of zero, not the bound's),
# a NaN value or bound gives NaN; np.maximum/np.minimum give the second operand on a tie.
# (np.clip with a None bound is np.maximum's rule: the references spell clip's out.)
_binary("clamp_lo", lambda x, lo: np.where((x >= lo) | (x != x), x, lo),
        {"f": "fclamp_lo({0}, {1})", "*": "max({0}, {1})"})
_binary("clamp_hi", lambda x, hi: np.where((x <= hi) | (x != x), x, hi),
        {"f": "fclamp_hi({0}, {1})", "*": "min({0}, {1})"})
_binary("fmax", np.fmax, {"f": "ffmax({0}, {1})", "*": "max({0}, {1})"}, commutative=True)
_binary("fmin", np.fmin, {"f": "ffmin({0}, {1})", "*": "min({0}, {1})"}, commutative=True)
_binary("arctan2", np.arctan2, "arctan2({0}, {1})")
_binary("eq", np.equal, "{0} == {1}", predicate=True, commutative=True)
_binary("ne", np.not_equal, "{0} != {1}", predicate=True, commutative=True)
_binary("lt", np.less, "{0} < {1}", predicate=True)
_binary("le", np.less_equal, "{0} <= {1}", predicate=True)
_binary("gt", np.greater, "{0} > {1}", predicate=True)
_binary("ge", np.greater_equal, "{0} >= {1}", predicate=True)
_binary("and", np.logical_and, "bool({0}) and bool({1})", predicate=True, commutative=True)
_binary("or", np.logical_or, "bool({0}) or bool({1})", predicate=True, commutative=True)
_binary("xor", np.logical_xor, "bool({0}) != bool({1})", predicate=True, commutative=True)
_binary("bitand", np.bitwise_and, {"b": "{0} and {1}", "*": "{0} & {1}"}, commutative=True)
_binary("bitor", np.bitwise_or, {"b": "{0} or {1}", "*": "{0} | {1}"}, commutative=True)
_binary("bitxor", np.bitwise_xor, {"b": "{0} != {1}", "*": "{0} ^ {1}"}, commutative=True)

register(OpDef("where", ELEMENTWISE, np.where, 3, "{1} if {0} else {2}"))
register(OpDef("cast", ELEMENTWISE, lambda x, dtype: np.asarray(x).astype(dtype), 1, "{0}"))
register(OpDef("full", ELEMENTWISE,
               lambda shape, dtype, value: np.full(shape, value, dtype), 0, "{value}"))


# -- reductions: attrs axes (sorted tuple of non-negative ints) and keepdims ---------------
def _argreduce(fn):
    def impl(x, axes, keepdims):
        x = np.asarray(x)
        if len(axes) == 1:
            return fn(x, axis=axes[0], keepdims=keepdims)
        flat = fn(x.reshape(-1))
        return np.reshape(flat, (1,) * x.ndim) if keepdims else flat
    return impl


def _reduction(name, fn):
    def impl(x, axes, keepdims):
        return fn(x, axis=axes, keepdims=keepdims)
    register(OpDef(name, REDUCE, impl, 1))


_reduction("sum", np.sum)
_reduction("prod", np.prod)
_reduction("reduce_max", np.max)
_reduction("reduce_min", np.min)
_reduction("any", np.any)
_reduction("all", np.all)
register(OpDef("argmax", REDUCE, _argreduce(np.argmax), 1))
register(OpDef("argmin", REDUCE, _argreduce(np.argmin), 1))

# -- views: always NumPy views of their input; the runtime applies them to buffers ---------
register(OpDef("reshape", VIEW, lambda x, shape: np.reshape(x, shape)))
register(OpDef("permute", VIEW, lambda x, perm: np.transpose(x, perm)))
register(OpDef("broadcast", VIEW, lambda x, shape: np.broadcast_to(x, shape)))
register(OpDef("expand_dims", VIEW, lambda x, axes: np.expand_dims(x, axes)))
register(OpDef("squeeze", VIEW, lambda x, axes: np.squeeze(x, axes)))
register(OpDef("getitem", VIEW, lambda x, key: np.asarray(x)[indexing.decode(key)]))


def inverse_perm(perm) -> tuple[int, ...]:
    """The permutation that undoes ``perm``: ``permute(permute(x, p), inverse_perm(p)) == x``."""
    inverse = [0] * len(perm)
    for k, axis in enumerate(perm):
        inverse[axis] = k
    return tuple(inverse)


# -- injective ops that copy: run through NumPy itself on the host ---------------------------
def _gather(x, *arrays, key):
    return np.asarray(x)[indexing.decode(key, arrays)]


def _written_copy(x) -> np.ndarray:
    """A copy of ``x`` to write into, laid out as ``x`` (order K); C-ordered where ``x`` is
    a broadcast (NumPy's order K makes the zero-stride axis the fastest: an F-ordered copy of
    ``np.full_like(a, a[0])``, where NumPy's array is C-ordered)."""
    x = np.asarray(x)
    return np.array(x, copy=True, order="C" if 0 in x.strides else "K")


def _setitem(x, value, *arrays, key):
    result = _written_copy(x)
    result[indexing.decode(key, arrays)] = value
    return result


def _scatter_add(x, value, *arrays, key):
    result = _written_copy(x)
    np.add.at(result, indexing.decode(key, arrays), value)
    return result


def _split(x, indices, axis):
    return tuple(np.split(x, list(indices), axis=axis))


def _pad(x, width, value):
    """``np.pad(x, width, constant_values=value)`` (``value`` already of x's dtype): the padded
    array filled with ``value``, ``x`` copied into its middle. np.pad's Python-level argument
    handling took 40 us of the 51 us it spent on conv's 4x32x16x16 input; this takes 14."""
    x = np.asarray(x)
    out = np.full(tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, width, strict=True)),
                  value, dtype=x.dtype)
    out[tuple(slice(lo, lo + d) for d, (lo, _) in zip(x.shape, width, strict=True))] = x
    return out


register(OpDef("gather", INJECTIVE, _gather, None))
register(OpDef("setitem", INJECTIVE, _setitem, None))
register(OpDef("scatter_add", INJECTIVE, _scatter_add, None))
register(OpDef("concatenate", INJECTIVE, lambda *xs, axis: np.concatenate(xs, axis), None))
register(OpDef("pad", INJECTIVE, _pad))
register(OpDef("tile", INJECTIVE, lambda x, reps: np.tile(x, reps)))
register(OpDef("repeat", INJECTIVE, lambda x, repeats, axis: np.repeat(x, repeats, axis)))
register(OpDef("split", VIEW, _split))
register(OpDef("matmul", MATMUL, np.matmul, 2))

def _host_impl(*arrays, fn, name, spec, nout, elementwise=False, varies=False):
    """An opaque NumPy call (``host np.linalg.solve a, b``): ``spec`` is the call's
    ``(args, kwargs)`` template whose ``("__operand__", k)`` placeholders are ``arrays[k]``
    (``("__operand__", k, float)``: a Python number the body passed, given back as one, so
    NumPy promotes it as the weak scalar it was). ``elementwise``: the NumPy reference of the
    elementwise op ``name``; ``varies``: on a value whose shape depends on data
    (``tracer.dynamic``)."""
    args, kwargs = host_arguments(arrays, spec)
    return host_results(fn(*args, **kwargs))


def host_arguments(arrays, spec) -> tuple:
    """The ``(args, kwargs)`` of a host call, its operands filled in."""
    def fill(item):
        if isinstance(item, tuple) and item[:1] == ("__operand__",):
            return arrays[item[1]] if len(item) == 2 else item[2](arrays[item[1]])
        if isinstance(item, tuple) and item[:1] == ("__slice__",):
            return slice(*item[1:])
        if isinstance(item, tuple) and item[:1] in (("__list__",), ("__tuple__",)):
            seq = [fill(x) for x in item[1:]]
            return seq if item[0] == "__list__" else tuple(seq)
        if isinstance(item, tuple) and item[:1] == ("__dict__",):
            return {k: fill(v) for k, v in item[1:]}
        return item
    return fill(spec[0]), fill(spec[1])


def host_results(result) -> tuple:
    results = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    return tuple(np.asarray(r) for r in results)


register(OpDef("host", OPAQUE, _host_impl, None))

REDUCE_OPS = ("sum", "prod", "reduce_max", "reduce_min", "any", "all", "argmax", "argmin")
# Vector math accurate only below a bound on |x|: a CPU elementwise kernel with them counts the
# arguments beyond it and, if there are any, runs again with libm (so it never writes in place).
RANGE_LIMITED_OPS = ("sin", "cos")


def evaluate(name: str, inputs, attrs) -> tuple:
    """Run the reference implementation; always returns a tuple of arrays."""
    result = get(name).impl(*inputs, **dict(attrs))
    if not isinstance(result, tuple):
        result = (result,)
    return tuple(np.asarray(r) for r in result)


def infer_types(name: str, in_types, attrs) -> tuple[TensorType, ...]:
    """Output types: explicit rules for the common kinds, else the reference run on
    zero-stride stand-ins."""
    op, attr = get(name), dict(attrs)
    if name == "full":
        return (TensorType(attr["shape"], attr["dtype"]),)
    if op.kind == ELEMENTWISE:
        return (_elementwise_type(op, in_types, attr),)
    if op.kind == REDUCE:
        return (_reduce_type(op, in_types[0], attr),)
    if name == "matmul":
        return (_matmul_type(*in_types),)
    if name in ("setitem", "scatter_add"):
        # The target's type whatever the index selects: a stand-in boolean mask would
        # select nothing and refuse a value with one entry per True element.
        return (TensorType(in_types[0].shape, in_types[0].dtype),)
    # Zeros: a stand-in index array must be in bounds even on an axis of size 1.
    dummies = [np.broadcast_to(np.zeros((), t.dtype), t.shape) for t in in_types]
    return tuple(TensorType(r.shape, r.dtype) for r in evaluate(name, dummies, attrs))


def _elementwise_type(op, in_types, attr) -> TensorType:
    shape = np.broadcast_shapes(*(t.shape for t in in_types))
    if op.predicate:
        return TensorType(shape, np.bool_)
    if op.name == "cast":
        return TensorType(shape, attr["dtype"])
    if op.name == "abs" and np.dtype(in_types[-1].dtype).kind == "c":
        return TensorType(shape, np.finfo(in_types[-1].dtype).dtype)   # |z| is real
    return TensorType(shape, in_types[-1].dtype)


def _reduce_type(op, x: TensorType, attr) -> TensorType:
    axes, keepdims = attr["axes"], attr["keepdims"]
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keepdims or i not in axes)
    if op.name in ("argmax", "argmin"):
        return TensorType(shape, np.intp)
    if op.name in ("any", "all"):
        return TensorType(shape, np.bool_)
    return TensorType(shape, x.dtype)


def _matmul_type(a: TensorType, b: TensorType) -> TensorType:
    inner_b = b.shape[-2] if b.ndim >= 2 else b.shape[0]
    if a.shape[-1] != inner_b:
        raise ValueError(f"matmul: mismatch in core dimension ({a.shape} @ {b.shape})")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    rows = a.shape[-2:-1] if a.ndim >= 2 else ()
    cols = b.shape[-1:] if b.ndim >= 2 else ()
    return TensorType(batch + rows + cols, np.result_type(a.dtype, b.dtype))
