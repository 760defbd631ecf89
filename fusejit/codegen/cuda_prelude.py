"""CUDA device helpers named by the op registry's templates, with NumPy's semantics.

Generated CUDA kernel modules do ``from fusejit.codegen.cuda_prelude import *``. Every helper
is a ``@cuda.jit(device=True, inline="always")`` function, so each kernel compiles to one
self-contained PTX function. Transcendentals call CUDA's ``math`` intrinsics (libdevice: IEEE
NaN/inf behaviour, as NumPy's). Helpers that need typed constants exist once per float dtype
(``rint_f32``, ``rint_f64``): the code generator picks ``name_<dtype>`` where one exists, so
float32 code never drifts into float64 arithmetic.

Under Numba's CUDA simulator the kernels run as Python: Python's ``math`` raises on overflow
and returns ints from ``floor``, so there the same helpers call NumPy's scalar functions.
"""
from __future__ import annotations

import math
import operator

import numpy as np
from numba import cuda
from numba.core import config

__all__ = [
    "arctan", "arctan2", "arg_take_max", "arg_take_min", "ceil", "cos", "cosh", "cuda", "erf",
    "exp", "expm1", "fclamp_hi", "fclamp_lo", "ffmax", "ffmin", "floor", "fmaximum", "fminimum",
    "ifloordiv", "imod", "sfloordiv",
    "isfinite", "isign", "isinf", "isnan", "log", "log1p", "log2", "log10", "math",
    "mul_rn_f32", "mul_rn_f64", "np", "sin", "sinh", "sqrt", "tan", "tanh",
]

SIMULATOR = bool(config.ENABLE_CUDASIM)
_device = cuda.jit(device=True, inline="always")
_lib = np if SIMULATOR else math
_exp, _expm1, _log, _log1p, _log2, _log10 = (
    _lib.exp, _lib.expm1, _lib.log, _lib.log1p, _lib.log2, _lib.log10)
_sqrt, _tanh, _sinh, _cosh, _sin, _cos, _tan = (
    _lib.sqrt, _lib.tanh, _lib.sinh, _lib.cosh, _lib.sin, _lib.cos, _lib.tan)
_floor, _ceil = _lib.floor, _lib.ceil
_atan = np.arctan if SIMULATOR else math.atan
_atan2 = np.arctan2 if SIMULATOR else math.atan2
_fmod, _copysign = (np.fmod, np.copysign) if SIMULATOR else (math.fmod, math.copysign)
_erf = math.erf  # Python's math.erf never raises; np has no scalar erf


if SIMULATOR:
    _fmul_rn = _dmul_rn = operator.mul
else:
    from numba.cuda import libdevice
    _fmul_rn, _dmul_rn = libdevice.fmul_rn, libdevice.dmul_rn


# A float product rounded on its own, as NumPy's: NVVM contracts ``a * b + c`` into one FMA by
# default (on an H200, floor(x * 10 + y) and E[x**2] - E[x]**2 differed from NumPy's, the
# latter negative under a sqrt). libdevice's ``*_rn`` multiplies are never contracted.
@_device
def mul_rn_f32(a, b):
    return _fmul_rn(a, b)


@_device
def mul_rn_f64(a, b):
    return _dmul_rn(a, b)


@_device
def exp(x):
    return _exp(x)


@_device
def expm1(x):
    return _expm1(x)


@_device
def log(x):
    return _log(x)


@_device
def log1p(x):
    return _log1p(x)


@_device
def log2(x):
    return _log2(x)


@_device
def log10(x):
    return _log10(x)


@_device
def sqrt(x):
    return _sqrt(x)


@_device
def tanh(x):
    return _tanh(x)


@_device
def sinh(x):
    return _sinh(x)


@_device
def cosh(x):
    return _cosh(x)


@_device
def sin(x):
    return _sin(x)


@_device
def cos(x):
    return _cos(x)


@_device
def tan(x):
    return _tan(x)


@_device
def arctan(x):
    return _atan(x)


@_device
def arctan2(y, x):
    return _atan2(y, x)


@_device
def erf(x):
    return _erf(x)


@_device
def floor(x):
    return _floor(x)


@_device
def ceil(x):
    return _ceil(x)


@_device
def isnan(x):
    return math.isnan(x)


@_device
def isinf(x):
    return math.isinf(x)


@_device
def isfinite(x):
    return math.isfinite(x)


@_device
def fmaximum(a, b):
    # np.maximum: a NaN in either operand propagates; equal operands (-0.0 and +0.0) give b,
    # as NumPy's loops and the CPU kernels do.
    return a if (a > b or a != a) else b


