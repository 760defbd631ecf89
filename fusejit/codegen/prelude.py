"""Scalar helpers named by the op registry's templates, with NumPy's exact semantics.

Generated kernel modules do ``from fusejit.codegen.prelude import *``. exp, expm1, log, log1p,
tanh, sigmoid and erf on float32/float64 use ``vecmath`` (branch-free, vectorizable, <= 4 ulp);
so do sin and cos in elementwise kernels, which fall back to the libm ones (``sin``, ``cos``)
when an argument is beyond the bound of vecmath's reduction. Plain NumPy ufuncs are
re-exported under the template names (Numba compiles them as scalar libm calls); the rest are
``@njit(inline="always")`` functions whose NaN, infinity, signed-zero and division-by-zero
behaviour follows NumPy's C loops (``npy_divmod``, ``scalar_max``...), not Python's.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from .interleave import interleave_loops
from .vecmath import VECMATH, VECMATH_SAFE_RANGE

# Vectorizable float32/float64 versions (``exp_f32``...), picked by the codegen per dtype.
VECTOR_OPS = ("exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf")
VECTOR_NAMES = {(name, dtype): f"{name}_{dtype[0]}{dtype[-2:]}"
                for name in VECTOR_OPS for dtype in ("float32", "float64")}
# sin and cos: accurate for |x| below VECMATH_SAFE_RANGE (``numba_cpu`` counts the others)
LIMITED_NAMES = {key: f"{key[0]}_{key[1][0]}{key[1][-2:]}" for key in VECMATH_SAFE_RANGE}
globals().update({name: VECMATH[key] for names in (VECTOR_NAMES, LIMITED_NAMES)
                  for key, name in names.items()})

__all__ = sorted(VECTOR_NAMES.values()) + sorted(LIMITED_NAMES.values()) + [
    "arctan", "arctan2", "ceil", "cos", "cosh", "crow", "erf", "exp", "expm1", "fclamp_hi",
    "fclamp_lo", "ffloordiv", "ffmax", "ffmin", "floor", "fmaximum", "fminimum", "fmod_py",
    "fsign", "ifloordiv", "imod", "interleave_loops", "sfloordiv",
    "isfinite", "isign", "isinf", "isnan", "log", "log1p", "log2", "log10", "never_inline",
    "np", "numba", "prefetch_row", "radd", "rint", "rmaximum", "rminimum", "rsqrt", "sigmoid",
    "sin", "sinh", "sqrt", "tan", "tanh", "unit_row", "vector_width",
]

_inline = numba.njit(inline="always", error_model="numpy")

exp, expm1, log, log1p, log2, log10 = np.exp, np.expm1, np.log, np.log1p, np.log2, np.log10
sqrt, tanh, sinh, cosh, sin, cos, tan = np.sqrt, np.tanh, np.sinh, np.cosh, np.sin, np.cos, np.tan
arctan, arctan2, floor, ceil, rint = np.arctan, np.arctan2, np.floor, np.ceil, np.rint
isnan, isinf, isfinite = np.isnan, np.isinf, np.isfinite


@numba.njit(fastmath={"reassoc"}, error_model="numpy")
def radd(acc, value):
    # A reduction's accumulation, and nothing else, may be reassociated: this flag on this one
    # fadd lets LLVM vectorize the loop (16x on an f32 sum) while NaN/inf still propagate.
    # Not inline="always": Numba's own inlining would lower it with the caller's strict flags;
    # LLVM inlines it and keeps the instruction's flag.
    return acc + value


@intrinsic
def crow(typingctx, array, lead):
    """Row ``array[lead]`` (``lead``: a tuple of all but the last index) as a 1-d array typed
    C-contiguous: Numba indexes it as ``data[i]``, so LLVM sees unit stride and vectorizes.
    Built from the data pointer and strides, without a meminfo (no refcount traffic per row;
    ``array`` owns the memory for the whole call). The caller checks ``unit_row`` first."""
    if not isinstance(array, types.Array) or len(lead) != array.ndim - 1:
        return None
    result = types.Array(array.dtype, 1, "C")

    def codegen(context, builder, signature, args):
        source, start, shape, _ = _row_start(context, builder, array, args)
        row = context.make_array(result)(context, builder)
        itemsize = context.get_constant(types.intp, context.get_abi_sizeof(
            context.get_data_type(array.dtype)))
        populate_array(row, data=builder.bitcast(start, source.data.type),
                       shape=[shape[-1]], strides=[itemsize], itemsize=itemsize, meminfo=None)
        return row._getvalue()
    return result(array, lead), codegen


def _row_start(context, builder, array, args):
    """(the array's struct, an i8 pointer to row ``args[1]``, its shape, its strides)."""
    source = context.make_array(array)(context, builder, args[0])
    indices = cgutils.unpack_tuple(builder, args[1], array.ndim - 1)
    strides = cgutils.unpack_tuple(builder, source.strides, array.ndim)
    shape = cgutils.unpack_tuple(builder, source.shape, array.ndim)
    offset = ir.Constant(ir.IntType(64), 0)
    for index, stride in zip(indices, strides, strict=False):
        offset = builder.add(offset, builder.mul(index, stride))
    start = builder.gep(builder.bitcast(source.data, ir.IntType(8).as_pointer()), [offset])
    return source, start, shape, strides


# The most of a row ``prefetch_row`` asks for: the current and the next rows of a kernel's
# inputs should fit in L2 together (2 MiB a core here); past it the hardware prefetcher,
# which follows a pass once it has started, streams the rest.
PREFETCH_BYTES = 64 * 1024


@intrinsic
def prefetch_row(typingctx, array, lead):
    """A hint that row ``array[lead]`` (as ``crow``'s) is read soon: one ``llvm.prefetch`` into
    L2 per 64-byte line of its first ``PREFETCH_BYTES``. Emitted after the first pass of a
    row-persistent kernel for the next row, so that memory fetches it while the later passes
    run over the current row in L1 (layernorm's memory sat idle for those). A prefetch never
    faults; callers still keep ``lead`` in bounds."""
    if not isinstance(array, types.Array) or len(lead) != array.ndim - 1:
        return None

    def codegen(context, builder, signature, args):
        _, start, shape, strides = _row_start(context, builder, array, args)
        byte = ir.IntType(8).as_pointer()
        size = builder.mul(shape[-1], strides[-1])
        limit = ir.Constant(ir.IntType(64), PREFETCH_BYTES)
        size = builder.select(builder.icmp_signed("<", size, limit), size, limit)
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # (address, 0: read, 2: locality of prefetcht1, i.e. L2, 1: data cache)
        flags = [ir.Constant(i32, value) for value in (0, 2, 1)]
        with cgutils.for_range_slice(builder, ir.Constant(ir.IntType(64), 0), size,
                                     ir.Constant(ir.IntType(64), 64)) as (line, _):
            builder.call(fn, [builder.gep(start, [line]), *flags])
        return context.get_dummy_value()
    return types.none(array, lead), codegen


@intrinsic
def vector_width(typingctx, bits):
    """Asks LLVM to vectorize the function being lowered ``bits`` wide (a literal int): a
    ``"prefer-vector-width"`` attribute, read by the x86 backend per function. A call inside a
    ``prange`` body marks the parfor's outlined function, where the loops are."""
    if not isinstance(bits, types.IntegerLiteral):
        return None

    def codegen(context, builder, signature, args):
        # llvmlite's FunctionAttributes accepts only enum attributes; a string attribute is
        # printed verbatim in the definition, where LLVM reads it.
        set.add(builder.function.attributes, f'"prefer-vector-width"="{bits.literal_value}"')
        return context.get_dummy_value()
    return types.none(bits), codegen


@intrinsic
def never_inline(typingctx):
    """Keeps LLVM from inlining the function being lowered into its callers (``noinline``):
    a row loop (``outline``) inlined back into a ``prange`` body is a nest of loops again,
    whose hoisted constants the x86 backend reloads in the inner loop when registers run out
    (gelu 2.0 ms as its own function, 2.45 inlined, on AVX2 at 4096x1024)."""
    def codegen(context, builder, signature, args):
        builder.function.attributes.add("noinline")
        return context.get_dummy_value()
    return types.none(), codegen


@_inline
def unit_row(array):
    # The last axis is contiguous (or too short to have a stride that matters).
    return array.shape[-1] <= 1 or array.strides[-1] == array.itemsize


def _llvm_binary(name: str):
    """``llvm.<name>`` on two floats of one type: LLVM's loop vectorizer knows these as
    reductions (``maximum``/``minimum`` propagate NaN exactly like np.max/np.min), where the
    compare-and-branch spelling stays scalar (measured: 0.42 vs 6.0 ms over 4M float32).
    ``nsz``: which of a tied -0.0 and +0.0 wins is left open, as NumPy's own max/min
    reductions leave it (their SIMD loops return either); that drops x86's sign-of-zero
    fix-up, a third of the instructions of softmax's max pass."""
    @intrinsic
    def call(typingctx, a, b):
        def codegen(context, builder, signature, args):
            kind = args[0].type
            suffix = "f32" if kind == ir.FloatType() else "f64"
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(kind, [kind, kind]), f"llvm.{name}.{suffix}")
            return builder.call(fn, args, fastmath=("nsz",))
        return a(a, b), codegen
    return call


