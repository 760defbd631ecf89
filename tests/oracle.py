"""The test oracle: compiled results must equal eager NumPy's in type, shape, dtype and value."""
from __future__ import annotations

import numpy as np

from fusejit.tracer import flatten

# (rtol, atol) per dtype kind/size for whole models; single ops use tighter ones.
MODEL_TOLERANCE = {np.dtype(np.float32): (2e-4, 2e-5), np.dtype(np.float64): (1e-9, 1e-12)}


def tolerance_for(dtype) -> dict:
    """Tolerances for a model computed in ``dtype``: every float leaf gets that precision's."""
    rtol_atol = MODEL_TOLERANCE[np.dtype(dtype)]
    return {np.dtype(np.float32): rtol_atol, np.dtype(np.float64): rtol_atol}


def assert_same(expected, actual, tolerance=None) -> None:
    """Exact structure and types; values within per-dtype tolerance; NaN positions equal."""
    expected_leaves, expected_tree = flatten(expected)
    actual_leaves, actual_tree = flatten(actual)
    assert actual_tree == expected_tree, f"structure {actual_tree} != {expected_tree}"
    for want, got in zip(expected_leaves, actual_leaves, strict=True):
        assert_leaf_same(want, got, tolerance)


def assert_leaf_same(want, got, tolerance=None) -> None:
    assert type(got) is type(want), f"type {type(got).__name__} != {type(want).__name__}"
    if not isinstance(want, (np.ndarray, np.generic, float)):
        assert got == want
        return
    want_arr, got_arr = np.asarray(want), np.asarray(got)
    assert got_arr.shape == want_arr.shape, f"shape {got_arr.shape} != {want_arr.shape}"
    if isinstance(want, np.ndarray):   # a result NumPy wrote in full is no read-only view
        assert got.flags.writeable == want.flags.writeable, \
            f"writeable {got.flags.writeable} != {want.flags.writeable}"
    assert got_arr.dtype == want_arr.dtype, f"dtype {got_arr.dtype} != {want_arr.dtype}"
    if want_arr.dtype.kind not in "fc":
        np.testing.assert_array_equal(got_arr, want_arr)
        return
    rtol, atol = (tolerance or MODEL_TOLERANCE).get(want_arr.dtype, (1e-6, 1e-7))
    np.testing.assert_array_equal(np.isnan(got_arr), np.isnan(want_arr))
    np.testing.assert_allclose(got_arr, want_arr, rtol=rtol, atol=atol, equal_nan=True)


def check_calls(fn, make_args, calls=3):
    """``fn`` eager and compiled on equal fresh arguments (``make_args(call)``), call after
    call: the same results and the same arguments afterwards (in-place updates). Returns the
    compiled function."""
    import fusejit
    compiled = fusejit.compile(fn)
    for call in range(calls):
        want_args, got_args = make_args(call), make_args(call)
        assert_same(fn(*want_args), compiled(*got_args))
        for want, got in zip(want_args, got_args, strict=True):
            assert_same(want, got)
    return compiled
