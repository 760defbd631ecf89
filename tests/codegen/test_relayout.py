"""Inputs laid out by columns (``x.T`` of a C-ordered ``x``, F-ordered beside C-ordered) are
copied C-ordered by tiles and the vectorized row variant runs on the copies, in place of the
strided variant (``codegen/relayout.py``). Results equal NumPy's bit for bit where NumPy's
are exact, and the strided variant still runs for what the copy cannot fix."""
import numpy as np
import pytest
from codegen_helpers import fused_node

import fusejit
from fusejit.codegen import build_kernel, relayout
from tests.oracle import assert_same

N = 160    # 160 x 160 = 25,600 elements: above relayout.MIN_ELEMENTS, not a multiple of TILE


def _data(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "i":
        return rng.integers(-50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("shape", [(N, N + 3), (3, 130, 140)], ids=["2d", "3d"])
def test_the_copy_equals_the_array(dtype, shape):
    src = np.swapaxes(_data(dtype, shape[:-2] + shape[::-1][:2], 0), -1, -2)
    assert relayout.by_columns(src) and src.shape == shape
    for copy in (relayout.copy_serial, relayout.copy_parallel):
        dst = np.empty(shape, dtype)
        copy(src if src.ndim == 3 else src[None], dst if dst.ndim == 3 else dst[None])
        assert np.array_equal(dst, src)


def _transposed_times(x, y):
    return x.T * y + 1


def _fortran_beside_c(a, w):
    return np.where(a > w, a - w, w * 0.5)


def _batched_transpose_sum(x, y):
    return (np.swapaxes(x, 1, 2) * y).sum(axis=-1)


def _transposed_int_and_bool(i, m):
    return np.where(m.T, i * 3, -i)


@pytest.mark.parametrize("fn, make", [
    (_transposed_times, lambda k: (_data(np.float32, (N + 5, N), k),
                                   _data(np.float32, (N, N + 5), k + 1))),
    (_fortran_beside_c, lambda k: (_data(np.float64, (N, N + 7), k),
                                   np.asfortranarray(_data(np.float64, (N, N + 7), k + 1)))),
    (_batched_transpose_sum, lambda k: (_data(np.float64, (2, N, 100), k),
                                        _data(np.float64, (2, 100, N), k + 1))),
    (_transposed_int_and_bool, lambda k: (_data(np.int32, (N, N), k),
                                          _data(np.bool_, (N, N), k + 1))),
], ids=["transposed", "fortran-beside-c", "batched-transpose", "int-and-bool"])
def test_programs_on_arrays_laid_out_by_columns_equal_numpy(fn, make):
    compiled = fusejit.compile(fn)
    for k in range(3):
        args = make(k)
        assert_same(fn(*args), compiled(*args))


def _recording(results):
    def variant(name, answer):
        def run(*args):
            results.append(name)
            return answer(args)
        return run
    return variant


def test_a_kernel_declining_by_columns_runs_its_row_variant_on_copies():
    node = fused_node([((N, N), np.float32)] * 2,
                      lambda emit, x, y: [emit("mul", emit("add", x, y), y)])
    kernel = build_kernel(node)
    calls: list = []
    variant = _recording(calls)
    rows = variant("rows", lambda args: all(map(relayout.unit_rows, args[2:])))
    run = kernel._declined(rows, variant("strided", lambda args: True), relayout.copy_serial)
    x, y = _data(np.float32, (N, N), 0), _data(np.float32, (N, N), 1)
    out = np.empty((N, N), np.float32)
    run(N, N, x.T, y, out)
    assert calls == ["rows"]
    run(N, N, x[:, ::-1], y, out)                  # stepped backwards: no copy fixes it
    assert calls == ["rows", "strided"]
    run(N, N, x.T, y, out.T)                       # the output is laid out by columns
    assert calls == ["rows", "strided", "strided"]
    small = np.ones((4, 6), np.float32)
    run(6, 4, small.T, small.T.copy(), np.empty((6, 4), np.float32))
    assert calls[-1] == "strided"                  # too small to pay for the copy


def test_a_kernel_writing_an_input_in_place_keeps_the_strided_variant():
    node = fused_node([((N, N), np.float32)], lambda emit, x: [emit("mul", x, x)])
    kernel = build_kernel(node, in_place=((0, 0),))

    def strided(*args):
        return True

    assert kernel._declined(lambda *args: False, strided, relayout.copy_serial) is strided
