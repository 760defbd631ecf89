"""Transcendental functions as branch-free arithmetic that LLVM vectorizes inside prange loops.

Numba lowers ``np.exp``/``math.tanh``... to scalar libm calls, which stop the loop vectorizer
(no SVML here): a fused kernel calling them runs 5-40x slower than NumPy's SIMD loops. Every
function below is range reduction + polynomial, with special cases resolved by selects at the
end, so ``for i in prange(n): out[i] = tanh_f32(x[i])`` compiles to AVX-512/AVX2 code.

Design choices:

* float64 algorithms keep a hi/lo split of every reduction constant and Taylor or fitted
  polynomials long enough for < 1 ulp of truncation error; measured max errors are in
  ``tests/codegen/test_vecmath.py``.
* float32 exp, expm1, log, log1p, tanh, sigmoid and erf are native float32 code, 16 lanes per
  zmm (log with the float64 algorithm's reduction and series in float32 arithmetic; expm1,
  tanh and erf share exp's reduction). float32 sin and cos evaluate the float64 algorithm
  and round once at the end: <= 1 ulp, at half the SIMD width.
* Exponent manipulation goes through ``bitcast`` intrinsics (2**k = bits((k + 1023) << 52)),
  which vectorize, where ``math.ldexp`` is a libm call.
* Polynomials are Horner chains emitted straight into the IR from constant tuples, so the
  compiled code has no loop and no call.

``VECMATH[(name, dtype_name)]`` is the codegen's lookup table. ``VECMATH_SAFE_RANGE`` gives the
|x| bound beyond which a function is not accurate (only sin/cos: their Cody-Waite reduction
needs k * part exact); a kernel using them counts the arguments beyond it and runs again with
libm when there are any (``numba_cpu``).
"""
from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .. import config
from .always_inline import always_inline as _inline

# Horner steps as fused multiply-adds (one rounding each, one instruction) where the CPU has
# them; elsewhere llvm.fma would become a libm call per element.
_HAS_FMA = config.cpu_has("fma")
# AVX-512's vscalefps/vscalefpd multiply by 2**k with one rounding, overflow and subnormal
# results included, and keep NaN: LLVM lowers llvm.ldexp to them. Elsewhere ldexp is a libm
# call per element, and exp scales through the exponent bits instead (``_scale_f32``,
# ``_scale_pow2``: 8 to 10 instructions where vscalef is 3 with its conversions).
_HAS_SCALEF = config.cpu_has("avx512f")

_I64 = ir.IntType(64)
_MANTISSA_BITS = 52
_EXP_BIAS = 1023


# --- bit-level helpers --------------------------------------------------------------------

@intrinsic
def _pow2(typingctx, k):
    """2.0**k for an integral float64 k in [-1022, 1023]: the exponent field built directly."""
    def codegen(context, builder, signature, args):
        k_int = builder.fptosi(args[0], _I64)
        biased = builder.add(k_int, ir.Constant(_I64, _EXP_BIAS))
        bits = builder.shl(biased, ir.Constant(_I64, _MANTISSA_BITS))
        return builder.bitcast(bits, ir.DoubleType())
    return types.float64(types.float64), codegen


@intrinsic
def _pow2_f32(typingctx, k):
    """float32 2.0**k for an integral float32 k in [-126, 127]."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        biased = builder.add(builder.fptosi(args[0], i32), ir.Constant(i32, 127))
        return builder.bitcast(builder.shl(biased, ir.Constant(i32, 23)), ir.FloatType())
    return types.float32(types.float32), codegen


@intrinsic
def _pow2_shifted_f32(typingctx, shifted):
    """float32 2.0**k for ``shifted`` = k + 1.5 * 2**23 with k in [-126, 127] (k in the low
    mantissa bits, as ``_reduce_ln2_f32`` leaves it): two integer instructions, and no
    float-to-int conversion, which would make a NaN poison (any bits come out of a NaN here)."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        # shifted's bits are 0x4B400000 + k; shifted left by 23, 0x4B400000 wraps to 0
        bits = builder.shl(builder.bitcast(args[0], i32), ir.Constant(i32, 23))
        return builder.bitcast(builder.add(bits, ir.Constant(i32, 127 << 23)), ir.FloatType())
    return types.float32(types.float32), codegen


@intrinsic
def _split_exponent(typingctx, x):
    """(unbiased exponent field as float64, x with exponent set to 0 i.e. in [1, 2))."""
    def codegen(context, builder, signature, args):
        bits = builder.bitcast(args[0], _I64)
        field = builder.lshr(bits, ir.Constant(_I64, _MANTISSA_BITS))
        field = builder.and_(field, ir.Constant(_I64, 0x7FF))
        exponent = builder.sitofp(builder.sub(field, ir.Constant(_I64, _EXP_BIAS)),
                                  ir.DoubleType())
        mantissa_bits = builder.and_(bits, ir.Constant(_I64, (1 << _MANTISSA_BITS) - 1))
        one_bits = ir.Constant(_I64, _EXP_BIAS << _MANTISSA_BITS)
        mantissa = builder.bitcast(builder.or_(mantissa_bits, one_bits), ir.DoubleType())
        return context.make_tuple(builder, signature.return_type, (exponent, mantissa))
    return types.UniTuple(types.float64, 2)(types.float64), codegen


