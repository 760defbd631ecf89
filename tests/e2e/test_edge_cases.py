"""Numerical edge cases through ``fusejit.compile``: the trace call and a replay both match NumPy.

Correctly rounded operations must match bit for bit (NaN positions and the sign of zero
included); transcendentals, which fusejit computes with its own vector math, within a few ulp
(``TRANSCENDENTAL``) but with the same NaN positions, the same sign of zero, and no flushing of
subnormal results to zero.
"""
from __future__ import annotations

import math
import operator
import re
import warnings

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_leaf_same, assert_same, check_calls

F32, F64, I32, I64 = np.float32, np.float64, np.int32, np.int64
TRANSCENDENTAL = {np.dtype(F32): (4e-7, 0.0), np.dtype(F64): (1e-15, 0.0)}
INT32_MAX, INT32_MIN = np.iinfo(I32).max, np.iinfo(I32).min


def quiet(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


def assert_bitwise(expected, actual, tolerance=None):
    """Type, shape, dtype; values exactly (or within ``tolerance``); NaNs and zero signs."""
    assert type(actual) is type(expected), f"{type(actual)} != {type(expected)}"
    want, got = np.asarray(expected), np.asarray(actual)
    if tolerance is None:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    else:
        assert_leaf_same(expected, actual, tolerance)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        signed = ~np.isnan(want)                     # a NaN's sign bit means nothing
        np.testing.assert_array_equal(np.signbit(got)[signed], np.signbit(want)[signed],
                                      err_msg="sign")
        np.testing.assert_array_equal(got == 0, want == 0, err_msg="flushed to zero")


def assert_replays_like_numpy(fn, *args, tolerance=None):
    """The first compiled call traces, the second replays: both must equal eager NumPy."""
    compiled = fusejit.compile(fn)
    expected = quiet(fn, *[np.copy(a) for a in args])
    for _ in range(2):
        assert_bitwise(expected, quiet(compiled, *[np.copy(a) for a in args]), tolerance)
    assert compiled.cache_info()["hits"] == 1


SPECIALS = np.array([1.5, np.nan, -np.inf, np.inf, -0.0, 0.0, -2.0], F32)
ZEROS = np.array([-0.0, 0.0, 1.0, -2.0], F32)
SUBNORMAL_32 = np.array([1e-40, -1e-42, 1.4e-45, 1e-38, -3e-39], F32)
SUBNORMAL_64 = np.array([5e-324, 1e-310, -2.2e-308, 3e-320])


@pytest.mark.parametrize("name, fn", [
    ("add", lambda a: a + 1.0), ("sub_self", lambda a: a - a), ("mul_zero", lambda a: a * 0),
    ("div_self", lambda a: a / a), ("pow", lambda a: a ** 2), ("sqrt", np.sqrt),
    ("maximum", lambda a: np.maximum(a, a[::-1])), ("fmax", lambda a: np.fmax(a, a[::-1])),
    ("minimum", lambda a: np.minimum(a, 1.0)), ("fmin", lambda a: np.fmin(a, a[::-1])),
    ("where_isnan", lambda a: np.where(np.isnan(a), 0.0, a)), ("isinf", np.isinf),
    ("isfinite", np.isfinite), ("floor", np.floor), ("sign", np.sign), ("abs", np.abs),
    ("compare", lambda a: a > 0), ("equal_self", lambda a: a == a), ("clip", lambda a: np.clip(
        a, -1, 1)), ("sum", np.sum), ("max", np.max), ("min", np.min), ("argmax", np.argmax),
    ("argmin", np.argmin), ("prod", np.prod), ("any", np.any), ("all", np.all),
    ("max_axis", lambda a: a.reshape(1, 7).max(axis=1)), ("cast_f64", lambda a: a.astype(F64)),
])
def test_nan_and_inf_follow_numpy(name, fn):
    assert_replays_like_numpy(fn, SPECIALS)


@pytest.mark.parametrize("name, fn", [("exp", np.exp), ("tanh", np.tanh), ("log", np.log),
                                      ("sin", np.sin), ("expm1", np.expm1), ("log1p", np.log1p),
                                      ("mean", np.mean)])
def test_nan_and_inf_through_transcendentals(name, fn):
    assert_replays_like_numpy(fn, SPECIALS, tolerance=TRANSCENDENTAL)


@pytest.mark.parametrize("name, fn", [
    ("neg", lambda a: -a), ("abs", np.abs), ("mul_one", lambda a: a * 1),
    ("add_zero", lambda a: a + 0.0), ("sub_zero", lambda a: a - 0.0),
    ("zero_sub", lambda a: 0.0 - a), ("add_neg_zero", lambda a: a + -0.0),
    ("div_one", lambda a: a / 1), ("neg_neg", lambda a: np.negative(-a)),
    ("square", lambda a: a ** 2),
    ("sqrt", np.sqrt), ("floor", np.floor), ("ceil", np.ceil), ("rint", np.rint),
    ("mul_neg_one", lambda a: a * -1.0), ("copysign_by_div", lambda a: 1.0 / a),
    ("maximum", lambda a: np.maximum(a, 0.0)), ("minimum", lambda a: np.minimum(a, -0.0)),
    ("where", lambda a: np.where(a == 0, a, 5.0)), ("reshape", lambda a: a.reshape(2, 2) * 1),
    ("sum_neg_zeros", lambda a: a[:1].sum()), ("cast_f64", lambda a: a.astype(F64)),
])
def test_negative_zero_keeps_its_sign(name, fn):
    assert_replays_like_numpy(fn, ZEROS)


BOUNDS = np.array([0.0, -0.0, 1.0, -1.0], F32)


@pytest.mark.parametrize("name, fn", [
    # NumPy keeps a value equal to a single-valued bound (-0.0 against 0.0); the compiled clip
    # gave the bound's zero, which 1/x turns from -inf into inf.
    ("clip_low", lambda a, b: np.clip(a, 0.0, 1.0)),
    ("clip_neg_low", lambda a, b: np.clip(a, -0.0, 1.0)),
    ("clip_high", lambda a, b: np.clip(a, -1.0, 0.0)),
    ("clip_neg_high", lambda a, b: np.clip(a, -1.0, -0.0)),
    ("clip_method", lambda a, b: 1.0 / a.clip(b[0], b[2])),
    ("clip_constant", lambda a, b: 1.0 / np.clip(np.full(4, -0.0, F32), 0.0, 1.0) + a),
    # ... and gives the bound when a bound is an array, or absent (np.maximum/np.minimum)
    ("clip_array_bounds", lambda a, b: np.clip(a, b, 1.0)),
    ("clip_one_bound", lambda a, b: (np.clip(a, 0.0, None), np.clip(a, None, -0.0))),
])
def test_clip_keeps_numpys_sign_of_zero_at_the_bound(name, fn):
    assert_replays_like_numpy(fn, ZEROS, BOUNDS)


@pytest.mark.parametrize("fn", [np.tanh, np.sin, np.expm1, np.log1p, np.sinh, np.arctan])
def test_negative_zero_through_transcendentals(fn):
    assert_replays_like_numpy(fn, ZEROS[:2], tolerance=TRANSCENDENTAL)


@pytest.mark.parametrize("values", [SUBNORMAL_32, SUBNORMAL_64], ids=["f32", "f64"])
@pytest.mark.parametrize("name, fn", [
    ("mul", lambda a: a * 2.0), ("add", lambda a: a + a), ("div", lambda a: a / 3.0),
    ("sum", np.sum), ("sqrt", lambda a: np.sqrt(np.abs(a))), ("max", np.max),
    ("neg", lambda a: -a), ("halve_to_zero", lambda a: a * 0.5),
])
def test_subnormals_are_not_flushed_to_zero(values, name, fn):
    assert_replays_like_numpy(fn, values)


@pytest.mark.parametrize("x", [np.array([-90.0, -100.0, -103.0], F32),
                               np.array([-710.0, -740.0, -744.0])], ids=["f32", "f64"])
def test_exp_into_the_subnormal_range_is_not_flushed(x):
    compiled = fusejit.compile(np.exp)
    expected = np.exp(x)
    for _ in range(2):
        got = compiled(x)
        assert np.all(got > 0)
        # Subnormals carry fewer significant bits: compare in units of the smallest subnormal.
        tiny = np.finfo(x.dtype).smallest_subnormal
        assert np.all(np.abs(got - expected) <= np.maximum(4 * tiny, 1e-6 * expected))


# -- empty arrays --------------------------------------------------------------------------------
EMPTY = np.zeros((0, 3), F32)


@pytest.mark.parametrize("name, fn", [
    ("add_broadcast", lambda a: a + np.ones(3, F32)), ("exp", np.exp), ("sum", np.sum),
    ("sum_axis0", lambda a: a.sum(axis=0)), ("sum_axis1", lambda a: a.sum(axis=1)),
    ("prod", np.prod), ("any", np.any), ("all_axis0", lambda a: a.all(axis=0)),
    ("mean_axis1", lambda a: a.mean(axis=1)), ("max_axis1", lambda a: a.max(axis=1)),
    ("argmax_axis1", lambda a: a.argmax(axis=1)), ("transpose", lambda a: a.T * 2),
    ("reshape", lambda a: a.reshape(3, 0) + 1), ("concatenate", lambda a: np.concatenate(
        [a, a], axis=1)), ("matmul", lambda a: a.T @ a), ("matmul_empty", lambda a: a @ a.T),
    ("int_floordiv", lambda a: a.astype(I32) // 0), ("mean", np.mean), ("slice", lambda a: a[1:]),
])
def test_empty_arrays_follow_numpy(name, fn):
    assert_replays_like_numpy(fn, EMPTY)


@pytest.mark.parametrize("name, fn", [
    ("max", np.max), ("min", lambda a: a.min()), ("max_axis0", lambda a: a.max(axis=0)),
    ("argmax", np.argmax), ("argmin_axis0", lambda a: a.argmin(axis=0)),
])
def test_empty_reductions_without_identity_raise_like_numpy(name, fn):
    compiled = fusejit.compile(fn)
    with pytest.raises(ValueError) as eager:
        fn(EMPTY)
    for _ in range(2):
        with pytest.raises(ValueError) as raised:
            compiled(EMPTY)
        assert str(raised.value) == str(eager.value)


def test_empty_reduction_error_does_not_break_nonempty_calls():
    compiled = fusejit.compile(np.max)
    with pytest.raises(ValueError):
        compiled(EMPTY)
    full = np.arange(6, dtype=F32).reshape(2, 3)
    for _ in range(2):
        assert_bitwise(np.max(full), compiled(full))


# -- large reductions ----------------------------------------------------------------------------
def test_float32_sum_of_ten_million_elements_is_accurate():
    """Bound: |compiled - exact| <= 1e-5 * sum(|x|) (and the same for the mean), where exact is
    the float64 sum of the same float32 values. NumPy's pairwise summation is ~1e-7 here; a
    sequential float32 accumulator would be off by ~1e-3 (once the running sum passes 2^24 *
    ulp, small terms lose most of their bits), so the bound rejects it."""
    x = np.random.default_rng(0).random(10**7, dtype=F32) + F32(0.5)
    exact = np.sum(x, dtype=F64)
    bound = 1e-5 * np.sum(np.abs(x), dtype=F64)
    compiled_sum, compiled_mean = fusejit.compile(np.sum), fusejit.compile(np.mean)
    for _ in range(2):
        total, mean = compiled_sum(x), compiled_mean(x)
        assert type(total) is F32 and type(mean) is F32
        assert abs(F64(total) - exact) <= bound
        assert abs(F64(mean) - exact / x.size) <= bound / x.size
    assert abs(F64(np.sum(x)) - exact) <= bound   # the bound holds for NumPy itself


def test_float32_row_sums_of_large_rows_are_accurate():
    """Same bound per row, for a last-axis reduction of 2 x 5*10^6."""
    x = np.random.default_rng(1).random((2, 5 * 10**6), dtype=F32)
    exact = np.sum(x, axis=1, dtype=F64)
    compiled = fusejit.compile(lambda a: a.sum(axis=1))
    for _ in range(2):
        got = compiled(x)
        assert got.dtype == F32
        assert np.all(np.abs(got - exact) <= 1e-5 * np.sum(np.abs(x), axis=1, dtype=F64))


# -- integers ------------------------------------------------------------------------------------
INTS32 = np.array([INT32_MAX, INT32_MIN, 5, -7, 0], I32)
INTS64 = np.array([2**62, -2**63, 2**63 - 1, 3, -1], I64)


@pytest.mark.parametrize("name, fn", [
    ("add", lambda a: a + a), ("add_one", lambda a: a + 1), ("sub", lambda a: a - INT32_MAX),
    ("mul", lambda a: a * 3), ("square", lambda a: a * a), ("neg", lambda a: -a),
    ("abs", np.abs), ("sum_as_int32", lambda a: a.sum(dtype=I32)), ("sum", np.sum),
    ("prod", np.prod), ("pow", lambda a: a ** 3), ("cumulative", lambda a: (a + a) * 2 - a),
])
@pytest.mark.parametrize("values", [INTS32, INTS64], ids=["i32", "i64"])
def test_integer_overflow_wraps_like_numpy(values, name, fn):
    assert_replays_like_numpy(fn, values)


@pytest.mark.parametrize("dtype", [I32, I64])
@pytest.mark.parametrize("name, fn", [
    ("floordiv", lambda a, b: a // b), ("mod", lambda a, b: a % b),
    ("floordiv_scalar_zero", lambda a, b: a // 0), ("mod_scalar_zero", lambda a, b: a % 0),
    ("divmod_identity", lambda a, b: (a // b) * b + a % b),
])
def test_integer_division_by_zero_gives_zero_like_numpy(dtype, name, fn):
    info = np.iinfo(dtype)
    a = np.array([7, -7, 0, info.max, info.min, info.min, -9], dtype)
    b = np.array([0, 0, 0, 0, 0, -1, 2], dtype)
    assert_replays_like_numpy(fn, a, b)


@pytest.mark.parametrize("name, fn", [
    ("div", lambda a, b: a / b), ("floordiv", lambda a, b: a // b),
    ("mod", lambda a, b: a % b), ("int_true_divide", lambda a, b: a.astype(I32) / b.astype(I32)),
])
def test_float_division_by_zero_follows_numpy(name, fn):
    a = np.array([1.0, -1.0, 0.0, -0.0, np.inf, np.nan, 4.5], F32)
    b = np.array([0.0, 0.0, 0.0, -0.0, 0.0, 0.0, -1.5], F32)
    assert_replays_like_numpy(fn, a, b)


# -- NEP 50 promotion ----------------------------------------------------------------------------
X32, X64 = np.arange(1, 4, dtype=F32) / 3, np.arange(1, 4, dtype=F64) / 3
N32, B = np.arange(-1, 2, dtype=I32), np.array([True, False, True])


@pytest.mark.parametrize("name, fn, args, dtype", [
    ("f32_times_pyfloat", lambda a: a * 2.5, (X32,), F32),
    ("f32_times_np_float64", lambda a: a * np.float64(2.5), (X32,), F64),
    ("f32_plus_np_float32", lambda a: a + np.float32(0.1), (X32,), F32),
    ("f32_plus_np_int64", lambda a: a + np.int64(1), (X32,), F64),
    ("f32_plus_pyint", lambda a: a + 3, (X32,), F32),
    ("f32_plus_0d_f64_array", lambda a: a + np.array(0.1), (X32,), F64),
    ("i32_plus_pyfloat", lambda a: a + 2.5, (N32,), F64),
    ("i32_times_np_float32", lambda a: a * np.float32(2), (N32,), F64),
    ("i32_plus_pyint", lambda a: a + 7, (N32,), I32),
    ("i32_plus_np_int64", lambda a: a + np.int64(7), (N32,), I64),
    ("bool_plus_pyint", lambda a: a + 1, (B,), I64),
    ("bool_plus_pybool", lambda a: a + True, (B,), np.bool_),
    ("bool_times_pyfloat", lambda a: a * 0.5, (B,), F64),
    ("f32_pyfloat_argument", lambda a, s: a * s, (X32, 0.1), F32),
    ("np_float32_argument_times_pyfloat", lambda a, s: (a * s) * 0.1, (X32, np.float32(3)), F32),
    ("np_float32_scalar_times_f64_array", lambda a, s: s * a, (X64, np.float32(3)), F64),
    ("f32_mean_times_pyfloat", lambda a: a.mean() * 2.0, (X32,), F32),
    ("i32_true_divide", lambda a: a / 2, (N32,), F64),
    ("f32_pow_pyint", lambda a: a ** 2, (X32,), F32),
    ("f32_compare_big_pyfloat", lambda a: a < 1e300, (X32,), np.bool_),
])
def test_scalar_promotion_follows_nep50(name, fn, args, dtype):
    compiled = fusejit.compile(fn)
    expected = fn(*args)
    assert np.asarray(expected).dtype == dtype          # the table states NumPy's own rule
    for _ in range(2):
        assert_bitwise(expected, compiled(*args), tolerance={np.dtype(F32): (1e-6, 0.0),
                                                             np.dtype(F64): (1e-15, 0.0)})


# Python scalars stay Python scalars: a Python-float argument (``lr``, a weak f64 input) and the
# TracedFloat of ``.item()``, with each other, Python literals and NumPy scalars (NEP 50).
PY_SCALARS = {
    "arg": lambda x, lr: lr, "item": lambda x, lr: x.sum().item(),
    "float()": lambda x, lr: float(x.sum()), "int": lambda x, lr: 3,
    "float": lambda x, lr: 2.5, "bool": lambda x, lr: True, "complex": lambda x, lr: 0.5 + 1.5j,
    "np_float32": lambda x, lr: F32(2.5), "np_float64": lambda x, lr: F64(2.5),
}
SCALAR_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
              operator.mod, operator.pow, operator.eq, operator.lt]


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.pow])
def test_a_python_complex_with_a_float64_element_is_pythons_complex_arithmetic(op):
    # np.float64 is a float: complex's own operator takes it, giving a Python complex (and
    # ZeroDivisionError for 1j / 0.0). The compiled call gave np.complex128 (nan+infj).
    def mixed(x):
        return op(0.5 + 1j, x[1])

    compiled = fusejit.compile(mixed)
    for x in (np.array([1.0, 2.0]), np.array([1.0, -3.0]), np.array([1.0, 2.0])):
        assert_bitwise(mixed(x), compiled(x))
    zero = np.array([1.0, 0.0])
    if op is operator.truediv:
        for _ in range(2):
            with pytest.raises(ZeroDivisionError):
                compiled(zero)
    else:
        assert_bitwise(mixed(zero), compiled(zero))


@pytest.mark.parametrize("body", [lambda x: x[1] // 3, lambda x: 3 // x[1],
                                  lambda x: x[1] % 2, lambda x: divmod(x[1], 2)])
def test_numpy_scalar_operators_refusing_their_types_raise_numpys_own_error(body):
    # 'unsupported operand type(s) for //: 'numpy.complex64' and 'int'', not the ufunc's
    # 'ufunc 'floor_divide' not supported for the input types'.
    x = np.array([1 + 2j, 3 - 1j], np.complex64)
    with pytest.raises(TypeError) as eager:
        body(x)
    compiled = fusejit.compile(body)
    for _ in range(2):
        with pytest.raises(TypeError, match=re.escape(str(eager.value))):
            compiled(x)


def _scalar_pairs():
    for left in PY_SCALARS:
        for right in PY_SCALARS:
            # ``1j * loss``: Python's complex reads the float subclass itself (docs/tracing.md)
            if {left, right} & {"arg", "item"} and (left, right) != ("complex", "item"):
                yield left, right


@pytest.mark.parametrize("left, right", list(_scalar_pairs()))
def test_python_scalar_arithmetic_keeps_python_and_numpy_scalar_types(left, right):
    with_complex = "complex" in (left, right)   # //, % and < of a complex: Python's TypeError
    ops = [op for op in SCALAR_OPS
           if not (with_complex and op in (operator.floordiv, operator.mod, operator.lt))]

    def arithmetic(x, lr):
        a, b = PY_SCALARS[left](x, lr), PY_SCALARS[right](x, lr)
        return tuple(op(a, b) for op in ops) + (-a, abs(a), -b, abs(b))

    compiled = fusejit.compile(arithmetic)
    for k in (1, 2, 3):     # a trace, then replays (or traces after a guard) with new values
        x, lr = np.array([0.25, 0.5]) * k, 0.5 + 0.75 * k
        for want, got in zip(arithmetic(x, lr), compiled(x, lr), strict=True):
            assert_bitwise(want, got)
    assert compiled.cache_info()["eager_calls"] == 0


def test_out_of_range_python_int_raises_like_numpy():
    def add_big(a):
        return a + 2**40

    compiled = fusejit.compile(add_big)
    with pytest.raises(OverflowError):
        add_big(N32)
    for _ in range(2):
        with pytest.raises(OverflowError):
            compiled(N32)


def test_python_float_division_by_a_traced_zero_raises_as_python_does():
    # NumPy gives inf or nan where Python raises: the traced divisor is guarded non-zero, so
    # the call with 0.0 traces again and raises ZeroDivisionError, as eager does.
    def ratios(x, lr, d):
        loss = x.sum().item()
        return lr / d, loss % d, loss // d, x * (lr / d)

    compiled, x = fusejit.compile(ratios), np.arange(3.0)
    for d in (2.0, 0.5, 0.0, 3.0):
        if d == 0.0:
            for fn in (ratios, compiled):
                with pytest.raises(ZeroDivisionError):
                    fn(x, 1.0, d)
            continue
        assert_same(ratios(x, 1.0, d), compiled(x, 1.0, d))
    assert compiled.cache_info()["hits"] == 2


def test_python_float_argument_over_an_item_raises_on_a_zero_item():
    # ``lr / x[0].item()``: the divisor was a traced Python float of the body, not an
    # argument, and was not guarded: a replay with x[0] == 0 gave inf where Python raises.
    def steps(lr, x):
        v = x[0].item()
        return lr / v, lr // v, lr % v, divmod(lr, v), divmod(v, lr)

    compiled = fusejit.compile(steps)
    for first in (2.0, 4.0, 8.0, 0.0, -0.0, 3.0):
        x = np.array([first, 1.0])
        if first == 0.0:
            for fn in (steps, compiled):
                with pytest.raises(ZeroDivisionError, match="float division by zero"):
                    fn(1.5, x)
            continue
        assert_same(steps(1.5, x), compiled(1.5, x))


def test_divmod_of_python_floats_by_zero_raises_pythons_message():
    compiled = fusejit.compile(lambda lr, d: divmod(lr, d))
    for d in (2.0, 3.0, 0.0):
        if d == 0.0:
            with pytest.raises(ZeroDivisionError) as raised:
                compiled(0.5, d)
            assert str(raised.value) == "float divmod()"
            continue
        assert_same(divmod(0.5, d), compiled(0.5, d))


@pytest.mark.parametrize("base, exponent", [(-4.0, 0.5), (10.0, 400.0), (0.0, -1.0),
                                            (1e200, 2.0)])
def test_python_float_power_python_refuses_is_not_replayed_as_inf_or_nan(base, exponent):
    # Python's float ** returns a complex (a negative base, a fractional exponent) or raises
    # OverflowError / ZeroDivisionError where NumPy gives nan or inf: a finite traced power is
    # guarded finite, so such a call traces again and Python answers as eagerly.
    def scaled(x, lr, p):
        loss = x.sum().item()
        return x * lr ** p, (lr * loss) ** p, (loss * lr) ** 0.5, 2.0 ** (loss * lr)

    compiled, x = fusejit.compile(scaled), np.arange(1.0, 4.0)
    compiled(x, 2.0, 0.5)
    compiled(x, 3.0, 0.5)
    assert compiled.cache_info()["hits"] == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        want, got = _outcome(scaled, x, base, exponent), _outcome(compiled, x, base, exponent)
    assert got[0] == want[0]
    assert caught == []    # a guard that fails warns no more than Python
    if want[1] is not None:
        assert_same(want[1], got[1])


def test_copies_are_laid_out_as_numpy_lays_them_out_on_every_call():
    # ndarray.copy is C-ordered and np.copy keeps the layout ("K"); a NumPy scalar's copy
    # is a NumPy scalar
    def copies(x):
        return x.T.copy(), (x.T * 2).copy(), np.copy(x.T), x.T.copy("K"), x.sum().copy()

    compiled = fusejit.compile(copies)
    for k in range(3):
        x = np.arange(6.0).reshape(2, 3) + k
        for want, got in zip(copies(x), compiled(x), strict=True):
            assert_same(want, got)
            assert (got.flags.c_contiguous, got.flags.f_contiguous) == \
                (want.flags.c_contiguous, want.flags.f_contiguous)
    assert compiled.cache_info()["eager_calls"] == 0


def test_astype_takes_numpys_casting_order_and_subok_arguments():
    def casts(x):
        return x.astype(F32, casting="same_kind"), x.T.astype(F32, order="C", subok=True)

    def refused(x):
        return x.astype(I32, casting="same_kind")

    compiled = fusejit.compile(casts)
    for k in range(3):
        x = np.arange(6.0).reshape(2, 3) + k
        for want, got in zip(casts(x), compiled(x), strict=True):
            assert_same(want, got)
            assert got.flags.c_contiguous
    for fn in (refused, fusejit.compile(refused)):
        with pytest.raises(TypeError, match="according to the rule 'same_kind'"):
            fn(np.arange(3.0))


def test_a_fortran_ordered_copy_is_numpys_own():
    def copy_f(x):   # np.copy with order="F" runs as a host op
        return x.copy(order="F"), x.copy(order="F") + 1

    compiled = fusejit.compile(copy_f)
    for k in range(2):
        x = np.arange(6.0).reshape(2, 3) + k
        got = compiled(x)
        assert_same(copy_f(x), got)
        assert got[0].flags.f_contiguous


def test_reshape_order_passed_by_position_is_kept_on_replays():
    def reshaped(x):
        return np.reshape(x, (3, 2), "F"), np.reshape(x.T, (2, 3), "A"), np.reshape(x, (6,), "C")

    compiled = fusejit.compile(reshaped)
    for k in range(3):
        x = np.arange(6.0).reshape(2, 3) + 10 * k
        assert_same(reshaped(x), compiled(x))


def test_as_strided_on_a_traced_array_runs_eagerly():
    from numpy.lib.stride_tricks import as_strided

    def pairs(x):
        window = as_strided(x, shape=(2, 2), strides=(8, 8), writeable=False)
        x[0] = -1.0          # seen through the window, as NumPy's view sees it
        return window * 2

    compiled = fusejit.compile(pairs)
    for k in range(3):
        want, got = np.arange(4.0) + k, np.arange(4.0) + k
        assert_same(pairs(want), compiled(got))
        assert_same(want, got)
    assert "as_strided" in str(compiled.explain(np.arange(4.0)))


def test_a_masked_array_made_in_the_body_runs_eagerly():
    """``np.ma`` views the array's memory in C: a traced array raised TypeError there."""
    def masked(x):
        return np.ma.array(x, mask=x > 2) * 2, np.ma.masked_greater(x * 2, 4).sum()

    compiled, x = fusejit.compile(masked), np.arange(4.0) + 1
    for _ in range(2):
        (want, want_sum), (got, got_sum) = masked(x), compiled(x)
        assert type(got) is np.ma.MaskedArray
        assert_same(want.mask, got.mask)
        assert_same(want.filled(0.0), got.filled(0.0))
        assert_same(want_sum, got_sum)
    assert "np.ma" in str(compiled.explain(x))


NUMPY_REDUCTION_RULES = {
    # NumPy squares a complex deviation's magnitude, and divides by n - ddof as a float
    "complex-variance": lambda x: (np.var(x + 1j * x[::-1]), np.std(x * (1 - 2j), axis=1)),
    "float-ddof": lambda x: (np.var(x, ddof=0.5), np.std(x, axis=0, ddof=1.5)),
    # sums and products of bools are logical or / and
    "bool-sums": lambda x: ((x > 0).sum(-1, dtype=bool), (x > 0).prod(dtype=bool),
                            np.add.reduce(x > 0, 1, dtype=bool), np.einsum("ij->j", x > 0),
                            np.einsum("ij->", x > 0)),
    # a mean in an integer or bool dtype divides as float64 and casts back: (True + False) / 2
    # is 0.5, which is True
    "int-and-bool-means": lambda x: ((x > 0).mean(0, dtype=bool), (x * 1e17).astype(np.int64)
                                     .mean(dtype=np.int64), (x * 9).mean(1, dtype=np.int8)),
    # complex * 1 and / 1 turn inf parts to nan and -0.0 to +0.0
    "complex-times-one": lambda x: (lambda z: ((z * 1).astype(F64), (z / 1).astype(F32)))(
        x * (1 - 1j)),
}


@pytest.mark.parametrize("rule", NUMPY_REDUCTION_RULES)
def test_numpys_own_rules_for_variance_bool_sums_and_complex_identities(rule):
    fn = NUMPY_REDUCTION_RULES[rule]
    compiled = fusejit.compile(fn)
    for k in range(3):
        x = np.random.default_rng(k).standard_normal((3, 4))
        x[0, :2] = (np.inf, -0.0)
        for want, got in zip(quiet(fn, x), quiet(compiled, x), strict=True):
            assert_bitwise(want, got)


def _identities(results, args):
    """Which results are which argument or earlier result, share memory, are writable."""
    earlier = list(args)
    described = []
    for r in results:
        described.append(([r is a for a in earlier], [np.shares_memory(r, a) for a in earlier],
                          r.flags.writeable))
        earlier.append(r)
    return described


@pytest.mark.parametrize("fn", [
    lambda x: (np.squeeze(x), x.squeeze(axis=()), np.atleast_1d(x)),
    lambda x: (np.add(x, 1, out=x), np.atleast_1d(x), np.nan_to_num(x, copy=False)),
    lambda x: ((x + 1), np.broadcast_to(x * 2, x.shape), np.broadcast_to(x * 3, (2, 4))),
    lambda x: (lambda y: (y, y.reshape(y.shape), y, np.broadcast_to(y, y.shape)))(x + 1),
], ids=["argument-itself", "argument-after-write", "read-only", "one-output-two-objects"])
def test_results_are_the_objects_and_views_numpy_returns_on_every_call(fn):
    compiled = fusejit.compile(fn)
    for k in range(3):
        x, y = np.arange(4.0) + k, np.arange(4.0) + k
        want, got = fn(x), compiled(y)
        assert_same(want, got)
        assert _identities(got, [y]) == _identities(want, [x])
        np.testing.assert_array_equal(x, y)
    assert compiled.cache_info()["eager_calls"] == 0


def test_argument_returned_after_a_first_call_with_one_array_twice():
    def pick(x, y):
        return x * 2, y, np.atleast_1d(y)

    compiled, a, b = fusejit.compile(pick), np.arange(3.0), np.arange(3.0) + 10
    compiled(a, a)
    want, got = pick(a, b), compiled(a, b)
    assert_same(want, got)
    assert got[1] is b and got[2] is b


def test_read_only_results_follow_numpy_on_every_call():
    def views(x):
        b = np.broadcast_to(x * 2, x.shape)
        return np.flip(x), b, b

    compiled = fusejit.compile(views)
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    compiled(frozen)    # traced with a read-only argument: np.flip of it is read-only
    for k in range(2):
        x, y = np.arange(3.0) + k, np.arange(3.0) + k
        want, got = views(x), compiled(y)
        assert_same(want, got)
        assert _identities(got, [y]) == _identities(want, [x])


def test_a_power_traced_as_nan_replays_for_no_other_operands():
    def root(x, lr):
        return x * lr ** 0.5, x.sum().item() ** 2

    compiled, x = fusejit.compile(root), np.ones(2)
    for lr, big in ((np.nan, 1.0), (-4.0, 1.0), (4.0, 1.0), (4.0, 1e300)):
        x = np.array([big, big])
        assert _outcome(compiled, x, lr)[0] == _outcome(root, x, lr)[0]
        if _outcome(root, x, lr)[1] is not None:
            assert_same(root(x, lr), compiled(x, lr))


def test_signed_zeros_and_truncation_of_traced_scalars():
    import math

    def signs(x, s):
        return math.copysign(1.0, float(x[0])) * x, math.trunc(x.sum()) + math.trunc(s), \
            x.astype(None)

    compiled = fusejit.compile(signs)
    for v, s in ((-0.0, 2.5), (0.0, -0.5), (-0.0, 3.0), (2.5, 0.0)):
        x = np.array([v, 1.5])
        assert_same(signs(x, s), compiled(x, s))


def _set_flat(x):
    x.flat = x[0, ::-1] * 2
    return x * 1


def _set_shape(x):
    x.shape = (3, 2)
    return x * 2


def _set_parts(x):
    z = x * (1 + 1j)
    z.real = x[::-1]
    z.imag = 3
    return z


@pytest.mark.parametrize("fn", [_set_flat, _set_shape, _set_parts])
def test_setting_an_array_attribute_in_the_body_changes_it_as_eagerly(fn):
    compiled = fusejit.compile(fn)
    for k in range(3):
        x, y = np.arange(6.0).reshape(2, 3) + k, np.arange(6.0).reshape(2, 3) + k
        assert_same(fn(x), compiled(y))
        assert_same(x, y)   # the argument too, as eager NumPy left it


def test_setting_an_attribute_ndarray_lacks_raises_numpys_error():
    def tag(x):
        x.step = 1
        return x

    for fn in (tag, fusejit.compile(tag)):
        with pytest.raises(AttributeError, match="'numpy.ndarray' object has no attribute"):
            fn(np.ones(2))


@pytest.mark.parametrize("fn", [
    lambda x: (np.flip(x) * 1, np.hsplit(x, 2)[0] * 1, np.atleast_3d(x) - 0,
               np.broadcast_arrays(x, x[0])[1] * 1, np.diagonal(x) * 1),
    lambda x: (np.reshape(x, (4, -1), copy=True), x.reshape((4, 2), copy=True),
               x.reshape(8, copy=True)),
    lambda x: (x + 1, x + 1, np.sum(x, axis=()), x.astype(F32).mean(axis=())),
], ids=["numpy-views-times-one", "reshape-copies", "equal-results"])
def test_new_arrays_numpy_returns_are_new_arrays_on_every_call(fn):
    # results NumPy made as new arrays must not alias the argument or one another
    compiled = fusejit.compile(fn)
    for k in range(3):
        x, y = np.arange(8.0).reshape(2, 4) + k, np.arange(8.0).reshape(2, 4) + k
        want, got = fn(x), compiled(y)
        assert_same(want, got)
        assert _identities(got, [y]) == _identities(want, [x])
    assert compiled.cache_info()["eager_calls"] == 0


def _warnings_of(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args)
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def test_floating_point_warnings_while_tracing_name_the_users_line():
    def logs(x):
        y = np.log(x) - np.log(-x)
        return y * 2

    compiled, zeros = fusejit.compile(logs), np.zeros(3)
    line = logs.__code__.co_firstlineno + 1
    assert _warnings_of(compiled, zeros) == _warnings_of(logs, zeros) == [
        (RuntimeWarning, f"{what} encountered in {where}", __file__, line)
        for what, where in [("divide by zero", "log")] * 2 + [("invalid value", "subtract")]]
    assert _warnings_of(compiled, zeros) == []   # a replay does not warn (README)


def test_a_constant_cast_warns_once_from_the_users_line():
    def store(x):
        x[1:] = np.array([1e10, -1])   # an invalid cast of a constant into int32
        return x

    line = store.__code__.co_firstlineno + 1
    for fn in (store, fusejit.compile(store)):
        assert [w[1:] for w in _warnings_of(fn, np.zeros(3, np.int32))] == [
            ("invalid value encountered in cast", __file__, line)]


def _astype_of_complex(z):
    return (z * 2).astype(np.float64) + 1


def _store_complex(z):
    o = np.zeros(2)
    o[:] = z * 2
    return o


def _float_of_complex(z):
    return z * float(z[0])


def _int_of_complex(z):
    return z * int(z[1])


@pytest.mark.parametrize("fn", [_astype_of_complex, _store_complex, _float_of_complex,
                                _int_of_complex])
def test_complex_warning_names_the_users_line_on_every_call(fn):
    # NumPy's C code warns from the innermost Python frame: while tracing that was
    # fusejit's (operators, indexing, guards), and on replay the cast's reference in ir/ops.py
    z = np.array([1 + 2j, 3 - 1j])
    compiled = fusejit.compile(fn)
    eager = _warnings_of(fn, z)
    assert [w[0] for w in eager] == [np.exceptions.ComplexWarning]
    for _ in range(3):
        assert _warnings_of(compiled, z) == eager
        assert_same(fn(z), compiled(z))
    assert compiled.cache_info()["hits"] >= 3


def _branch_on_complex(z):
    if float(z[0]) > 0:
        return np.abs(z) + 1
    return np.abs(z) - 1


def test_complex_warning_once_per_call_when_a_guard_of_another_path_fails():
    # each path's float() guard warned, the failing one's too: two warnings a call
    compiled = fusejit.compile(_branch_on_complex)
    negative, positive = np.array([-1 + 1j, 2, 3]), np.array([5 + 1j, 2, 3])
    compiled(negative)
    for _ in range(3):
        assert len(_warnings_of(compiled, positive)) == len(_warnings_of(
            _branch_on_complex, positive)) == 1
    assert compiled.cache_info()["traces"] == 2


def _update_then_cast(z, out):
    out += 1
    return z.astype(np.float64)


def test_an_in_place_update_before_a_complex_cast_that_raises_is_applied_once():
    # under an "error" filter the cast raises ComplexWarning after the kernel had written
    # ``out`` in place; the retrace added 1 again
    compiled = fusejit.compile(_update_then_cast)
    z = np.array([1 + 1j, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(z, np.zeros(2))
    for fn in (_update_then_cast, compiled):
        out = np.zeros(2)
        with warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            with pytest.raises(np.exceptions.ComplexWarning):
                fn(z, out)
        np.testing.assert_array_equal(out, np.ones(2))


def test_a_complex_warning_turned_into_an_error_raises_from_the_users_line():
    compiled = fusejit.compile(_astype_of_complex)
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        for fn in (_astype_of_complex, compiled, compiled):
            with pytest.raises(np.exceptions.ComplexWarning) as raised:
                fn(np.array([1j]))
            assert raised.traceback[-1].frame.code.raw.co_filename == __file__


def test_a_body_that_turns_floating_point_warnings_into_errors_runs_eagerly():
    # whether np.log raises then depends on data, and the except branch with it
    def guarded_log(x):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                return np.log(x).sum()
            except RuntimeWarning:
                return -1.0

    compiled = fusejit.compile(guarded_log)
    for values in ([1.0, 2.0], [-1.0, 2.0], [0.0, 2.0], [3.0, 2.0]):
        x = np.array(values)
        assert_same(guarded_log(x), compiled(x))
    assert "into errors" in str(compiled.explain(np.ones(2)))


def test_an_error_filter_for_floating_point_warnings_raises_while_tracing():
    def logs(x):
        return np.log(x) * 2

    compiled = fusejit.compile(logs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for fn in (logs, compiled):
            with pytest.raises(RuntimeWarning, match="divide by zero encountered in log"):
                fn(np.zeros(3))
    assert_same(logs(np.ones(3)), compiled(np.ones(3)))


def test_a_callers_error_filter_compiles_as_it_does_without_one():
    # ``python -W error``, pytest's ``filterwarnings = error``: the caller's, not the body's
    def scaled(x):
        return x * 2 + 1

    compiled = fusejit.compile(scaled)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            assert_same(scaled(np.ones(3)), compiled(np.ones(3)))
    assert compiled.cache_info()["eager_calls"] == 0


def _log_or_zeros_under_its_own_filter(x):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return np.log(x)
        except RuntimeWarning:
            return np.zeros_like(x)


def _log_or_zeros(x):
    try:
        return np.log(x)
    except RuntimeWarning:
        return np.zeros_like(x)


def _exp_with_a_finally(x):
    try:
        return np.exp(x) * 2
    finally:
        x = None


def test_a_body_with_a_finally_compiles_under_a_callers_error_filter():
    compiled = fusejit.compile(_exp_with_a_finally)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            assert_same(_exp_with_a_finally(np.ones(2)), compiled(np.ones(2)))
    assert compiled.cache_info()["eager_calls"] == 0


@pytest.mark.parametrize("fn", [_log_or_zeros_under_its_own_filter, _log_or_zeros])
def test_a_body_catching_warnings_a_callers_error_filter_raises_takes_numpys_branch(fn):
    compiled = fusejit.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for values in ([1.0, 2.0], [0.0, 2.0], [3.0, 2.0]):
            assert_same(fn(np.array(values)), compiled(np.array(values)))


def test_warnings_of_numpy_calls_run_as_they_are_name_the_users_line_on_every_call():
    # np.nanmean warns from Python with stacklevel=2: the frame that called it was fusejit's
    def column_means(x):
        m = np.nanmean(x, axis=0)
        return m * 2

    compiled, x = fusejit.compile(column_means), np.ones((3, 4))
    x[:, 1] = np.nan
    line = column_means.__code__.co_firstlineno + 1
    expected = [(RuntimeWarning, "Mean of empty slice", __file__, line)]
    for _ in range(3):      # the trace, then replays running np.nanmean as a host op
        assert _warnings_of(compiled, x) == _warnings_of(column_means, x) == expected
    assert compiled.cache_info()["hits"] == 2


def _outcome(fn, *args):
    """(type name, value) of the result, or (exception type, None)."""
    try:
        result = fn(*args)
    except Exception as exc:  # noqa: BLE001 -- the exception type is the outcome
        return type(exc).__name__, None
    return type(result).__name__, result


@pytest.mark.parametrize("body", [
    lambda x, n: x.reshape(n, -1) * 1,
    lambda x, n: np.reshape(x, (2, n, -1)) * 1,
    lambda x, n: np.broadcast_to(x, (n, 12)) * 1,
    lambda x, n: np.split(x, n),
    lambda x, n: np.array_split(x, [n]),
], ids=["reshape", "reshape-tuple", "broadcast_to", "split", "array_split"])
def test_a_numpy_integer_argument_used_as_a_size_is_guarded(body):
    # Before, the first value was kept: x.reshape(n, -1) replayed (2, 6) for n = 3 and 5.
    compiled, x = fusejit.compile(body), np.arange(12.0)
    for n in (2, 3, 5, 2):
        expected, got = _outcome(body, x, np.int64(n)), _outcome(compiled, x, np.int64(n))
        assert expected[0] == got[0]
        if expected[1] is not None:
            assert_same(expected[1], got[1])


@pytest.mark.parametrize("body, args", [
    (lambda x: [0.0] * (x > 9).sum(), (np.arange(12.0),)),      # repetition by an np.int64
    (lambda x: (x > 8).sum() * (1, 2), (np.arange(12.0),)),
    (lambda x: "ab" * (x > 9).sum(), (np.arange(12.0),)),
    (lambda x: x.sum() * [1, 2], (np.arange(3.0),)),             # TypeError: np.float64
    (lambda x, s: s * [1, 2], (np.arange(3.0), 2.0)),           # TypeError: Python float
    (lambda x, s: s + [1.0], (np.arange(3.0), 2.0)),
    (lambda x: x.sum() + [1.0], (np.arange(3.0),)),             # NumPy: an array
    (lambda x: x * [1.0, 2.0, 3.0], (np.arange(3.0),)),
], ids=["list-times-int", "int-times-tuple", "str-times-int", "float64-times-list",
        "float-times-list", "float-plus-list", "float64-plus-list", "array-times-list"])
def test_a_traced_scalar_with_a_sequence_follows_its_eager_type(body, args):
    # Before, every case went through the ufunc: [0.0] * n gave array([0.]).
    compiled = fusejit.compile(body)
    for _ in range(2):
        expected, got = _outcome(body, *args), _outcome(compiled, *args)
        assert expected[0] == got[0]
        if expected[1] is not None:
            assert_same(expected[1], got[1])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_abs_of_a_complex_array_is_real(dtype):
    # The IR typed |z| as complex: tracing raised an internal type mismatch.
    def magnitude(a):
        return np.abs(a) + 1

    a = np.array([3 + 4j, np.nan, complex(np.inf, np.nan), -1e30 + 2j, 0j], dtype)
    compiled = fusejit.compile(magnitude)
    for _ in range(2):
        assert_same(magnitude(a), compiled(a))
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_numpy_scalar_method_the_tracer_does_not_map_runs_eagerly():
    # x.sum().is_integer() raised AttributeError on the proxy (no such ndarray method).
    def whole(x):
        return x * x.sum().is_integer(), x.sum().as_integer_ratio(), (x > 1).sum().bit_count()

    compiled = fusejit.compile(whole)
    for x in (np.arange(3.0), np.arange(3.0) + 0.5):
        assert_same(whole(x), compiled(x))
    assert "float64.is_integer is not traced" in str(compiled.explain(x))


@pytest.mark.parametrize("body", [lambda a, s: np.copysign(a, s), lambda a, s: np.isclose(a, s),
                                  lambda a, s: np.divmod(a, s), lambda a, s: np.hypot(a, s)],
                         ids=["copysign", "isclose", "divmod", "hypot"])
def test_a_python_float_passed_to_a_host_call_stays_a_weak_scalar(body):
    compiled = fusejit.compile(body)
    a = np.array([np.inf, 1.0, -2.0], np.float32)
    for s in (1.0, -2.0, 1e39, -1e300):
        with np.errstate(all="ignore"):
            assert_same(body(a, s), compiled(a, s))
    assert compiled.cache_info()["eager_calls"] == 0


@pytest.mark.parametrize("body", [lambda a: a < -1, lambda a: np.clip(a, -5, 3),
                                  lambda a: np.where(a > 1, a, -1)],
                         ids=["compare", "clip", "where"])
def test_a_python_int_out_of_an_unsigned_arrays_range_follows_numpy(body, monkeypatch):
    monkeypatch.setenv("FUSEJIT_STRICT", "1")
    compiled = fusejit.compile(body)
    for dtype in (np.uint8, np.uint32, np.uint64):
        a = np.arange(5, dtype=dtype)
        assert_same(body(a), compiled(a))
    with pytest.raises(OverflowError, match="300 out of bounds for uint8"):
        fusejit.compile(lambda a: a + 300)(np.arange(5, dtype=np.uint8))


def _fill_with_item(x, y):
    x.fill(y[0].item())               # a Python float into an integer array


def _store_scalar(x, y):
    x[0] = y[0]                       # a NumPy float scalar (not a 0-d array)


def _store_sum(x, y):
    x[...] = y.sum()


@pytest.mark.parametrize("store", [_fill_with_item, _store_scalar, _store_sum])
def test_float_scalars_stored_into_integers_raise_where_numpy_raises(store):
    # NumPy converts a float scalar through Python's int: 630 into int8 and NaN raise; the
    # replays cast instead and stored 118 and INT_MIN
    compiled = fusejit.compile(store)
    for value, dtype in ((1.5, np.int8), (2.5, np.int8), (630.0, np.int8), (np.nan, np.int64)):
        mine, theirs = np.zeros(3, dtype), np.zeros(3, dtype)
        want, got = _outcome(store, theirs, np.array([value])), \
            _outcome(compiled, mine, np.array([value]))
        assert want[0] == got[0]
        assert_same(theirs, mine)


def _float_methods(x):
    v = x[0].item()
    return (divmod(v, 0.7)[0], divmod(2.0, v)[1], v.real, v.conjugate(), v.is_integer(),
            v.as_integer_ratio()[0], v.hex(), math.fsum(x[i].item() for i in range(2)))


def test_methods_of_item_values_are_traced_or_guarded():
    # float's own methods read the C value: divmod, .real and .hex() were frozen
    compiled = fusejit.compile(_float_methods)
    for first, second in ((1.5, 2.0), (3.25, 0.5), (2.0, 4.0)):
        x = np.array([first, second])
        assert _float_methods(x) == compiled(x)


def test_float_of_an_array_of_several_elements_raises_numpys_type_error():
    compiled = fusejit.compile(lambda x: float(x[:2]))
    for fn in (lambda x: float(x[:2]), compiled):
        with pytest.raises(TypeError, match="only 0-dimensional arrays"):
            fn(np.arange(3.0))


def _outer_into(a, b, o):
    r = np.outer(a, b, out=o)
    return r is o, o * 2


def _outer_into_int(a, b):
    o = np.zeros((2, 3), np.int32)
    np.outer(a, b, out=o)
    return o


def _add_at_int(a, i, v):
    np.add.at(a, i, v)           # NumPy adds in float64 and truncates each sum: -3 + 1.5 -> -1
    np.add.at(a, i, 1.5)
    return a


def _add_at_float32(a, i, lr):
    np.add.at(a, i, lr)          # a Python float adds as float64 here, not as a weak scalar
    return a * 1


def _reduce_options(a):
    return (np.maximum.reduce(a, axis=0, dtype=np.float64), np.minimum.reduce(a, 1, np.float64),
            np.logical_and.reduce(a > 0.3, axis=0, initial=True),
            np.logical_or.reduce(a > 0.8, axis=1, dtype=bool))


@pytest.mark.parametrize("fn, make", [
    (_outer_into, lambda k: (np.arange(2, dtype=F32) + k, np.ones(2, F32) * k, np.zeros((2, 2)))),
    (_outer_into_int, lambda k: (np.array([1, 2]) + k, np.arange(3, dtype=np.int16) * k)),
    (_add_at_int, lambda k: (np.array([0, -3, 5], np.int32) + k, np.array([0, 1, 1]),
                             np.array([1.5, 2.5, -0.7], F32))),
    (_add_at_float32, lambda k: (np.array([0, -3, 5], F32) + k, np.array([2, 1, 1]), 0.1 + k)),
    (_reduce_options, lambda k: (np.random.default_rng(k).random((3, 4), dtype=F32),)),
], ids=["outer-out", "outer-out-cast", "add-at-int", "add-at-python-float", "reduce-options"])
def test_numpy_options_on_replays(fn, make):
    # np.outer(out=) dropped its write on replays, np.add.at cast a float value to the int
    # target before adding, and ufunc.reduce with dtype=/initial= raised TypeError.
    compiled = fusejit.compile(fn)
    for k in range(4):
        want_args, got_args = make(k), make(k)
        assert_same(fn(*want_args), compiled(*got_args))
        for want, got in zip(want_args, got_args, strict=True):
            assert_same(want, got)
    assert compiled.cache_info()["eager_calls"] == 0


def test_a_host_call_returning_its_argument_runs_eagerly():
    # matrix_power(a, 1) is a itself: the program returned the argument on every replay,
    # whatever the traced exponent.
    def power(a, n):
        return np.linalg.matrix_power(a, n)

    compiled, a = fusejit.compile(power), np.array([[1.0, 1.0], [0.0, 1.0]])
    for n in (1, 3, 2, 1):
        want, got = power(a, np.int64(n)), compiled(a, np.int64(n))
        assert_same(want, got)
        assert (got is a) == (want is a)
    assert "returned its argument itself" in str(compiled.explain(a, np.int64(1)))


_CLASSES = np.array(["cat", "dog", "bird"])


@pytest.mark.parametrize("body", [
    lambda logits, y: _CLASSES[logits.argmax(1)],
    lambda logits, y: np.where(logits.argmax(1) == y, "ok", "bad"),
    lambda logits, y: logits.mean(0).astype(str),
], ids=["global-strings", "where-strings", "astype-str"])
def test_string_results_run_eagerly_without_an_internal_error(body):
    # They raised KeyError('str128') from the IR printer under FUSEJIT_STRICT=1 (and warned
    # "compiling failed" without it).
    compiled = fusejit.compile(body)
    logits, y = np.random.default_rng(0).standard_normal((5, 3)), np.zeros(5, np.int64)
    for _ in range(3):
        want, got = body(logits, y), compiled(logits, y)
        assert got.dtype == want.dtype and (got == want).all()
    assert compiled.cache_info()["eager_signatures"] == 1


@pytest.mark.parametrize("body, x_dtype, out_shape, out_dtype, compiles", [
    (lambda x, out: np.sum(x, axis=0, out=out), np.float32, (4,), np.float32, True),
    (lambda x, out: np.sum(x, axis=1, out=out) * 2, np.int32, (6,), np.int64, True),
    (lambda x, out: np.sum(x, axis=1, out=out), np.int32, (6,), np.int32, False),
    (lambda x, out: np.mean(x, 1, out=out), np.float64, (6,), np.float64, True),
    (lambda x, out: np.max(x, axis=0, keepdims=True, out=out), np.float32, (1, 4), np.float32,
     True),
    (lambda x, out: x.prod(axis=0, out=out), np.float64, (4,), np.float64, True),
    (lambda x, out: np.add.reduce(x, 0, out=out), np.float64, (4,), np.float64, True),
    (lambda x, out: np.any(x > 3, axis=1, out=out), np.float64, (6,), np.bool_, True),
    (lambda x, out: x.argmax(1, out=out), np.float32, (6,), np.intp, True),
    (lambda x, out: np.var(x, 0, out=out), np.float32, (4,), np.float32, True),
    (lambda x, out: x.std(1, ddof=1, out=out), np.float64, (6,), np.float64, True),
    (lambda x, out: np.std(x, 1, out=out), np.float32, (6,), np.float64, False),
    (lambda x, out: np.mean(x, 0, out=out, where=x > 3), np.float64, (4,), np.float64, False),
], ids=["sum", "sum-int-into-int64", "sum-int32-into-int32", "mean", "max-keepdims", "prod",
        "add-reduce", "any", "argmax", "var", "std", "std-f32-into-f64", "mean-where"])
def test_reductions_with_out_write_into_it(body, x_dtype, out_shape, out_dtype, compiles):
    # They raised UnsupportedError ("np.sum with out=, initial= or where="; np.add.reduce,
    # np.any, argmax, var and std with out=); NumPy reduces in out's dtype, so one of another
    # dtype than the plain result runs eagerly, as does out= with options fusejit does not
    # trace (where=).
    compiled = fusejit.compile(body)
    for step in range(3):
        x = (np.arange(24).reshape(6, 4) % 7 + step).astype(x_dtype)
        eager_out, out = np.zeros(out_shape, out_dtype), np.zeros(out_shape, out_dtype)
        want, got = body(x, eager_out), compiled(x, out)
        assert_same(want, got)
        assert_same(eager_out, out)
    assert compiled.cache_info()["eager_signatures"] == (0 if compiles else 1)


def test_var_and_std_with_correction_compile_like_ddof():
    # NumPy 2's ``correction=`` is ``ddof=`` by another name; it ran np.var on the host.
    def spread(x):
        return np.var(x, axis=1, correction=1), np.std(x, 0, correction=2, keepdims=True)

    compiled = fusejit.compile(spread)
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((5, 4)).astype(np.float32)
        assert_same(spread(x), compiled(x))
    assert "host ops (NumPy)" not in str(compiled.explain(x))


def test_a_range_in_an_index_is_an_integer_array():
    # ``logp[range(n), y]`` raised "operand of type range is not supported by fusejit".
    def nll(logp, y):
        return -logp[range(len(y)), y].mean(), logp[range(1, 4)] * 2

    compiled = fusejit.compile(nll)
    for seed in range(3):
        logp = np.random.default_rng(seed).standard_normal((5, 3))
        y = np.array([0, 2, 1, 1, seed % 3])
        assert_same(nll(logp, y), compiled(logp, y))
    assert compiled.cache_info()["eager_signatures"] == 0


def _compare_signed_with_uint64(a, b):
    return a == b, a != b, a < b, a <= b, a > b, a >= b, b < a, np.where(b >= a, a, 0)


@pytest.mark.parametrize("signed", [np.int64, np.int8])
def test_a_signed_integer_compares_exactly_with_a_uint64(signed):
    # NumPy 2 compares int64 with uint64 exactly; the kernel compared both as float64, so on
    # replay 2**53 + 1 equalled 2**53 and 2**63 - 1 was not below 2**63 (found by a probe).
    big = 2**53 + 1 if signed is np.int64 else 7
    a = np.array([big, np.iinfo(signed).max, 5, -1, np.iinfo(signed).min, 0], signed)
    b = np.array([big - 1, 2**63, 5, 2**64 - 1, 0, 0], np.uint64)
    compiled = fusejit.compile(_compare_signed_with_uint64)
    for _ in range(2):
        assert_same(_compare_signed_with_uint64(a, b), compiled(a, b))
    scalar = fusejit.compile(lambda x: x == np.uint64(2**53))
    x = np.array([2**53 + 1, 2**53])
    for _ in range(2):
        assert_same(x == np.uint64(2**53), scalar(x))


def test_an_einsum_contracting_float16_gives_numpys_float16_sums():
    # NumPy's einsum adds float16 products in float16; as a matmul (which adds in float32)
    # the replay gave -3.703 where NumPy gives -6.129 (found by a probe).
    rng = np.random.default_rng(0)
    a = (10 * rng.standard_normal((2, 300))).astype(np.float16)
    b = (10 * rng.standard_normal((300, 3))).astype(np.float16)
    compiled = fusejit.compile(lambda a, b: np.einsum("ij,jk->ik", a, b))
    for _ in range(2):
        assert_same(np.einsum("ij,jk->ik", a, b), compiled(a, b))


@pytest.mark.parametrize("body", [lambda x: np.sum(x[0]), lambda x: np.sum(x, axis=()),
                                  lambda x: np.arctan2(x[1], np.sum(x[0]))],
                         ids=["0-d", "no-axes", "arctan2"])
def test_a_sum_over_no_elements_adds_numpys_plus_zero(body):
    # NumPy's float sum starts from +0.0, so the sum of a lone -0.0 is +0.0; a replay copied
    # it (-0.0), and arctan2(0, sum) gave pi for NumPy's 0 (found by the CI fuzzer).
    compiled = fusejit.compile(body)
    x = np.array([-0.0, 0.0, np.nan, -np.inf], np.float32)
    for _ in range(2):
        assert_same(body(x), compiled(x))
        assert np.array_equal(np.signbit(body(x)), np.signbit(compiled(x)))


def _scalar_half_powers(x, lr):
    return x.sum() ** 0.5, x[0] ** 0.5, x * (x.sum() ** 0.5), np.arctan2(lr ** 0.5, -1.0)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_a_scalars_half_power_is_c_pow_as_numpys_scalar_math(dtype):
    # NumPy scalars and Python floats: (-inf) ** 0.5 is inf, (-0.0) ** 0.5 is +0.0 (C pow);
    # an array's ** 0.5 is its square root (nan, -0.0)
    compiled = fusejit.compile(_scalar_half_powers)
    for v in (4.0, -np.inf, -0.0, 9.0, -np.inf, -0.0):
        x = np.array([v, 0.0], dtype)
        want = quiet(_scalar_half_powers, x, abs(v) if v != 0 else v)
        got = quiet(compiled, x, abs(v) if v != 0 else v)
        for w, g in zip(want, got, strict=True):
            assert_leaf_same(w, g)
            assert np.array_equal(np.signbit(w), np.signbit(g))


def test_reductions_of_ufuncs_given_none_for_options_they_lack():
    def reduced(x):
        return (np.maximum.reduce(x, axis=1, dtype=None), np.minimum.reduce(x, 0, None),
                np.logical_or.reduce(x > 0, 1, None))

    compiled = fusejit.compile(reduced)
    for seed in range(2):
        x = np.random.default_rng(seed).standard_normal((3, 4))
        assert_same(reduced(x), compiled(x))


def test_a_scalars_in_place_half_power_is_its_half_power():
    def rooted(x):
        s = x.sum()
        s **= 0.5
        return s

    compiled = fusejit.compile(rooted)
    for v in (4.0, -np.inf, -0.0, -np.inf):
        x = np.array([v, 0.0])
        assert_leaf_same(quiet(rooted, x), quiet(compiled, x))


def _strided_into_itself(x):
    x[::2] = x[:4]
    return x


def _copied_into_itself(x):
    np.copyto(x[0:7:2], x[1:5])
    return x * 1


def _copied_back_into_itself(x):
    np.copyto(x[1:5], x[0:7:2])
    return x


def _shifted_into_itself(x):
    x[1::2] = x[:4]
    return x


@pytest.mark.parametrize("fn", [_strided_into_itself, _copied_into_itself,
                                _copied_back_into_itself, _shifted_into_itself])
def test_an_overlapping_assignment_with_another_stride_answers_as_numpy_every_call(fn):
    # NumPy copies a 1-D overlap of strides of one sign element by element, reading what it
    # wrote: x[::2] = x[:4] gives [0 1 1 3 1 5 3 7]
    check_calls(fn, lambda call: (np.arange(8.0) + call,))


@pytest.mark.parametrize("divisor", [-1, 3])
def test_the_smallest_int64_floor_divided_by_minus_one_wraps_where_it_is_compared(divisor):
    # a signed negation is undefined on overflow in LLVM, which folded ``x // -1 < 0``
    def negative_quotients(x):
        return (x // divisor) < 0, np.sign(x // divisor)

    x = np.array([np.iinfo(np.int64).min, -7, 7, 0], np.int64)
    check_calls(negative_quotients, lambda call: (x.copy(),))


@pytest.mark.parametrize("subscripts", ["i,j->", "i,j->i", "ij,jk->j", "ij,jk->ij", "ij,ik->i",
                                        "ij,kl->jk", "ij,jk->ik"])
def test_an_einsum_of_infinities_answers_as_numpy(subscripts):
    # NumPy sums an index of one operand alone before or after the products, by form
    def contracted(a, b):
        return np.einsum(subscripts, a, b)

    dims = {"i": 3, "j": 4, "k": 2, "l": 2}
    values = np.array([0.0, 1.0, -1.0, 2.0, np.inf, -np.inf])

    def make_args(call):
        rng = np.random.default_rng(call)
        return tuple(rng.choice(values, tuple(dims[c] for c in term))
                     for term in subscripts.split("->")[0].split(","))
    with np.errstate(invalid="ignore"):
        check_calls(contracted, make_args, calls=4)
