"""Accuracy of fusejit.codegen.vecmath against float64 / long-double references, in ulps.

float32: ~10**7 bit patterns spaced evenly over all 2**32 (every exponent, both signs, NaNs,
subnormals) plus special values, against the float64 NumPy/SciPy function rounded to float32.
float64: 10**6 inputs (random bit patterns plus a uniform sample of the function's interesting
range) against NumPy on np.longdouble where it is wider than double, else float64.
Every check: max ulp error <= 4, NaN positions equal, sign of zero equal.
"""
from __future__ import annotations

import functools

import numba
import numpy as np
import pytest
import scipy.special

from fusejit.codegen import vecmath

MAX_ULP = 4
NAMES = ("exp", "expm1", "log", "log1p", "tanh", "sigmoid", "erf", "sin", "cos")
_WIDE = np.longdouble if np.finfo(np.longdouble).nmant > 52 else np.float64
_OVERFLOW = {np.float32: vecmath._F32_OVERFLOW, np.float64: vecmath._EXP_OVERFLOW}


@functools.cache
def _compiled_loop(fn):
    # One serial loop per function: serial compiles faster than prange and the test checks
    # values, not speed (bench/vecmath_bench.py checks vectorization).
    @numba.njit(error_model="numpy")
    def apply(x, out):
        for i in range(x.size):
            out[i] = fn(x[i])

    return apply


def _run(name: str, x: np.ndarray, fn=None) -> np.ndarray:
    out = np.empty_like(x)
    _compiled_loop(fn or vecmath.VECMATH[(name, x.dtype.name)])(x, out)
    return out


def _reference(name: str, x: np.ndarray, dtype) -> np.ndarray:
    """The exact function rounded to `dtype`, from a wider evaluation."""
    wide = np.float64 if name == "erf" or dtype is np.float32 else _WIDE
    with np.errstate(all="ignore"):
        xw = x.astype(wide)
        if name == "erf":
            y = scipy.special.erf(xw)
        elif name == "sigmoid":
            # The fused op's semantics: 1/(1+exp(-x)) with exp overflowing in the input dtype.
            y = np.where(xw < -_OVERFLOW[dtype], 0, 1 / (1 + np.exp(-xw)))
        else:
            y = getattr(np, name)(xw)
        return y.astype(dtype)


def _ordered(x: np.ndarray) -> np.ndarray:
    # Bit patterns mapped to integers that are monotone in the float value (-0 and +0 both 0).
    bits = x.view(np.int32 if x.dtype == np.float32 else np.int64).astype(np.int64)
    sign_floor = np.int64(-(2**31)) if x.dtype == np.float32 else np.iinfo(np.int64).min
    return np.where(bits < 0, sign_floor - bits, bits)


