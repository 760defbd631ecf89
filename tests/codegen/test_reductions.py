"""Reduce kernels: every reduction per dtype, axis forms, keepdims both ways, NaN semantics."""
import numpy as np
import pytest
from codegen_helpers import check_kernel, fused_node, reference

from fusejit.codegen import build_kernel
from fusejit.ir import Lit

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


@pytest.mark.parametrize("shape", [(1,), (3, 1)])
def test_epilogue_reading_a_prologue_value_over_a_reduced_dim_of_size_one(shape):
    # The reduced dim has size 1, so max(x, y) (per element) and sum(x) (per row) share a
    # shape; max(x, y) / sum(x) reads both and must be computed per element, after the sum.
    def body(emit, x, y):
        s = emit("sum", x, axes=(len(shape) - 1,), keepdims=True)
        return [emit("div", emit("max", x, y), s), s]

    node = fused_node([(shape, np.float64)] * 2, body, kind="reduce")
    check_kernel(node, np.full(shape, 0.5), np.full(shape, 2.0))


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


def _arg_rows(dtype, length):
    """Rows that put the extreme, NaNs, ties and signed zeros in different blocks of 256."""
    rng = np.random.default_rng(length)
    if np.dtype(dtype).kind == "i":
        x = rng.integers(-5, 5, (6, length)).astype(dtype)   # ties everywhere
        x[1] = np.arange(length)                             # a new extreme in every block
        x[2, -1], x[3, length // 2] = 99, -99
        return x
    x = rng.standard_normal((8, length)).astype(dtype)
    x[1, -1] = np.nan                                        # a NaN in the last block
    x[2, length // 3], x[2, -1] = np.nan, np.nan             # the first NaN wins
    x[3] = -np.inf
    x[4, 0], x[4, -1] = 100.0, 100.0                         # a tie across blocks: the first
    x[4, length // 2], x[4, length - 2] = -100.0, -100.0
    x[5] = 0.0
    x[5, ::2] = -0.0                                         # -0.0 == 0.0: the first zero
    x[6] = np.arange(length)                                 # rising: every block is better
    x[7] = -np.arange(length)
    return x


@pytest.mark.parametrize("length", [1, 255, 256, 257, 1000, 3001])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_over_blocks_find_numpys_index(op, dtype, length):
    x = _arg_rows(dtype, length)
    kernel = check_kernel(reduce_node(op, dtype, (1,), False, shape=x.shape), x)
    strided = np.repeat(x, 2, axis=1)[:, ::2]                # the strided variant
    np.testing.assert_array_equal(kernel(strided, parallel=True)[0], getattr(np, op)(x, axis=1))


def test_arg_reduction_rescans_its_block_with_the_prologue_and_its_stores():
    shape = (5, 700)

    def body(emit, x, bias):
        e = emit("exp", emit("sub", x, bias))
        return [emit("argmax", e, axes=(1,), keepdims=True), e]

    node = fused_node([(shape, np.float32), ((700,), np.float32)], body, kind="reduce")
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    x[2, 600] = np.nan
    check_kernel(node, x, np.linspace(-1, 1, 700, dtype=np.float32), rtol=1e-6)


@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("length", [1, 300, 2049])
def test_any_all_over_long_rows(op, length):
    x = np.zeros((4, length), bool)
    x[1, -1] = True
    x[2] = True
    x[3, ::3] = True
    check_kernel(reduce_node(op, np.bool_, (1,), False, shape=x.shape), x)
    check_kernel(reduce_node(op, np.bool_, (0, 1), False, shape=x.shape), x)


@pytest.mark.parametrize("op, dtype", [("sum", np.float32), ("sum", np.float64),
                                       ("reduce_max", np.float32), ("prod", np.float64),
                                       ("any", np.bool_), ("reduce_min", np.int32)])
@pytest.mark.parametrize("columns", [1, 255, 256, 600])
def test_column_reductions_in_chunks_of_columns(op, dtype, columns):
    # A reduction over axis 0 of a short matrix runs its columns in chunks, in parallel.
    rng = np.random.default_rng(columns)
    if dtype == np.bool_:
        x = rng.random((9, columns)) < 0.1
    elif np.dtype(dtype).kind == "i":
        x = rng.integers(-9, 9, (9, columns)).astype(dtype)
    else:
        x = rng.uniform(0.5, 2.0, (9, columns)).astype(dtype)   # no cancellation in sums
        x[4, -1] = np.nan
    node = reduce_node(op, dtype, (0,), False, shape=x.shape)
    kernel = check_kernel(node, x, rtol=1e-6 if dtype == np.float32 else None)
    assert "prange" in kernel.source
    want = check_kernel.__globals__["reference"](node, x)[0]
    for operand in (x, np.repeat(x, 2, axis=1)[:, ::2]):      # row and strided variants
        got = kernel(operand, parallel=True)[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


COLUMN_TILE_CASES = [("sum", np.float32), ("sum", np.float64), ("sum", np.int64),
                     ("prod", np.float64), ("reduce_max", np.float32),
                     ("reduce_min", np.int32), ("any", np.bool_), ("all", np.bool_)]


COLUMN_TILE_SHAPES = [((513, 3), (0,)), ((4100, 70), (0,)), ((600, 3, 40), (0, 1)),
                      ((300, 5000), (0,)), ((600, 1000), (0,)), ((0, 300), (0,)),
                      ((700, 0), (0,))]


@pytest.mark.parametrize("op, dtype, shape, axes", [
    (op, dtype, shape, axes) for shape, axes in COLUMN_TILE_SHAPES
    for op, dtype in COLUMN_TILE_CASES
    if shape[0] or op not in ("reduce_max", "reduce_min")],  # NumPy raises for no rows
    ids=str)
def test_column_reductions_split_rows_into_chunks_combined_in_order(op, dtype, shape, axes):
    # A tall array's column reduction splits its rows into chunks (a wide one its columns;
    # 600x1000 both: 2x4 tiles), each accumulating its own partials, combined per column
    # after the parallel loop: every op, a NaN in one chunk, rows not a multiple of the
    # chunks, no rows or no columns, serial and parallel alike.
    rng = np.random.default_rng(shape[0])
    values = rng.standard_normal(shape)
    if dtype == np.bool_:
        x = values > (1.5 if op == "any" else -2.5)
    elif op == "prod":
        x = (1 + values * 1e-3).astype(dtype)
    elif op == "sum" and dtype != np.int64:
        x = (np.abs(values) + 0.5).astype(dtype)     # no cancellation in float sums
    else:
        x = (values * 9).astype(dtype)
    if dtype in (np.float32, np.float64) and op != "prod" and x.size:
        x[shape[0] * 3 // 4, ..., 1] = np.nan    # in a later row chunk than the first
    node = reduce_node(op, dtype, axes, False, shape=shape)
    kernel = build_kernel(node)
    assert kernel.plan.columns and "numba.prange(nrc * ncc)" in kernel.source
    (want,) = reference(node, x)
    for parallel in (False, True):
        (got,) = kernel(x, parallel=parallel)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-13,
                                   equal_nan=True)


@pytest.mark.parametrize("rows", [1, 255, 256, 257, 1000])
@pytest.mark.parametrize("shape_of, axes", [
    (lambda r: (r, 300), (0,)), (lambda r: (r, 3, 300), (0, 1)), (lambda r: (3, r, 40), (1,))],
    ids=["2d", "3d", "3d_middle"])
def test_float32_column_sums_add_blocks_of_rows_in_float32(rows, shape_of, axes):
    # Blocks of 256 rows add in float32, the blocks in float64: the error bound is that of a
    # recursive float32 sum of one block, not of every row as in NumPy's column sum.
    shape = shape_of(rows)
    x = np.random.default_rng(rows).uniform(-1.0, 2.0, shape).astype(np.float32)
    kernel = build_kernel(reduce_node("sum", np.float32, axes, False, shape=shape))
    assert "blocks of 256 rows" in kernel.source
    exact = x.sum(axis=axes, dtype=np.float64)
    terms = min(rows, 256) * int(np.prod([shape[a] for a in axes])) // rows   # one block
    bound = (terms + 1) * 2.0**-24 * np.abs(x).sum(axis=axes, dtype=np.float64)
    for parallel in (False, True):
        got = kernel(x, parallel=parallel)[0]
        assert got.dtype == np.float32 and got.shape == exact.shape
        assert np.all(np.abs(got - exact) <= bound)


FULL_REDUCTIONS = [("sum", np.float32), ("sum", np.float64), ("sum", np.int64),
                   ("prod", np.float64), ("reduce_max", np.float32), ("reduce_min", np.float64),
                   ("any", np.bool_), ("all", np.bool_)]


@pytest.mark.parametrize("op, dtype", FULL_REDUCTIONS, ids=str)
@pytest.mark.parametrize("shape", [(37, 3, 5), (5, 600), (40, 2)])
def test_reductions_over_every_dim_reduce_chunks_of_rows_in_parallel(op, dtype, shape):
    rng = np.random.default_rng(4)
    values = rng.standard_normal(shape)
    values = values > 0.9 if dtype == np.bool_ else (values * 9).astype(dtype)
    if op == "prod":
        values = 1 + values * 1e-3
    if op in ("reduce_max", "reduce_min"):
        values.flat[len(values.flat) // 2] = np.nan    # in some chunk: the result is NaN
    node = fused_node([(shape, dtype)], lambda emit, x: [
        emit(op, emit("mul", x, x) if dtype in (np.float32, np.int64) else x,
             axes=tuple(range(len(shape))), keepdims=False)], kind="reduce")
    kernel = build_kernel(node)
    assert kernel.plan.chunked and "numba.prange(nch)" in kernel.source
    (want,) = reference(node, values)
    for variant in (kernel(values, parallel=True), kernel.fast_call(values)):
        (got,) = variant
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == np.float32 else 1e-13,
                                   equal_nan=True)


def _full_arg_cases(dtype, shape):
    """Arrays that put an argmax/argmin's answer in different rows, blocks and chunks."""
    rng = np.random.default_rng(sum(shape))
    if np.dtype(dtype).kind == "i":
        tied = rng.integers(-3, 3, shape).astype(dtype)      # ties in every chunk
        rising = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
        return [tied, rising, -rising]
    x = rng.standard_normal(shape).astype(dtype)
    late_nan, two_nans, extremes = x.copy(), x.copy(), x.copy()
    late_nan.flat[-1] = np.nan                               # in the last chunk's last block
    two_nans.flat[[x.size // 3, x.size // 2]] = np.nan       # the first NaN wins
    extremes.flat[[1, x.size - 2]] = 50.0                    # ties across chunks: the first
    extremes.flat[[x.size // 4, x.size - 1]] = -50.0
    return [x, late_nan, two_nans, extremes, np.full(shape, -np.inf, dtype)]


@pytest.mark.parametrize("shape", [(1, 300), (40, 257), (33, 2, 600), (3, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_over_every_dim_scan_blocks_and_chunks_in_order(op, dtype, shape):
    # Over every dim, the best block keeps the indices of its row; the parallel variant's
    # chunks each find theirs, combined in order: NumPy's first flat index, first NaN.
    node = fused_node([(shape, dtype)], lambda emit, x: [
        emit(op, emit("mul", x, x) if dtype == np.int32 else emit("neg", x),
             axes=tuple(range(len(shape))), keepdims=False)], kind="reduce")
    kernel = build_kernel(node)
    assert kernel.plan.chunked and "_r0 = i0 if" in kernel.source
    for values in _full_arg_cases(dtype, shape):
        (want,) = reference(node, values)
        strided = np.repeat(values, 2, axis=-1)[..., ::2]
        for got in (kernel(values, parallel=False), kernel(values, parallel=True),
                    kernel(strided, parallel=True), kernel.fast_call(values)):
            assert got[0].dtype == want.dtype and got[0].shape == want.shape
            np.testing.assert_array_equal(got[0], want)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shape, axes", [((6, 700), (1,)), ((700, 6), (0,)), ((37, 3, 300), (1,)),
                                         ((37, 3, 300), (0, 1, 2)), ((5, 600), (0, 1))],
                         ids=["rows", "columns", "middle", "every-dim", "chunks"])
def test_independent_reductions_side_by_side_in_one_pass(shape, axes, keepdims):
    # Horizontal fusion of reductions (``x.sum(-1)``, ``abs(x).max(-1)``, ``(x > 1).any(-1)``,
    # an epilogue on one of them): one accumulator each in the same loop, in every loop form
    # (rows, columns, chunks of rows), serial and parallel.
    def body(emit, x, y):
        kept = {"axes": axes, "keepdims": keepdims}
        total = emit("sum", emit("mul", x, y), **kept)
        largest = emit("reduce_max", emit("abs", x), **kept)
        seen = emit("any", emit("gt", x, Lit(1.0, np.float32)), **kept)
        return [emit("add", total, largest), largest, seen, emit("reduce_min", y, **kept)]

    node = fused_node([(shape, np.float32)] * 2, body, kind="reduce")
    kernel = build_kernel(node)
    assert kernel.plan.passes == 1 and len(kernel.plan.reduces) == 4
    rng = np.random.default_rng(5)
    x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    x.flat[x.size // 3] = np.nan
    want = reference(node, x, y)
    for variant in (kernel(x, y, parallel=False), kernel(x, y, parallel=True),
                    kernel.fast_call(x, y)):
        for got, expected in zip(variant, want, strict=True):
            assert got.shape == expected.shape and got.dtype == expected.dtype
            np.testing.assert_allclose(got, expected, rtol=2e-6, equal_nan=True)