@intrinsic
def _subnormal_scaled_f32(typingctx, x):
    """A positive subnormal float32 times 2**149, exactly: its bits as an integer, converted
    (x * 2**23 would cost a microcode assist per vector instruction on x86: a subnormal
    operand without denormals-are-zero)."""
    def codegen(context, builder, signature, args):
        return builder.sitofp(builder.bitcast(args[0], ir.IntType(32)), ir.FloatType())
    return types.float32(types.float32), codegen


@intrinsic
def _reduce_sqrt2_f32(typingctx, x):
    """(k as float32, m) with x = 2**k m and m in [sqrt(1/2), sqrt(2)), for a positive normal
    float32 x: integer arithmetic on the bits (offsetting the exponent field by sqrt(1/2)'s
    mantissa moves the carry to m = sqrt(2)), no comparison and no select."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        shifted = builder.add(builder.bitcast(args[0], i32),
                              ir.Constant(i32, 0x3F800000 - 0x3F3504F3))
        k = builder.sub(builder.ashr(shifted, ir.Constant(i32, 23)), ir.Constant(i32, 127))
        m_bits = builder.add(builder.and_(shifted, ir.Constant(i32, 0x007FFFFF)),
                             ir.Constant(i32, 0x3F3504F3))
        values = (builder.sitofp(k, ir.FloatType()), builder.bitcast(m_bits, ir.FloatType()))
        return context.make_tuple(builder, signature.return_type, values)
    return types.UniTuple(types.float32, 2)(types.float32), codegen


def _fma_ir(builder, a, b, c):
    """IR for a * b + c: one llvm.fma where the CPU has FMA (else a libm call per element), a
    multiply and an add elsewhere."""
    return builder.fma(a, b, c) if _HAS_FMA else builder.fadd(builder.fmul(a, b), c)


@intrinsic
def _scale_f32(typingctx, p, shifted):
    """float32 p * 2**k, rounded once, for p in [0.5, 2) and ``shifted`` = k + 1.5 * 2**23 (k
    in its low mantissa bits: k = bits - 0x4B400000) with k in [-150, 128]: k's exponent is
    added to p's bits, less one or plus 64 so that the sum stays a normal number, and the
    multiplication by 2 or 2**-64 after it rounds the result (overflow to inf, underflow to a
    subnormal or zero) exactly once."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        k = builder.sub(builder.bitcast(args[1], i32), ir.Constant(i32, 0x4B400000))
        low = builder.icmp_signed("<", k, ir.Constant(i32, -63))
        k = builder.add(k, builder.select(low, ir.Constant(i32, 64), ir.Constant(i32, -1)))
        bits = builder.add(builder.bitcast(args[0], i32), builder.shl(k, ir.Constant(i32, 23)))
        factor = builder.select(low, ir.Constant(ir.FloatType(), 2.0**-64),
                                ir.Constant(ir.FloatType(), 2.0))
        return builder.fmul(builder.bitcast(bits, ir.FloatType()), factor)
    return types.float32(types.float32, types.float32), codegen


def _ldexp_ir(builder, value, k_int):
    kind = value.type
    fnty = ir.FunctionType(kind, [kind, k_int.type])
    name = f"llvm.ldexp.{'f32' if kind == ir.FloatType() else 'f64'}.i{k_int.type.width}"
    return builder.call(cgutils.get_or_insert_function(builder.module, fnty, name),
                        [value, k_int])


@intrinsic
def _ldexp_shifted_f32(typingctx, p, shifted):
    """float32 p * 2**k rounded once (llvm.ldexp), k = bits(shifted) - 0x4B400000 as in
    ``_scale_f32``, for any p and k: a NaN p stays NaN (k comes from the bits, never from a
    float-to-int conversion, which would be poison for NaN)."""
    def codegen(context, builder, signature, args):
        i32 = ir.IntType(32)
        k = builder.sub(builder.bitcast(args[1], i32), ir.Constant(i32, 0x4B400000))
        return _ldexp_ir(builder, args[0], k)
    return types.float32(types.float32, types.float32), codegen


@intrinsic
def _ldexp_f64(typingctx, y, k):
    """float64 y * 2**k rounded once (llvm.ldexp) for an integral float64 k (not NaN) of at
    most 2**31 in magnitude."""
    def codegen(context, builder, signature, args):
        return _ldexp_ir(builder, args[0], builder.fptosi(args[1], ir.IntType(32)))
    return types.float64(types.float64, types.float64), codegen


@intrinsic
def _clamp_nan_f32(typingctx, x, lo, hi):
    """min(max(x, lo), hi) with a NaN x passed through: compare-and-select, which x86 lowers
    to one vmaxps and one vminps with the operand order that returns x when it is NaN."""
    def codegen(context, builder, signature, args):
        x, lo, hi = args
        low = builder.select(builder.fcmp_ordered("<", x, lo), lo, x)
        return builder.select(builder.fcmp_ordered(">", low, hi), hi, low)
    return types.float32(types.float32, types.float32, types.float32), codegen


