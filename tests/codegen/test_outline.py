"""Row loops outlined into functions of their own (``codegen/outline.py``): what each function
takes and returns, which kernels keep their loops inline, and results against eager NumPy."""
import numpy as np
import pytest

import fusejit
from fusejit.codegen import build_kernel
from fusejit.codegen.numba_cpu import _row_function
from fusejit.codegen.outline import MIN_ROW, outline_rows

ROW_PASSES = """\
    for i0 in $RANGE0(n0):
        acc0 = np.float32(-np.inf)
        r_in0 = crow(in0, (i0,))
        for i1 in $RANGE(n1):
            x0 = r_in0[i1]
            acc0 = rmaximum(acc0, exp_f32(x0))
        v0 = np.float32(acc0)
        r_out0 = crow(out0, (i0,))
        for i1 in $RANGE(n1):
            x0 = r_in0[i1]
            v1 = np.float32(tanh_f32(x0 - v0))
            r_out0[i1] = v1""".splitlines()
PARAMS = ["n0", "n1", "in0", "out0"]
VECTOR = {"exp_f32", "tanh_f32"}


def outlined(lines, params, dim, calls, bits=None):
    """(the kernel's lines, the row loops' functions as source lines)."""
    lines, loops = outline_rows(lines, params, dim, calls)
    return lines, [line for loop in loops for line in _row_function(loop, bits)]


def test_a_loop_takes_what_it_reads_and_returns_the_accumulator_read_after_it():
    lines, functions = outlined(ROW_PASSES, PARAMS, 1, VECTOR)
    assert lines == [*ROW_PASSES[:3], "        acc0 = row_loop0(n1, acc0, r_in0)",
                     *ROW_PASSES[6:8], "        row_loop1(n1, r_in0, r_out0, v0)"]
    text = "\n".join(functions)
    # x0 and i1, bound by the first loop, are bound again before the second reads them
    assert "def row_loop0(n1, acc0, r_in0):\n    never_inline()\n    for i1 in range(n1):" in text
    assert text.count("    return acc0\n") == 1
    assert "def row_loop1(n1, r_in0, r_out0, v0):\n    never_inline()\n" in text
    assert "return" not in text.split("def row_loop1")[1]


def test_the_width_is_asked_for_in_each_row_loop():
    _, functions = outlined(ROW_PASSES, PARAMS, 1, VECTOR, 512)
    assert functions.count("    vector_width(512)") == 2


def test_loops_over_other_dims_stay_inline():
    lines, functions = outlined(ROW_PASSES, PARAMS, 2, VECTOR)
    assert lines == ROW_PASSES and functions == []


def test_a_loop_without_vector_math_stays_inline():
    lines, functions = outlined(ROW_PASSES, PARAMS, 1, {"tanh_f32"})
    assert lines[:8] == ROW_PASSES[:8]
    assert lines[8:] == ["        row_loop0(n1, r_in0, r_out0, v0)"]
    assert functions.count("    never_inline()") == 1


def test_a_name_bound_under_a_branch_is_still_read_from_outside():
    block = ["    for i0 in $RANGE0(n0):",
             "        y = np.float32(0)",
             "        for i1 in $RANGE(n1):",
             "            if i1 > 2:",
             "                y = exp_f32(np.float32(1))",
             "            out0[i0, i1] = y",
             "        out1[i0] = y"]
    lines, functions = outlined(block, ["n0", "n1", "out0", "out1"], 1, VECTOR)
    assert lines[2] == "        y = row_loop0(n1, i0, out0, y)"
    assert "    return y" in functions


def kernel_source(fn, *args):
    compiled = fusejit.compile(fn)
    compiled(*args)
    (node,) = [n for n in compiled.entry_for(*args).paths[0].pipeline.graph.nodes
               if n.op == "fused"]
    kernel = build_kernel(node)
    return compiled, kernel.source, kernel


def tanh_shifted(x):
    return np.tanh(x * 3 - 1) + x


def test_rows_under_min_row_run_the_loops_inline_and_compile_no_row_function():
    rng = np.random.default_rng(2)
    compiled = {}
    for cols in (MIN_ROW - 1, MIN_ROW):
        x = rng.standard_normal((5, cols)).astype(np.float32)
        _, _, kernel = kernel_source(tanh_shifted, x)
        module = kernel.module
        (got,) = kernel(x, parallel=False)
        want = tanh_shifted(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=4e-7, atol=4e-7)
        compiled[cols] = {name: len(getattr(module, name).signatures)
                          for name in ("short_serial", "kernel_serial", "row_loop0")}
    # Numba compiles a function when it is first called: only what the rows' length needs
    assert compiled[MIN_ROW - 1] == {"short_serial": 1, "kernel_serial": 0, "row_loop0": 0}
    assert compiled[MIN_ROW] == {"short_serial": 1, "kernel_serial": 1, "row_loop0": 1}


def broadcasts(x, b, c, s):
    return np.tanh(x * b + c) * s + x[0]


def test_a_rank_3_kernel_with_broadcast_operands_matches_numpy():
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(shape).astype(np.float32)
            for shape in ((5, 6, 80), (80,), (5, 6, 1), (1, 6, 1))]
    compiled, source, _ = kernel_source(broadcasts, *args)
    assert "def row_loop0(n2, i0, i1, in2, in3, r_in0, r_in1, r_in4, r_out0):" in source
    got, want = compiled(*args), broadcasts(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=4e-7)


def scaled_sin(x):
    return np.sin(x) * 2


def test_a_kernel_counting_arguments_beyond_range_keeps_its_loop_inline():
    # nbig is a reduction of the prange: Numba takes it only as an in-place add in the loop
    x = np.linspace(-3, 3, 64, dtype=np.float64).reshape(4, 16)
    _, source, _ = kernel_source(scaled_sin, x)
    assert "nbig += " in source and "row_loop" not in source


@pytest.mark.parametrize("shape", [(3, 1, 70), (1, 130), (2, 63), (4, 0), (0, 100)],
                         ids=["length-1", "one-row", "short-rows", "empty-rows", "no-rows"])
def test_row_loops_run_over_degenerate_rows(shape):
    def norm(x):
        return np.exp(x - x.mean(axis=-1, keepdims=True)) * 2 + np.exp(x)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    compiled = fusejit.compile(norm)
    compiled(x)
    with np.errstate(all="ignore"):
        got, want = compiled(x), norm(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
