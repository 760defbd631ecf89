"""Run a function eagerly and through ``fusejit.compile`` on the same data and compare.

``check(fn, make_inputs)`` calls both ``calls`` times with fresh data of the same shapes (the
first compiled call traces; later calls replay, which is what matters), each on its own copies
of the arguments, and asserts with the shared oracle (``tests/oracle.py``): the same exception
type when NumPy raises; otherwise the same structure, types (np.generic vs ndarray), shapes and
dtypes, ints and bools exact, floats within tolerance with NaN positions equal, and the same
argument values after the call (in-place writes are replayed).
"""
from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass

import numpy as np

import fusejit
from fusejit.tracer import flatten
from tests.oracle import assert_leaf_same

# (rtol, atol) for programs of correctly rounded operations only, and for programs with
# reductions (reordered sums) or transcendentals (fusejit's vector math is a few ulp off).
EXACT_TOLERANCE = {np.dtype(np.float32): (1e-6, 1e-7), np.dtype(np.float64): (1e-12, 1e-15)}
LOOSE_TOLERANCE = {np.dtype(np.float32): (1e-4, 1e-5), np.dtype(np.float64): (1e-9, 1e-9)}


@dataclass
class Outcome:
    """What happened to one program: how the compiled calls ran."""

    eager_raised: bool = False
    fallback: bool = False        # some call ran eagerly inside fusejit
    traces: int = 0
    hits: int = 0
    kernels: int = 0


def _call(fn, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args), None
        except Exception as exc:  # noqa: BLE001 -- compared against the other side
            return None, exc


def assert_matches(expected, actual, inexact=True, what="result",
                   single_precision=False, zero_signs=True) -> None:
    """The oracle's checks, with a float tolerance scaled by the result's magnitude: sums that
    cancel keep the absolute error of their largest terms, not of their (small) result."""
    want_leaves, want_tree = flatten(expected)
    got_leaves, got_tree = flatten(actual)
    assert got_tree == want_tree, f"{what}: structure {got_tree} != {want_tree}"
    base = dict(LOOSE_TOLERANCE if inexact else EXACT_TOLERANCE)
    if inexact and single_precision:
        # A float32 intermediate (a transcendental a few ulp off) can flow into a float64
        # result: the result is only as precise as the float32 step.
        base[np.dtype(np.float64)] = base[np.dtype(np.float32)]
    for index, (want, got) in enumerate(zip(want_leaves, got_leaves, strict=True)):
        tolerance = dict(base)
        dtype = getattr(want, "dtype", None)
        if inexact and dtype in base:
            rtol, atol = base[dtype]
            tolerance[dtype] = (rtol, atol * max(1.0, _largest_finite(want)))
        try:
            assert_leaf_same(want, got, tolerance)
            if not inexact and zero_signs:
                _assert_zero_signs(want, got)
        except AssertionError as exc:
            raise AssertionError(f"{what} leaf {index}: {exc}") from None


def _assert_zero_signs(want, got) -> None:
    """Correctly rounded arithmetic gives -0.0 and +0.0 deterministically: they must match."""
    want, got = np.asarray(want), np.asarray(got)
    if want.dtype.kind == "f":
        zeros = want == 0
        np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]),
                                      err_msg="sign of zero")


def _largest_finite(value) -> float:
    finite = np.abs(np.asarray(value, dtype=np.float64))
    finite = finite[np.isfinite(finite)]
    return float(finite.max()) if finite.size else 0.0


def _has_single_precision(inputs, fn) -> bool:
    """Float32 arguments, or float32 constants in the program's source."""
    leaves = flatten(inputs)[0]
    if any(getattr(leaf, "dtype", None) in (np.float32, np.float16) for leaf in leaves):
        return True
    source = getattr(fn, "__fusejit_source__", "")
    return "float32" in source or "float16" in source


# Calls that pick one of several equal values: on a tie of -0.0 and +0.0 NumPy returns either
# depending on dtype, layout and position (np.fmax on float32: the second operand in the SIMD
# body of a long contiguous array, the first in a short one or under broadcasting; np.max along
# an axis: the last row, in a SIMD tree reduction whichever lane wins).
_ZERO_SIGN_UNSPECIFIED = ("np.fmax(", "np.fmin(", "np.max(", "np.min(", ".max(", ".min(")


def _zero_signs_specified(fn) -> bool:
    """False when the program calls one of ``_ZERO_SIGN_UNSPECIFIED``: no sign is *the*
    answer there; values and NaN positions are still compared."""
    source = getattr(fn, "__fusejit_source__", "")
    return not any(call in source for call in _ZERO_SIGN_UNSPECIFIED)


def check(fn, make_inputs, calls=3, inexact=True, compiled=None) -> Outcome:
    """Differential check of ``fn``; ``make_inputs(call)`` returns the argument list."""
    compiled = compiled or fusejit.compile(fn)
    outcome = Outcome()
    for call in range(calls):
        inputs = make_inputs(call)
        eager_args, compiled_args = copy.deepcopy(inputs), copy.deepcopy(inputs)
        expected, eager_error = _call(fn, eager_args)
        actual, compiled_error = _call(compiled, compiled_args)
        label = f"call {call}"
        if eager_error is not None:
            outcome.eager_raised = True
            assert compiled_error is not None, \
                f"{label}: NumPy raised {eager_error!r}, compiled returned {actual!r}"
            assert type(compiled_error) is type(eager_error), \
                f"{label}: NumPy raised {eager_error!r}, compiled raised {compiled_error!r}"
            continue
        if compiled_error is not None:
            raise AssertionError(f"{label}: compiled raised {compiled_error!r}, "
                                 "NumPy ran") from compiled_error
        single, signs = _has_single_precision(inputs, fn), _zero_signs_specified(fn)
        assert_matches(expected, actual, inexact, f"{label} result", single, signs)
        assert_matches(eager_args, compiled_args, inexact, f"{label} arguments after the call",
                       single, signs)
    info = compiled.cache_info()
    outcome.fallback = bool(info["eager_calls"] or info["eager_signatures"])
    outcome.traces, outcome.hits = info["traces"], info["hits"]
    outcome.kernels = info["kernels_compiled"] + info["kernels_reused"]
    return outcome