@intrinsic
def _clamp_f32(typingctx, x, lo, hi):
    """min(max(x, lo), hi) as one vmaxps and one vminps: ``nnan`` llvm.maxnum/minnum. A NaN x
    gives poison, which callers must not select (they return x + x for a NaN x)."""
    def codegen(context, builder, signature, args):
        kind = ir.FloatType()
        fnty = ir.FunctionType(kind, [kind, kind])
        maxnum = cgutils.get_or_insert_function(builder.module, fnty, "llvm.maxnum.f32")
        minnum = cgutils.get_or_insert_function(builder.module, fnty, "llvm.minnum.f32")
        low = builder.call(maxnum, [args[0], args[1]], fastmath=("nnan",))
        return builder.call(minnum, [low, args[2]], fastmath=("nnan",))
    return types.float32(types.float32, types.float32, types.float32), codegen


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c with one rounding where the CPU has FMA (two roundings elsewhere)."""
    if not (a == b == c and a in (types.float32, types.float64)):
        return None

    def codegen(context, builder, signature, args):
        return _fma_ir(builder, *args)
    return a(a, b, c), codegen


@intrinsic
def _horner(typingctx, t, coeffs_high_first):
    """Horner's rule unrolled in the IR: Numba would lower a loop over the tuple, and LLVM
    stops fully unrolling those at about 16 coefficients, which blocks vectorization."""
    if not (isinstance(coeffs_high_first, types.UniTuple)
            and coeffs_high_first.dtype == t and t in (types.float32, types.float64)):
        return None

    def codegen(context, builder, signature, args):
        t_value, coeffs = args
        acc = builder.extract_value(coeffs, 0)
        for i in range(1, signature.args[1].count):
            coeff = builder.extract_value(coeffs, i)
            acc = _fma_ir(builder, acc, t_value, coeff)
        return acc
    return t(t, coeffs_high_first), codegen


@_inline
def _clamp(x, lo, hi):
    # NaN maps to hi; callers restore NaN with a final select.
    y = x if x > lo else lo
    return y if y < hi else hi


# --- constants ----------------------------------------------------------------------------
# Reduction constants are split from 60-digit decimal values: every part but the last has at
# most `bits` significant bits, so k * part is exact for |k| < 2**(53 - bits).

_LN2 = "0.693147180559945309417232121458176568075500134360255254120680009"
_LOG2E = "1.44269504088896340735992468100189213742664595415298593413544940"
_PIO2 = "1.57079632679489661923132169163975144209858469968755291048747230"
_TWO_OVER_PI = "0.636619772367581343075535053490057448137838582961825794990669376"
_TWO_OVER_SQRT_PI = "1.12837916709551257389615890312154517168810125865799771368817145"


def _split(value: str, parts: int, bits: int) -> tuple[float, ...]:
    remaining = Fraction(Decimal(value))
    out = []
    for _ in range(parts - 1):
        _, exponent = math.frexp(float(remaining))
        quantum = Fraction(2) ** (exponent - bits)
        head = round(remaining / quantum) * quantum
        out.append(float(head))
        remaining -= head
    out.append(float(remaining))
    return tuple(out)


def _high_first(coeffs) -> tuple[float, ...]:
    return tuple(float(c) for c in reversed(list(coeffs)))


_LN2_HI, _LN2_LO = _split(_LN2, 2, 32)           # e * _LN2_HI exact for |e| < 2**21
_PIO2_PARTS = _split(_PIO2, 4, 26)               # k * part exact for |k| < 2**27
_INV_LN2 = float(Decimal(_LOG2E))
_INV_PIO2 = float(Decimal(_TWO_OVER_PI))

# expm1(r) = r + r*r * P(r), P = Taylor 1/n! for n >= 2. |r| <= ln2/2: truncation after r**13
# is 4e-18 relative (float64).
_EXPM1_TAIL_F64 = _high_first(Fraction(1, math.factorial(n)) for n in range(2, 14))

# log(1+f) = f - (h - s*(h + R)), s = f/(2+f), h = f*f/2, R = sum_{n>=1} 2 s**2n / (2n+1):
# the atanh series, |s| <= 0.1716; 10 terms leave 2e-18, 5 terms 1e-10 (float32's, evaluated in
# float32 arithmetic).
_LOG_R_F64 = _high_first([0.0] + [Fraction(2, 2 * n + 1) for n in range(1, 11)])
_LOG_R_F32 = _high_first([0.0] + [Fraction(2, 2 * n + 1) for n in range(1, 6)])

# sin(r) = r + r**3 * S(r*r), cos(r) = 1 - (r*r/2 - r**4 * C(r*r)), Taylor, |r| <= pi/4:
# truncation 1e-19 (float64) / 3e-11 (float32).
_SIN_TAIL_F64 = _high_first(Fraction((-1) ** n, math.factorial(2 * n + 1)) for n in range(1, 10))
_COS_TAIL_F64 = _high_first(Fraction((-1) ** n, math.factorial(2 * n)) for n in range(2, 11))
_SIN_TAIL_F32 = _high_first(Fraction((-1) ** n, math.factorial(2 * n + 1)) for n in range(1, 6))
_COS_TAIL_F32 = _high_first(Fraction((-1) ** n, math.factorial(2 * n)) for n in range(2, 7))

# erf(x) = x * T(x*x) for |x| < 1: Taylor 2/sqrt(pi) (-1)**n / (n! (2n+1)), 20 terms (2e-19).
with localcontext() as _ctx:
    _ctx.prec = 60
    _ERF_TAYLOR = _high_first(
        Decimal(_TWO_OVER_SQRT_PI) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
        for n in range(20))
# erfcx(x) = exp(x*x) erfc(x) as a polynomial in t = (2x - a - b)/(b - a) on [a, b] = [1, 2.5]
# and [2.5, 6]: Chebyshev least-squares fits (degree 22 / 18) to scipy.special.erfcx at 4000
# Chebyshev nodes, converted to monomials in t (bench/vecmath_bench.py --fit reproduces them).
# Relative error ~2e-15, which erf = 1 - exp(-x*x) erfcx(x) shrinks by erfc/erf <= 0.19.
_ERFCX_1_25 = (
    0.28497223473743655, -0.09823225913586463, 0.03136704192397422, -0.009390935492408893,
    0.0026591791245331774, -0.0007168914468169672, 0.00018495607375063666, -4.5856154181184295e-05,
    1.0962927878314903e-05, -2.5345858920050974e-06, 5.678624581175786e-07,
    -1.2340273354618656e-07, 2.6641150468131424e-08, -5.961363521294998e-09,
    2.7227773018746667e-10, 5.176357108901202e-10, 1.026174347027017e-09, -6.026431588085091e-10,
    -7.383243801132982e-10, 2.6908178226131967e-10, 3.1536789178120433e-10, -5.21454893881789e-11,
    -5.820190748292505e-11,
)
_ERFCX_25_6 = (
    0.12934527478598778, -0.05065257997559081, 0.01939134046375674, -0.007266954316617539,
    0.002669003716371086, -0.000961732994982996, 0.0003403116226481683, -0.00011835406531322665,
    4.0486218833634514e-05, -1.3632260268883483e-05, 4.520794825374039e-06,
    -1.4761513299288418e-06, 4.7558640663850865e-07, -1.5315234855045006e-07,
    4.813490033049379e-08, -1.3118412498014534e-08, 3.971584894730066e-09, -2.0954377109862238e-09,
    6.355263192935732e-10,
)

_ERFCX_1_25_HF = _high_first(_ERFCX_1_25)
_ERFCX_25_6_HF = _high_first(_ERFCX_25_6)


# --- exp / expm1 ---------------------------------------------------------------------------
# x = k ln2 + r with |r| <= ln2/2 (Cody-Waite, hi/lo ln2); exp(x) = 2**k (1 + expm1(r)).

_EXP_OVERFLOW = 709.782712893384      # largest double whose exp is finite
_EXP_UNDERFLOW = -745.1332191019412   # below: exp rounds to +0.0
_EXPM1_SATURATE = -45.0               # below: expm1 rounds to -1.0


@_inline
def _reduce_ln2(x):
    k = np.floor(x * _INV_LN2 + 0.5)
    return k, (x - k * _LN2_HI) - k * _LN2_LO


@_inline
def _scale_pow2(y, k):
    # y * 2**k for k in [-1080, 1030] in two exact steps, so subnormal and near-overflow results
    # round once, in the last multiplication.
    k_half = np.floor(k * 0.5)
    return (y * _pow2(k_half)) * _pow2(k - k_half)


_scale_exp_f64 = _ldexp_f64 if _HAS_SCALEF else _scale_pow2


@_inline
def _exp_core(x, expm1_tail):
    below = x < _EXP_UNDERFLOW     # exp(0) computed, 0 selected: no underflow (_exp_f32_bits)
    xc = _clamp(0.0 if below else x, _EXP_UNDERFLOW - 1.0, _EXP_OVERFLOW + 1.0)
    k, r = _reduce_ln2(xc)
    y = _scale_exp_f64(1.0 + _fma(r * r, _horner(r, expm1_tail), r), k)
    y = np.inf if x > _EXP_OVERFLOW else y
    y = 0.0 if below else y
    return x + x if x != x else y


@_inline
def _expm1_core(x, expm1_tail):
    xc = _clamp(x, _EXPM1_SATURATE, _EXP_OVERFLOW + 1.0)
    k, r = _reduce_ln2(xc)
    em_r = _fma(r * r, _horner(r, expm1_tail), r)
    # Moderate k: 2**k em_r + (2**k - 1) has one rounding (2**k - 1 is exact for k <= 53).
    p = _pow2(_clamp(k, -1000.0, 1000.0))
    moderate = p * em_r + (p - 1.0)
    large = _scale_exp_f64(1.0 + em_r, k)     # -1 is below half an ulp here
    y = moderate if k <= 52.0 else large
    y = em_r if k == 0.0 else y
    y = x if abs(x) < 1e-18 else y          # expm1 x rounds to x; keeps -0.0
    y = np.inf if x > _EXP_OVERFLOW else y
    return x + x if x != x else y


# --- log / log1p ---------------------------------------------------------------------------
# x = 2**e m, m in [sqrt(1/2), sqrt(2)), f = m - 1 exact; log x = e ln2 + log1p(f) (atanh form).

_TWO_POW_54 = 2.0 ** 54
_SQRT2 = math.sqrt(2.0)


@_inline
def _log_core(x, log_r):
    subnormal = x < 2.2250738585072014e-308
    xs = x * _TWO_POW_54 if subnormal else x
    e, m = _split_exponent(xs)
    e = e - 54.0 if subnormal else e
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1.0 if big else e
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    half_f2 = 0.5 * f * f
    tail = s * (half_f2 + _horner(z, log_r)) + e * _LN2_LO
    y = e * _LN2_HI - ((half_f2 - tail) - f)
    y = np.inf if x == np.inf else y
    y = -np.inf if x == 0.0 else y
    y = np.nan if x < 0.0 else y
    return x + x if x != x else y


@_inline
def _log1p_core(x, log_r):
    # log1p x = log(u) * x / (u - 1) with u = 1 + x rounded: the quotient corrects u's rounding
    # (Goldberg's trick); u == 1 means x is below half an ulp of 1 and log1p x rounds to x.
    u = 1.0 + x
    d = u - 1.0
    d_safe = d if d != 0.0 else 1.0
    y = _log_core(u, log_r) * (x / d_safe)
    y = x if d == 0.0 else y
    y = np.inf if x == np.inf else y
    return x + x if x != x else y


# --- tanh / sigmoid ------------------------------------------------------------------------

@_inline
def _tanh_core(x, expm1_tail):
    # tanh|x| = e / (e + 2), e = expm1(2|x|): no cancellation near 0; tanh(22) rounds to 1.
    ax = _clamp(abs(x), 0.0, 22.0)
    e = _expm1_core(ax + ax, expm1_tail)
    y = math.copysign(e / (e + 2.0), x)
    return x + x if x != x else y


@_inline
def _sigmoid_core(x, expm1_tail, overflow):
    # 1/(1+exp(-x)) for x >= 0, exp(x)/(1+exp(x)) below, so exp never overflows; where the
    # reference formula's exp(-x) overflows in the input dtype its result 1/inf = 0 is kept.
    e = _exp_core(-abs(x), expm1_tail)
    s = 1.0 / (1.0 + e)
    y = s if x >= 0.0 else e * s
    y = 0.0 if x < -overflow else y
    return x + x if x != x else y


# --- sin / cos -----------------------------------------------------------------------------
# x = k pi/2 + r, |r| <= pi/4, four-part Cody-Waite (exact products for |k| < 2**27), then the
# quadrant k mod 4 picks +-sin r or +-cos r.

SIN_COS_LIMIT = 2.0 ** 26      # |x| bound of the reduction (k < 2**27 with margin)


@_inline
def _reduce_pio2(x):
    k = np.floor(x * _INV_PIO2 + 0.5)
    r = x - k * _PIO2_PARTS[0]
    r = r - k * _PIO2_PARTS[1]
    r = r - k * _PIO2_PARTS[2]
    r = r - k * _PIO2_PARTS[3]
    quadrant = k - 4.0 * np.floor(k * 0.25)
    return quadrant, r


@_inline
def _sin_cos_poly(r, sin_tail, cos_tail):
    z = r * r
    sin_r = r + r * z * _horner(z, sin_tail)
    cos_r = 1.0 - (0.5 * z - z * z * _horner(z, cos_tail))
    return sin_r, cos_r


@_inline
def _sin_quadrant(quadrant, sin_r, cos_r):
    y = sin_r if quadrant == 0.0 else cos_r
    y = -sin_r if quadrant == 2.0 else y
    return -cos_r if quadrant == 3.0 else y


@_inline
def _sin_core(x, sin_tail, cos_tail):
    quadrant, r = _reduce_pio2(x)
    sin_r, cos_r = _sin_cos_poly(r, sin_tail, cos_tail)
    y = _sin_quadrant(quadrant, sin_r, cos_r)
    return x if abs(x) < 1e-9 else y       # sin x rounds to x; keeps -0.0


@_inline
def _cos_core(x, sin_tail, cos_tail):
    quadrant, r = _reduce_pio2(x)
    sin_r, cos_r = _sin_cos_poly(r, sin_tail, cos_tail)
    shifted = quadrant + 1.0
    return _sin_quadrant(shifted if shifted < 4.0 else 0.0, sin_r, cos_r)


# --- erf -----------------------------------------------------------------------------------

@_inline
def _erf_core(x):
    ax = abs(x)
    small = x * _horner(x * x, _ERF_TAYLOR)
    mid_t = (ax - 1.75) * (1.0 / 0.75)
    high_t = (_clamp(ax, 2.5, 6.0) - 4.25) * (1.0 / 1.75)
    # Both pieces are evaluated and selected: a branch around a polynomial stops vectorization.
    erfcx_mid = _horner(mid_t, _ERFCX_1_25_HF)
    erfcx_high = _horner(high_t, _ERFCX_25_6_HF)
    erfcx = erfcx_mid if ax < 2.5 else erfcx_high
    # exp(-x*x) with x*x rounded costs x*x*eps relative, times erfc/erf: < 0.2 ulp of erf.
    large = 1.0 - _exp_core(-ax * ax, _EXPM1_TAIL_F64) * erfcx
    large = 1.0 if ax > 6.0 else large
    y = small if ax < 1.0 else math.copysign(large, x)
    return x + x if x != x else y


# --- native float32: exp, sigmoid, tanh ----------------------------------------------------
# The hottest ML activations get a float32-only path: 16 lanes per zmm instead of 8 and shorter
# polynomials. Every constant is an np.float32 global, because a Python float literal would
# promote the arithmetic to float64.

_F32 = np.float32
_F32_ONE, _F32_TWO = _F32(1.0), _F32(2.0)
_F32_LN2_HI, _F32_LN2_LO = (_F32(part) for part in _split(_LN2, 2, 16))  # |k| <= 151 exact
_F32_LOG2E = _F32(float(Decimal(_LOG2E)))
_F32_EXP_LO, _F32_EXP_HI = _F32(-104.0), _F32(89.0)   # exp underflows to 0 / overflows beyond
_F32_SHIFTER = _F32(1.5 * 2**23)
# expm1(r) = r + r*r * P(r), P of degree 4 fitted (Lawson's weighted least squares, on 4,000
# Chebyshev nodes of |r| <= 1.02 ln2/2) to (e**r - 1 - r)/r**2 for the least relative error of
# e**r: 0.06 ulp, as good as a Taylor tail of degree 5, with one FMA and one constant less.
_F32_EXP_TAIL = tuple(_F32(c) for c in _high_first((
    0.499999926294877, 0.16666508715773812, 0.04166852828644079, 0.00837013494763399,
    0.0013811662260288056)))
_F32_TANH_SATURATE = _F32(10.0)   # tanh(10) rounds to 1
_F32_OVERFLOW = 88.72283172607422     # largest float32 whose float32 exp is finite


@_inline
def _reduce_ln2_f32(x):
    # x = k ln2 + r, |r| <= ln2/2, as (k + 1.5 * 2**23, k, r). Adding 1.5 * 2**23 rounds
    # x*log2(e) to the nearest integer k and leaves k in the low bits (no floor, no
    # float-to-int conversion); k * LN2_HI is exact, so the first FMA is too.
    shifted = _fma(x, _F32_LOG2E, _F32_SHIFTER)
    k = shifted - _F32_SHIFTER
    return shifted, k, _fma(k, -_F32_LN2_LO, _fma(k, -_F32_LN2_HI, x))


# Below _F32_EXP_LO exp rounds to 0: the lane computes exp(0) instead, and 0 replaces the
# result. Computing the underflow costs a microcode assist per vector instruction on x86 (no
# flush-to-zero): a causal softmax (half its scores -1e10) took 600 us against 124 unmasked
# over 12x128x128 float32, and np.exp(x - 1e4) 1.0 ms against NumPy's 0.17. Selecting 0 for the
# polynomial instead is not enough: LLVM moves that select past the scaling of exp(-x), which
# then underflows again (exp(-x) at x = 1e10: 5.3 ms, against 0.56).


@_inline
def _exp_f32_bits(x):
    # Clamping makes +inf give exp(89) = inf by the scaling itself.
    below = x < _F32_EXP_LO
    shifted, k, r = _reduce_ln2_f32(_clamp_f32(_F32(0.0) if below else x, _F32_EXP_LO,
                                               _F32_EXP_HI))
    p = _F32_ONE + _fma(r * r, _horner(r, _F32_EXP_TAIL), r)
    y = _scale_f32(p, shifted)
    y = _F32(0.0) if below else y
    return x + x if x != x else y


@_inline
def _exp_f32_scalef(x):
    # The same reduction and polynomial; a NaN x passes the clamp and the scaling, so there is
    # no NaN select (measured: the exp pass of softmax 1.25x faster than _exp_f32_bits).
    below = x < _F32_EXP_LO
    shifted, k, r = _reduce_ln2_f32(_clamp_nan_f32(_F32(0.0) if below else x, _F32_EXP_LO,
                                                   _F32_EXP_HI))
    y = _ldexp_shifted_f32(_F32_ONE + _fma(r * r, _horner(r, _F32_EXP_TAIL), r), shifted)
    return _F32(0.0) if below else y


_exp_f32_native = _exp_f32_scalef if _HAS_SCALEF else _exp_f32_bits
_scale_exp_f32 = _ldexp_shifted_f32 if _HAS_SCALEF else _scale_f32


@_inline
def _exp_f32_normal(x):
    # exp for an x that is not NaN and whose exp is a normal float32 (|x| < 87): the same
    # reduction and polynomial without exp's clamps, selects and rounding scale; 2**k is exact.
    shifted, _, r = _reduce_ln2_f32(x)
    return (_F32_ONE + _fma(r * r, _horner(r, _F32_EXP_TAIL), r)) * _pow2_shifted_f32(shifted)


@_inline
def _sigmoid_f32_native(x):
    e = _exp_f32_native(-abs(x))
    # Two divisions rather than e * (1/(1+e)): one rounding less on the x < 0 side.
    denominator = _F32_ONE + e
    y = (_F32_ONE if x >= _F32(0.0) else e) / denominator
    return _F32(0.0) if x < -_F32(_F32_OVERFLOW) else y


@_inline
def _tanh_f32_native(x):
    # tanh |x| = em / (em + 2), em = expm1(2|x|) = 2**k expm1(r) + (2**k - 1) with one rounding
    # (the FMA); expm1(r) = r + r*r*P(r) with exp's tail. One formula for every |x|: no second
    # polynomial for small |x| computed and discarded in each lane, so 1.7x faster than the
    # split form it replaced (4M values: 1.3 against 2.2 ms, NumPy 1.5), at 2.5 ulp instead of
    # 1.3 (the rounding of em + 2 shows for small |x|). 2|x| is clamped at 20, where tanh
    # rounds to 1; k <= 29 needs no split scaling, and 2**k - 1 is exact up to k = 24 (above,
    # its rounding is far below the ulp of em). Subnormal x: em = 2|x|, em/2 = |x| exactly.
    # A NaN x passes the clamp and every operation after it, which return x's NaN (quieted,
    # its sign restored by copysign: x + x's bits): no NaN select, 4-6% faster.
    ax = abs(x)
    t = _F32_TWO * (_F32_TANH_SATURATE if ax > _F32_TANH_SATURATE else ax)
    shifted, _, r = _reduce_ln2_f32(t)
    power = _pow2_shifted_f32(shifted)
    em = _fma(power, _fma(r * r, _horner(r, _F32_EXP_TAIL), r), power - _F32_ONE)
    return math.copysign(em / (em + _F32_TWO), x)   # keeps -0.0


_F32_MIN_NORMAL = _F32(np.finfo(np.float32).tiny)
_F32_HALF = _F32(0.5)
_F32_LOG_R = tuple(_F32(c) for c in _LOG_R_F32)


@_inline
def _log_f32_native(x):
    # The float64 algorithm's atanh form in float32 arithmetic: x = 2**k m, m in [sqrt(1/2),
    # sqrt(2)), f = m - 1 exact, log x = k ln2 + f - (f*f/2 - s (f*f/2 + R(s*s))) with
    # s = f / (2 + f), |s| <= 0.1716. Subnormal x is scaled by 2**149 first (through its bits:
    # 4.5 ms over 2M subnormals multiplied by 2**23, NumPy 1.7).
    subnormal = x < _F32_MIN_NORMAL
    k, m = _reduce_sqrt2_f32(_subnormal_scaled_f32(x) if subnormal else x)
    k = k - _F32(149.0) if subnormal else k
    f = m - _F32_ONE
    s = f / (_F32_TWO + f)
    half_f2 = _F32_HALF * f * f
    tail = s * (half_f2 + _horner(s * s, _F32_LOG_R)) + k * _F32_LN2_LO
    y = k * _F32_LN2_HI - ((half_f2 - tail) - f)
    y = _F32(np.inf) if x == _F32(np.inf) else y
    y = _F32(-np.inf) if x == _F32(0.0) else y
    y = _F32(np.nan) if x < _F32(0.0) else y
    return x + x if x != x else y


@_inline
def _log1p_f32_native(x):
    # Goldberg's log1p, as _log1p_core, in float32: log(u) * x / (u - 1) with u = 1 + x rounded.
    u = _F32_ONE + x
    d = u - _F32_ONE
    y = _log_f32_native(u) * (x / (d if d != _F32(0.0) else _F32_ONE))
    y = x if d == _F32(0.0) else y
    y = _F32(np.inf) if x == _F32(np.inf) else y
    return x + x if x != x else y


_F32_EXPM1_LO, _F32_EXPM1_HI = _F32(-18.0), _F32(89.0)   # expm1(-18) rounds to -1


@_inline
def _expm1_f32_native(x):
    # x = k ln2 + r as in exp; p = expm1(r). Up to k = 24 the result is 2**k p + (2**k - 1)
    # with one rounding (the FMA; 2**k - 1 is exact); above, the 1 is below half an ulp and
    # the result is exp's: (1 + p) scaled by 2**k, which also overflows to inf past 88.72.
    shifted, k, r = _reduce_ln2_f32(_clamp_f32(x, _F32_EXPM1_LO, _F32_EXPM1_HI))
    p = _fma(r * r, _horner(r, _F32_EXP_TAIL), r)
    power = _pow2_f32(k if k < _F32(24.0) else _F32(24.0))
    y = _fma(power, p, power - _F32_ONE)
    y = y if k <= _F32(24.0) else _scale_exp_f32(_F32_ONE + p, shifted)
    y = x if x == _F32(0.0) else y          # keeps -0.0
    return x + x if x != x else y


# --- native float32 erf --------------------------------------------------------------------
# erf(x) = x P(x*x) for |x| < 1 (P of degree 5, fitted for relative error, its constant term
# 2/sqrt(pi) split in two); for 1 <= |x| < 4,
# 1 - exp(-x*x) R(|x|), R ~ erfcx on [1, 4] of degree 11 in s = (|x| - 2.5) / 1.5 (Chebyshev
# least squares for relative error, 4,000 nodes, coefficients rounded to float32: 8e-8); past 4
# erf rounds to +-1. x*x is split exactly by an FMA, exp(-hi - lo) = exp(-hi) (1 - lo), so its
# rounding (up to 16 * 2**-24 relative) does not reach erfc; erfc's error shrinks by
# erfc/erf <= 0.19 in 1 - erfc.
_F32_ERF_SMALL = tuple(_F32(c) for c in (
    -0.0005625396152026951, 0.004916023463010788, -0.02670994959771633, 0.11280130594968796,
    -0.37612318992614746))
_F32_TWO_OVER_SQRT_PI = tuple(_F32(part) for part in _split(_TWO_OVER_SQRT_PI, 2, 24))
_F32_ERFCX_1_4 = tuple(_F32(c) for c in (
    -3.317872324259952e-05, 9.565718210069463e-05, -0.00015413262008223683,
    0.00036971690133213997, -0.0010070913704112172, 0.002424290170893073,
    -0.0055716331116855145, 0.0124845951795578, -0.02700497768819332, 0.056110888719558716,
    -0.11152104288339615, 0.21080635488033295))
_F32_ERF_ONE_AT, _F32_ERF_MID, _F32_ERF_HALF_SPAN = _F32(4.0), _F32(2.5), _F32(1.0 / 1.5)


@_inline
def _erf_f32_native(x):
    ax = abs(x)
    u = ax * ax
    c_hi, c_lo = _F32_TWO_OVER_SQRT_PI   # (2/sqrt(pi)) ax rounded once for tiny ax
    small = _fma(ax, c_hi, ax * (c_lo + u * _horner(u, _F32_ERF_SMALL)))
    t = _clamp_f32(ax, _F32_ONE, _F32_ERF_ONE_AT)
    hi = t * t
    lo = _fma(t, t, -hi)
    e = _exp_f32_normal(-hi) * (_F32_ONE - lo)
    erfc = e * _horner((t - _F32_ERF_MID) * _F32_ERF_HALF_SPAN, _F32_ERFCX_1_4)
    large = _F32_ONE - erfc
    large = _F32_ONE if ax >= _F32_ERF_ONE_AT else large
    y = math.copysign(small if ax < _F32_ONE else large, x)   # keeps -0.0
    return x + x if x != x else y


# --- public scalar functions ---------------------------------------------------------------
# float32 sin and cos widen, run the float64 algorithm with shorter float32 polynomials, and
# round once.


@_inline
def exp_f64(x):
    return _exp_core(x, _EXPM1_TAIL_F64)


@_inline
def exp_f32(x):
    return _exp_f32_native(x)


@_inline
def expm1_f64(x):
    return _expm1_core(x, _EXPM1_TAIL_F64)


@_inline
def expm1_f32(x):
    return _expm1_f32_native(x)


@_inline
def log_f64(x):
    return _log_core(x, _LOG_R_F64)


@_inline
def log_f32(x):
    return _log_f32_native(x)


@_inline
def log1p_f64(x):
    return _log1p_core(x, _LOG_R_F64)


@_inline
def log1p_f32(x):
    return _log1p_f32_native(x)


@_inline
def tanh_f64(x):
    return _tanh_core(x, _EXPM1_TAIL_F64)


@_inline
def tanh_f32(x):
    return _tanh_f32_native(x)


@_inline
def sigmoid_f64(x):
    return _sigmoid_core(x, _EXPM1_TAIL_F64, _EXP_OVERFLOW)


@_inline
def sigmoid_f32(x):
    return _sigmoid_f32_native(x)


@_inline
def erf_f64(x):
    return _erf_core(x)


@_inline
def erf_f32(x):
    return _erf_f32_native(x)


@_inline
def sin_f64(x):
    return _sin_core(x, _SIN_TAIL_F64, _COS_TAIL_F64)


@_inline
def sin_f32(x):
    return np.float32(_sin_core(np.float64(x), _SIN_TAIL_F32, _COS_TAIL_F32))


@_inline
def cos_f64(x):
    return _cos_core(x, _SIN_TAIL_F64, _COS_TAIL_F64)


@_inline
def cos_f32(x):
    return np.float32(_cos_core(np.float64(x), _SIN_TAIL_F32, _COS_TAIL_F32))


VECMATH = {
    (name, dtype): globals()[f"{name}_{suffix}"]
    for name in ("exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf", "sin", "cos")
    for dtype, suffix in (("float32", "f32"), ("float64", "f64"))
}

# |x| beyond which a function loses accuracy (inf and NaN still give NaN); absent: whole range.
VECMATH_SAFE_RANGE = {
    (name, dtype): SIN_COS_LIMIT for name in ("sin", "cos") for dtype in ("float32", "float64")
}