@_device
def fminimum(a, b):
    return a if (a < b or a != a) else b


@_device
def fclamp_lo(x, lo):
    # np.clip's lower half: a tie keeps x (-0.0 stays -0.0), a NaN x or lo gives NaN.
    return x if (x >= lo or x != x) else lo


@_device
def fclamp_hi(x, hi):
    return x if (x <= hi or x != x) else hi


@_device
def ffmax(a, b):
    # np.fmax: a NaN operand is ignored unless both are NaN.
    return a if (a >= b or b != b) else b


@_device
def ffmin(a, b):
    return a if (a <= b or b != b) else b


@_device
def isign(x):
    return 1 if x > 0 else (-1 if x < 0 else 0)


@_device
def ifloordiv(a, b):
    # np.floor_divide on unsigned ints: x // 0 == 0.
    if b == 0:
        return a * b
    return a // b


@_device
def sfloordiv(a, b):
    # np.floor_divide on signed ints: x // 0 == 0, MIN // -1 wraps to MIN (no SIGFPE); the
    # negation through uint64, as ``neg``: a signed one is LLVM's ``nsw``, which lets it
    # fold ``x // -1 < 0`` as if MIN could not come
    if b == 0:
        return a * b
    if b == -1:
        return np.int64(np.uint64(0) - np.uint64(a))
    return a // b


@_device
def imod(a, b):
    # np.remainder on ints: x % 0 == 0; the result has the divisor's sign.
    if b == 0 or b == -1:
        return a - a
    return a % b


@_device
def arg_take_max(best, best_index, value, index):
    """Whether (value, index) replaces (best, best_index) in argmax: empty slots have index
    -1; the first NaN wins; ties go to the smaller index (np.argmax)."""
    if index < 0:
        return False
    if best_index < 0:
        return True
    if best != best:
        return value != value and index < best_index
    if value != value:
        return True
    return value > best or (value == best and index < best_index)


@_device
def arg_take_min(best, best_index, value, index):
    if index < 0:
        return False
    if best_index < 0:
        return True
    if best != best:
        return value != value and index < best_index
    if value != value:
        return True
    return value < best or (value == best and index < best_index)


def _float_helpers(ftype):
    """Helpers whose constants must carry the operand's float type."""
    zero, one, half = ftype(0), ftype(1), ftype(0.5)

    @_device
    def rsqrt(x):
        return one / _sqrt(x)  # NumPy's reference: reciprocal(sqrt(x)), two roundings

    @_device
    def sigmoid(x):
        return one / (one + _exp(-x))  # exp overflow gives 1/inf = 0, never NaN

    @_device
    def fsign(x):
        return one if x > zero else (-one if x < zero else (zero if x == zero else x))

    @_device
    def rint(x):
        # Round half to even without libm's rint; keeps -0.0, NaN and inf.
        low = _floor(x)
        rest = x - low
        if rest > half or (rest == half and _fmod(low, ftype(2)) != zero):
            low = low + one
        return _copysign(low, x)

    @_device
    def divmod_(a, b):
        """npy_divmod for b != 0: (floor quotient, remainder with the divisor's sign)."""
        mod = _fmod(a, b)
        div = (a - mod) / b
        if mod != zero:
            if (b < zero) != (mod < zero):
                mod = mod + b
                div = div - one
        else:
            mod = _copysign(zero, b)
        if div != zero:
            quotient = _floor(div)
            if div - quotient > half:
                quotient = quotient + one
        else:
            quotient = _copysign(zero, a / b)
        return quotient, mod

    @_device
    def ffloordiv(a, b):
        if b == zero:
            return a / b  # +-inf, or NaN for 0/0 and NaN/0, as np.floor_divide
        return divmod_(a, b)[0]

    @_device
    def fmod_py(a, b):
        if b == zero:
            return _fmod(a, b)  # NaN, as np.remainder
        return divmod_(a, b)[1]

    return rsqrt, sigmoid, fsign, rint, ffloordiv, fmod_py


FLOAT_HELPERS = ("rsqrt", "sigmoid", "fsign", "rint", "ffloordiv", "fmod_py")
for _suffix, _ftype in (("f32", np.float32), ("f64", np.float64)):
    for _name, _helper in zip(FLOAT_HELPERS, _float_helpers(_ftype), strict=True):
        globals()[f"{_name}_{_suffix}"] = _helper
        __all__.append(f"{_name}_{_suffix}")