rmaximum, rminimum = _llvm_binary("maximum"), _llvm_binary("minimum")


@_inline
def erf(x):
    return math.erf(x)


@_inline
def rsqrt(x):
    # NumPy's reference is reciprocal(sqrt(x)): two roundings, reproduced in the input dtype.
    root = np.sqrt(x)
    return 1 / root


@_inline
def sigmoid(x):
    # 1 / (1 + exp(-x)), as the reference: exp overflow gives 1/inf = 0, never NaN.
    return 1 / (1 + np.exp(-x))


@_inline
def fmaximum(a, b):
    # np.maximum: a NaN in either operand propagates; equal operands (-0.0 and +0.0) give b,
    # as NumPy's loops do.
    return a if (a > b or a != a) else b


@_inline
def fminimum(a, b):
    return a if (a < b or a != a) else b


@_inline
def fclamp_lo(x, lo):
    # np.clip's lower half: a tie keeps x (-0.0 stays -0.0), a NaN x or lo gives NaN.
    return x if (x >= lo or x != x) else lo


@_inline
def fclamp_hi(x, hi):
    return x if (x <= hi or x != x) else hi


@_inline
def ffmax(a, b):
    # np.fmax: a NaN operand is ignored unless both are NaN.
    return a if (a >= b or b != b) else b


