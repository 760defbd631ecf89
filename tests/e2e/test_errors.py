"""Error parity with NumPy: a compiled function raises what eager NumPy raises, at the user's line.

For every bad call in the table below, the compiled function (already traced and replaying a
good signature) must raise the same exception type as eager NumPy, the traceback must contain
the frame of the user's line that failed (marked ``# raises`` in its source), and the function
must keep working for good calls afterwards: the good signature still replays without a
retrace, and the bad signature holds neither a compiled path nor an eager entry.
"""
from __future__ import annotations

import inspect
import traceback

import numpy as np
import pytest

import fusejit
from tests.oracle import assert_same


def f32(*shape):
    return np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)


def i32(*shape):
    return np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)


def add(a, b):
    return a + b  # raises


def sum_axis_2(a):
    return np.exp(a).sum(axis=2)  # raises


def sum_negative_axis(a):
    return a.max(axis=-3)  # raises


def reduce_repeated_axis(a):
    return a.sum(axis=(0, -1))  # raises


def bitwise_and(a, b):
    return (a & b) + 1  # raises


def invert(a):
    return ~a  # raises


def add_one(a):
    return a + 1.0  # raises


def scale(a, s):
    return a * s  # raises


def two_args(a, b):
    return a * b


def reshape_5x5(a):
    return a.reshape(5, 5)  # raises


def matmul(a, b):
    return np.tanh(a @ b)  # raises


def concatenate(a, b):
    return np.concatenate([a, b], axis=0)  # raises


def transpose_bad_perm(a):
    return np.transpose(a, (0, -1))  # raises


def broadcast_to_smaller(a):
    return np.broadcast_to(a, (3,))  # raises


def index_out_of_range(a):
    return a[5] * 2  # raises


def inplace_cast(a, b):
    a += b  # raises
    return a


def int_negative_power(a):
    return a ** -1  # raises


# name: (function, good arguments, bad arguments)
BAD_CALLS = {
    "mismatched_shapes": (add, (f32(3, 4), f32(4)), (f32(3, 4), f32(3))),
    "bad_axis": (sum_axis_2, (f32(2, 3, 4),), (f32(2, 3),)),
    "bad_negative_axis": (sum_negative_axis, (f32(2, 3, 4),), (f32(2, 3),)),
    "repeated_axis": (reduce_repeated_axis, (f32(2, 3),), (f32(3),)),
    "bitwise_on_floats": (bitwise_and, (i32(4), i32(4)), (f32(4), f32(4))),
    "invert_on_floats": (invert, (i32(3),), (f32(3),)),
    "object_array": (add_one, (f32(2),), (np.array([1, "x"], dtype=object),)),
    "leaf_changes_type_to_str": (scale, (f32(3), 2.0), (f32(3), "x")),
    "leaf_changes_type_to_none": (scale, (f32(3), 2.0), (f32(3), None)),
    "too_few_arguments": (two_args, (f32(3), f32(3)), (f32(3),)),
    "too_many_arguments": (two_args, (f32(3), f32(3)), (f32(3), f32(3), f32(3))),
    "impossible_reshape": (reshape_5x5, (f32(25),), (f32(24),)),
    "matmul_mismatch": (matmul, (f32(3, 4), f32(4, 2)), (f32(3, 4), f32(3, 2))),
    "concatenate_mismatch": (concatenate, (f32(2, 3), f32(1, 3)), (f32(2, 3), f32(2, 4))),
    "bad_permutation": (transpose_bad_perm, (f32(2, 3),), (f32(2, 3, 4),)),
    "broadcast_to_smaller": (broadcast_to_smaller, (f32(1),), (f32(2),)),
    "index_out_of_range": (index_out_of_range, (f32(6),), (f32(5),)),
    "inplace_unsafe_cast": (inplace_cast, (f32(3), f32(3)), (i32(3), f32(3))),
    "integer_negative_power": (int_negative_power, (f32(3),), (i32(3),)),
}
NO_USER_LINE = {"too_few_arguments", "too_many_arguments"}  # Python raises at the call site


def raises_line(fn) -> int:
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if "# raises" in line)


def user_frames(exc) -> list[tuple[str, int]]:
    return [(frame.filename, frame.lineno) for frame in traceback.extract_tb(exc.__traceback__)]