def ulp_errors(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    a, b = _ordered(got), _ordered(want)
    same_sign = (a >= 0) == (b >= 0)
    with np.errstate(over="ignore"):
        dist = np.abs(a - b)
    return np.where(same_sign, dist, np.iinfo(np.int64).max)


def check(name: str, x: np.ndarray, fn=None) -> int:
    """Asserts the vecmath function on x (``fn``: a variant of it) matches the reference;
    returns the max ulp error."""
    got, want = _run(name, x, fn), _reference(name, x, x.dtype.type)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    bad_nan = np.flatnonzero(nan_got != nan_want)
    assert bad_nan.size == 0, f"{name}: NaN mismatch at x={x[bad_nan[:5]]}: {got[bad_nan[:5]]}"
    zero = want == 0
    bad_sign = np.flatnonzero(zero & (np.signbit(got) != np.signbit(want)))
    assert bad_sign.size == 0, f"{name}: sign of zero wrong at x={x[bad_sign[:5]]}"
    finite = ~nan_want
    err = ulp_errors(got[finite], want[finite])
    worst = int(np.argmax(err)) if err.size else 0
    max_err = int(err.max()) if err.size else 0
    xs = x[finite]
    assert max_err <= MAX_ULP, (
        f"{name}[{x.dtype}]: {max_err} ulp at x={xs[worst]!r}: "
        f"got {got[finite][worst]!r}, want {want[finite][worst]!r}")
    return max_err


def _specials(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    ovf = dtype(_OVERFLOW[dtype])
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, info.tiny, -info.tiny, info.smallest_subnormal,
              -info.smallest_subnormal, info.max, -info.max, 1.0, -1.0, 0.5, 2.0, 89.0, -104.0,
              710.0, -746.0, 22.0, 6.0, -6.0, 2.5, 1e-9, -1e-30, np.pi, -np.pi / 2]
    base = np.array(values, dtype=dtype)
    around = [ovf, -ovf, dtype(-103.97), dtype(1.0), dtype(np.log(2) / 2)]
    near = [np.nextafter(v, dtype(s) * np.inf) for v in around for s in (1, -1)]
    return np.concatenate([base, np.array(around + near, dtype=dtype)])


def _sin_cos_domain(name: str, x: np.ndarray) -> np.ndarray:
    if name not in ("sin", "cos"):
        return x
    limit = vecmath.VECMATH_SAFE_RANGE[(name, x.dtype.name)]
    return x[~(np.abs(x) > limit)]          # keeps NaN and checks +-inf separately below


@functools.cache
def _f32_inputs() -> np.ndarray:
    step = 2**32 // 10**7
    patterns = np.arange(0, 2**32, step, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([patterns, _specials(np.float32)])


@functools.cache
def _f64_inputs(name: str) -> np.ndarray:
    rng = np.random.default_rng(1234)
    patterns = rng.integers(0, 2**64, 500_000, dtype=np.uint64, endpoint=False).view(np.float64)
    span = {"exp": 750.0, "expm1": 750.0, "sigmoid": 750.0, "tanh": 25.0, "erf": 7.0,
            "log": 10.0, "log1p": 10.0, "sin": 1e4, "cos": 1e4}[name]
    uniform = rng.uniform(-span, span, 400_000)
    small = rng.uniform(-1.0, 1.0, 100_000)
    return np.concatenate([patterns, uniform, small, _specials(np.float64)])


@pytest.mark.parametrize("name", NAMES)
def test_float32(name):
    check(name, _sin_cos_domain(name, _f32_inputs()))


@pytest.mark.parametrize("name", NAMES)
def test_float64(name):
    check(name, _sin_cos_domain(name, _f64_inputs(name)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_beyond_safe_range_still_nan_for_inf(name, dtype):
    got = _run(name, np.array([np.inf, -np.inf, np.nan], dtype=dtype))
    assert np.isnan(got).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_edge_cases_named_in_the_design(dtype):
    t = np.dtype(dtype).type
    one = lambda name, v: _run(name, np.array([v], dtype=t))[0]
    assert one("exp", 89.0 if t is np.float32 else 710.0) == np.inf
    assert one("log", 0.0) == -np.inf and np.isnan(one("log", -1.0))
    assert one("log", np.inf) == np.inf
    for name in ("tanh", "sin", "erf", "expm1", "log1p"):
        assert np.signbit(one(name, -0.0)), name


def test_float32_tanh_returns_the_nan_it_is_given():
    # no NaN select: the NaN passes the clamp and the arithmetic, quieted, its sign restored
    bits = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFA5A5A5], np.uint32)
    got = _run("tanh", bits.view(np.float32)).view(np.uint32)
    np.testing.assert_array_equal(got, bits | np.uint32(0x00400000))


def _around(edges) -> np.ndarray:
    """The 8192 float32 values nearest each edge (4096 bit patterns either side)."""
    around = [np.arange(-4096, 4096, dtype=np.int64) + np.array([e], np.float32).view(np.int32)
              for e in edges]
    return np.concatenate(around).astype(np.int32).view(np.float32)


# float32 exp scales by 2**k with vscalefps (llvm.ldexp) on AVX-512 and through the exponent
# bits elsewhere: both forms are checked on every host (without AVX-512, ldexp is a libm call:
# slow, the same values).
EXP_F32_FORMS = ("_exp_f32_scalef", "_exp_f32_bits")


@pytest.mark.parametrize("form", EXP_F32_FORMS)
def test_float32_exp_either_form_on_all_exponents(form):
    assert check("exp", _f32_inputs(), getattr(vecmath, form)) <= MAX_ULP


@pytest.mark.parametrize("form", EXP_F32_FORMS)
def test_float32_exp_dense_where_the_scaling_switches(form):
    # The bits form adds k to p's exponent less one (and doubles) or plus 64 (and scales by
    # 2**-64) depending on k: every float32 around each switch, the subnormal results, the last
    # finite one and the first infinite one, and a dense sweep of the whole finite range.
    patterns = _around([k * np.log(2.0)
                        for k in (-150, -149, -126, -125, -64, -63, -62, 0, 127, 128)])
    sweep = np.linspace(-104.0, 89.0, 2_000_001, dtype=np.float32)
    inputs = np.concatenate([patterns, sweep])
    assert check("exp", inputs, getattr(vecmath, form)) <= MAX_ULP


def test_float32_exp_without_its_edge_cases_is_exp_where_the_result_is_normal():
    # erf's exp(-x*x), x in [1, 4], skips the clamps, selects and rounding scale: the same bits
    # as exp on every 31st float32 in [-87, 88] (every result normal, 2**k exact).
    lo, hi = np.array([-87.0, 88.0], np.float32).view(np.uint32)
    negative = np.arange(0x80000000, lo + 1, 31, dtype=np.uint32)
    positive = np.arange(0, hi + 1, 31, dtype=np.uint32)
    x = np.concatenate([negative, positive]).view(np.float32)
    np.testing.assert_array_equal(_run("exp", x, vecmath._exp_f32_normal), _run("exp", x))


@functools.cache
def _scaling_loop(scale):
    @numba.njit(error_model="numpy")
    def apply(p, k, out):
        for i in range(p.size):
            out[i] = scale(p[i], k[i])

    return apply


@pytest.mark.parametrize("scale", ["_scale_f32", "_ldexp_shifted_f32"])
def test_float32_scaling_by_2_to_the_k_rounds_once(scale):
    # p * 2**k for every k exp and expm1 use, p in [0.5, 2): exactly np.ldexp in float64 (exact)
    # rounded to float32 once, subnormals, zero and inf included.
    rng = np.random.default_rng(7)
    k = np.repeat(np.arange(-150, 129), 2000)   # exp clamps x to [-104, 89]
    p = rng.uniform(0.5, 2.0, k.size).astype(np.float32)
    p[::7] = np.nextafter(np.float32(1.0), np.float32(0.0))
    shifted = (k + 1.5 * 2**23).astype(np.float32)
    out = np.empty_like(p)
    _scaling_loop(getattr(vecmath, scale))(p, shifted, out)
    with np.errstate(over="ignore"):
        want = np.ldexp(p.astype(np.float64), k).astype(np.float32)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("scale", ["_scale_pow2", "_ldexp_f64"])
def test_float64_scaling_by_2_to_the_k_rounds_once(scale):
    rng = np.random.default_rng(8)
    k = np.repeat(np.arange(-1080, 1031), 200)
    y = rng.uniform(0.5, 2.0, k.size)
    out = np.empty_like(y)
    _scaling_loop(getattr(vecmath, scale))(y, k.astype(np.float64), out)
    with np.errstate(over="ignore"):
        want = np.ldexp(y, k)
    np.testing.assert_array_equal(out, want)


def test_float32_expm1_dense_where_its_formula_switches():
    # Up to k = 24 (x ~ 16.6) expm1 is 2**k p + (2**k - 1), above it exp's scaling; below -18 it
    # rounds to -1: every float32 around those points, and a dense sweep of the finite range.
    ln2 = np.log(2.0)
    patterns = _around([k * ln2 for k in (-26, -1, -0.5, 0.5, 1, 23.5, 24, 24.5, 25, 127, 128)]
                       + [-18.0])
    sweep = np.linspace(-20.0, 90.0, 2_000_001, dtype=np.float32)
    assert check("expm1", np.concatenate([patterns, sweep])) <= MAX_ULP


def test_float32_log_and_log1p_on_every_97th_positive_float():
    # All exponents, subnormals included: 22M positive patterns; log1p also on (-1, 0).
    positive = np.arange(0, 0x7F800001, 97, dtype=np.uint32).view(np.float32)
    assert check("log", positive) <= MAX_ULP
    assert check("log1p", np.concatenate([positive, -positive[positive < 1.0]])) <= MAX_ULP


def test_float32_erf_on_every_97th_float_below_4_5():
    # Both signs, subnormals included (22M values): the Taylor-like piece below 1, the erfcx
    # piece on [1, 4) with its split x*x, and the saturation to +-1 from 4 on.
    top = np.array([4.5], np.float32).view(np.uint32)[0]
    positive = np.arange(0, top, 97, dtype=np.uint32).view(np.float32)
    edges = _around([1.0, 4.0, 3.9])
    assert check("erf", np.concatenate([positive, -positive, edges, -edges])) <= MAX_ULP