@_inline
def ffmin(a, b):
    return a if (a <= b or b != b) else b


@_inline
def fsign(x):
    # np.sign: NaN stays NaN, both zeros give +0.0.
    return 1.0 if x > 0 else (-1.0 if x < 0 else (0.0 if x == 0 else x))


@_inline
def isign(x):
    return (x > 0) - (x < 0)


@_inline
def _divmod(a, b):
    """npy_divmod for b != 0: (floor quotient, remainder with the divisor's sign)."""
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod:
        if (b < 0) != (mod < 0):
            mod += b
            div -= 1.0
    else:
        mod = np.copysign(0.0, b)
    if div:
        floordiv = np.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
    else:
        floordiv = np.copysign(0.0, a / b)
    return floordiv, mod


@_inline
def ffloordiv(a, b):
    if not b:
        return a / b  # +-inf, or NaN for 0/0 and NaN/0, as np.floor_divide
    return _divmod(a, b)[0]


@_inline
def fmod_py(a, b):
    if not b:
        return np.fmod(a, b)  # NaN, as np.remainder
    return _divmod(a, b)[1]


@_inline
def ifloordiv(a, b):
    # np.floor_divide on unsigned ints: x // 0 == 0.
    if b == 0:
        return a * b
    return a // b


@_inline
def sfloordiv(a, b):
    # np.floor_divide on signed ints: x // 0 == 0, MIN // -1 wraps to MIN (no SIGFPE); the
    # negation through uint64, as ``neg``: a signed one is LLVM's ``nsw``, which lets it
    # fold ``x // -1 < 0`` as if MIN could not come
    if b == 0:
        return a * b
    if b == -1:
        return np.int64(np.uint64(0) - np.uint64(a))
    return a // b


@_inline
def imod(a, b):
    # np.remainder on ints: x % 0 == 0; the result has the divisor's sign.
    if b == 0 or b == -1:
        return a - a
    return a % b