def raised(fn, args):
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001 -- the test compares what each side raised
        return exc
    raise AssertionError(f"{fn.__name__}{tuple(np.shape(a) for a in args)} did not raise")


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_call_raises_numpys_error_at_the_users_line(case):
    fn, good, bad = BAD_CALLS[case]
    compiled = fusejit.compile(fn)
    assert_same(fn(*good), compiled(*good))                 # traced: the good signature

    expected = raised(fn, bad)
    for attempt in range(2):                                # a second bad call: same answer
        error = raised(compiled, bad)
        assert type(error) is type(expected), f"attempt {attempt}: {error!r} != {expected!r}"
        assert str(error) == str(expected)
        if case not in NO_USER_LINE:
            assert (__file__, raises_line(fn)) in user_frames(error), user_frames(error)

    before = compiled.cache_info()
    assert_same(fn(*good), compiled(*good))                 # still replays the good signature
    after = compiled.cache_info()
    assert after["hits"] == before["hits"] + 1
    assert after["traces"] == before["traces"]
    assert after["paths"] == 1


@pytest.mark.parametrize("case", ["mismatched_shapes", "bad_axis", "matmul_mismatch"])
def test_bad_call_first_does_not_poison_the_cache(case):
    """The bad call comes before any good one: tracing it fails and leaves nothing behind."""
    fn, good, bad = BAD_CALLS[case]
    compiled = fusejit.compile(fn)
    assert type(raised(compiled, bad)) is type(raised(fn, bad))
    info = compiled.cache_info()
    assert (info["paths"], info["eager_signatures"]) == (0, 0)
    for _ in range(2):
        assert_same(fn(*good), compiled(*good))
    info = compiled.cache_info()
    assert (info["traces"], info["hits"], info["paths"]) == (1, 1, 1)


def test_error_after_a_data_dependent_branch_is_raised_on_replay():
    """A shape error only on one branch: the branch not yet traced raises NumPy's error."""
    def branchy(a, b):
        if a.sum() > 0:
            return a * 2
        return a + b  # raises

    compiled = fusejit.compile(branchy)
    positive, negative, b = np.ones(3), -np.ones(3), np.ones(4)
    assert_same(branchy(positive, b), compiled(positive, b))
    error = raised(compiled, (negative, b))
    assert type(error) is type(raised(branchy, (negative, b)))
    assert (__file__, raises_line(branchy)) in user_frames(error)
    assert_same(branchy(positive, b), compiled(positive, b))


def int_power(a, b):
    return a ** b  # raises


def gather_times_two(a, index):
    return a[index] * 2  # raises


def scatter_zero(a, index):
    a[index] = 0.0  # raises
    return a.sum()


# Errors that depend on the data, not the signature: the bad call replays a compiled program.
DATA_ERRORS = {
    "negative_integer_power": (int_power, (i32(3), i32(3)), (i32(3), np.array([1, -1, 2]))),
    "gather_out_of_bounds": (gather_times_two, (f32(3), np.array([0, 2])),
                             (f32(3), np.array([0, 3]))),
    "gather_negative_out_of_bounds": (gather_times_two, (f32(3), np.array([0, -3])),
                                      (f32(3), np.array([0, -4]))),
    "scatter_out_of_bounds": (scatter_zero, (f32(3), np.array([0, 2])),
                              (f32(3), np.array([0, 5]))),
}


@pytest.mark.parametrize("case", sorted(DATA_ERRORS))
def test_data_dependent_error_on_replay_matches_numpy(case):
    fn, good, bad = DATA_ERRORS[case]
    compiled = fusejit.compile(fn)
    assert_same(fn(*[a.copy() for a in good]), compiled(*[a.copy() for a in good]))
    eager_args, compiled_args = [a.copy() for a in bad], [a.copy() for a in bad]
    expected = raised(fn, eager_args)
    error = raised(compiled, compiled_args)
    assert type(error) is type(expected) and str(error) == str(expected)
    assert (__file__, raises_line(fn)) in user_frames(error), user_frames(error)
    assert_same(eager_args, compiled_args)                  # writes before the error agree
    assert_same(fn(*[a.copy() for a in good]), compiled(*[a.copy() for a in good]))
    assert compiled.cache_info()["paths"] == 1


def test_an_unused_write_with_an_index_out_of_bounds_raises_like_numpy():
    def clear(x, idx):
        h = x * 2
        h[idx] = 0.0          # nothing reads h afterwards
        return x.sum()

    compiled = fusejit.compile(clear)
    for idx in ([0, 1], [1, 2]):
        assert_same(clear(np.arange(4.0), np.array(idx)), compiled(np.arange(4.0), np.array(idx)))
    for run in (clear, compiled):
        with pytest.raises(IndexError):
            run(np.arange(4.0), np.array([1, 9]))


def test_an_unused_integer_power_with_a_negative_exponent_raises_like_numpy():
    def unused_power(x, n):
        _unused = x ** n      # noqa: F841 -- nothing reads it
        return x.sum()

    compiled = fusejit.compile(unused_power)
    assert_same(unused_power(np.arange(3), np.array(2)), compiled(np.arange(3), np.array(2)))
    for run in (unused_power, compiled):
        with pytest.raises(ValueError, match="negative integer powers"):
            run(np.arange(3), np.array(-1))
