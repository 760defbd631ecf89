"""Reduce kernels: every reduction per dtype, axis forms, keepdims both ways, NaN semantics."""
import numpy as np
import pytest
from codegen_helpers import check_kernel, fused_node

from fusejit.codegen import build_kernel

AXIS_FORMS = [(0,), (1,), (2,), (0, 2), (0, 1, 2)]
BY_DTYPE = {
    np.float32: ["sum", "prod", "reduce_max", "reduce_min", "argmax", "argmin"],
    np.float64: ["sum", "prod", "reduce_max", "reduce_min", "argmax", "argmin"],
    np.int32: ["reduce_max", "reduce_min", "argmax", "argmin"],
    np.int64: ["sum", "prod"],  # NumPy sums i32 to i64: the tracer casts first
    np.bool_: ["any", "all", "reduce_max", "reduce_min", "argmax", "argmin"],
}
CASES = [(dtype, op, AXIS_FORMS[k % len(AXIS_FORMS)], k % 2 == 0)
         for dtype, names in BY_DTYPE.items() for k, op in enumerate(names)]


def data(dtype, shape=(3, 4, 5), seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.4
    if np.dtype(dtype).kind == "i":
        return rng.integers(-9, 9, shape).astype(dtype)
    values = rng.standard_normal(shape).astype(dtype)
    values[1, 2, 3] = np.nan  # one row holds a NaN: max/min/arg* must propagate it
    values[0, 0, :2] = -0.0
    return values


def reduce_node(op, dtype, axes, keepdims, shape=(3, 4, 5)):
    if op in ("argmax", "argmin") and len(axes) not in (1, len(shape)):
        axes = tuple(range(len(shape)))  # several axes: only all of them (flat index)
    return fused_node([(shape, dtype)], lambda emit, x: [
        emit(op, x, axes=axes, keepdims=keepdims)], kind="reduce")


@pytest.mark.parametrize("dtype, op, axes, keepdims", CASES,
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_reduction(dtype, op, axes, keepdims):
    node = reduce_node(op, dtype, axes, keepdims)
    rtol = 1e-5 if dtype == np.float32 else None  # pairwise f32 sum vs our f64 accumulator
    check_kernel(node, data(dtype), rtol=rtol)


@pytest.mark.parametrize("axes", AXIS_FORMS)
def test_sum_axis_forms_keepdims_both_ways(axes):
    for keepdims in (False, True):
        check_kernel(reduce_node("sum", np.float64, axes, keepdims), data(np.float64, seed=3)
                     * 0 + np.arange(60.0).reshape(3, 4, 5))


def test_argmax_first_nan_and_first_occurrence():
    x = np.array([[1.0, 3.0, 3.0, 0.0], [np.nan, 2.0, np.nan, 5.0], [2.0, 2.0, 2.0, 2.0]])
    node = fused_node([(x.shape, np.float64)], lambda emit, v: [
        emit("argmax", v, axes=(1,), keepdims=False), emit("argmin", v, axes=(1,),
                                                          keepdims=False)])
    with pytest.raises(ValueError, match="one reduction"):
        check_kernel(node, x)
    for op in ("argmax", "argmin", "reduce_max", "reduce_min"):
        check_kernel(reduce_node(op, np.float64, (1,), False, shape=x.shape), x)


def test_prologue_epilogue_and_extra_output():
    shape = (4, 6)

    def body(emit, x, bias):
        e = emit("exp", emit("sub", x, bias))
        s = emit("sum", e, axes=(1,), keepdims=True)
        return [emit("log", s), e]

    node = fused_node([(shape, np.float32), ((6,), np.float32)], body, kind="reduce")
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(shape)
    check_kernel(node, x, np.ones(6, np.float32), rtol=1e-5)


def test_zero_d_input_and_full_reduction_to_scalar():
    node = fused_node([((), np.float64)], lambda emit, x: [
        emit("sum", x, axes=(), keepdims=False)], kind="reduce")
    check_kernel(node, np.array(2.5))
    node = fused_node([((2, 3), np.int64)], lambda emit, x: [
        emit("prod", x, axes=(0, 1), keepdims=False)], kind="reduce")
    check_kernel(node, np.array([[1, 2, 3], [4, 5, -6]], np.int64))


@pytest.mark.parametrize("length", [1, 255, 256, 257, 1000, 3001])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
def test_float32_row_sums_in_blocks_stay_within_pairwise_error(length, parallel):
    # float32 sums add in float32 blocks of 256 and in float64 across blocks: every length
    # around the block size, row and strided variants, serial and parallel, against the exact
    # sum (float64 here is exact to far below float32 rounding) within NumPy's pairwise bound.
    rows = 5
    rng = np.random.default_rng(length)
    x = (rng.standard_normal((rows, length)) * 100 + 50).astype(np.float32)
    x[3, length // 2] = np.nan
    x[4, length - 1] = np.inf
    kernel = build_kernel(reduce_node("sum", np.float32, (1,), False, shape=x.shape))
    exact = x.astype(np.float64).sum(axis=1)
    bound = 4 * np.finfo(np.float32).eps * np.abs(x.astype(np.float64)).sum(axis=1)
    strided = np.repeat(x, 2, axis=1)[:, ::2]       # a non-unit last stride: strided variant
    for operand in (x, strided):
        with np.errstate(all="ignore"):
            (got,) = kernel(operand, parallel=parallel)
        assert got.dtype == np.float32 and got.shape == (rows,)
        assert np.isnan(got[3]) and got[4] == np.inf
        finite = slice(0, 3)
        assert np.all(np.abs(got[finite] - exact[finite]) <= bound[finite] + 1e-30), (
            got[finite], exact[finite])
    assert "float32 blocks of 256" in kernel.source


def test_max_min_reductions_propagate_nan_with_signed_zeros():
    # llvm.maximum/minimum carry only `nsz`: a tied -0.0/+0.0 may come back either way (as
    # from NumPy's own reductions), while NaN anywhere in a row still wins.
    x = np.zeros((4, 40), np.float32)
    x[:, ::2] = -0.0
    x[1, 7] = np.nan
    x[2, 39] = np.nan
    x[3] = np.linspace(-3, 2, 40, dtype=np.float32)
    for op in ("reduce_max", "reduce_min"):
        check_kernel(reduce_node(op, np.float32, (1,), False, shape=x.shape), x)
