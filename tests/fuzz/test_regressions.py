"""Shrunk failures found by the fuzzer and the edge-case tables: one named test each.

Each test is the minimal program, checked with the same differential oracle as the fuzzer
(``differential.check``: 3 calls, trace then replays). The comment names the bug and the
module that is wrong. They stay plain tests (never xfail): a failing one is an open bug.
"""
import numpy as np

from tests.fuzz.differential import check
from tests.fuzz.programs import Arg, Program


def _calls(*arrays):
    """Inputs for each call: the same arrays (copied by ``check``) on every call."""
    return lambda call: list(arrays)


def _check_drawn(program: Program) -> None:
    """A program as the fuzzer drew it, with the fuzzer's inputs (seed 1 + call)."""
    check(program.build(), lambda call: program.make_inputs(1 + call), inexact=False)


def test_gather_constant_index_into_size_one_axis():
    # ir/ops.py infer_types: shape rules of gather/setitem/scatter_add run NumPy on stand-in
    # inputs filled with ones, so the stand-in *index array* holds 1 and is out of bounds for an
    # axis of size 1 -> FusejitError("internal: IndexError"). Module: ir (tracer-facing op rule).
    def program(a0):
        return a0[np.array([0], dtype=np.intp)]

    check(program, lambda call: [np.full(1, call, np.float32)], inexact=False)


def test_gather_index_array_argument_into_size_one_axis():
    # Same bug through an integer-array argument (``x[i % 1]``): infer_types stand-in index 1.
    def program(a0, a1):
        return a0[a1 % 1] * 2

    check(program, _calls(np.ones((1, 2), np.float32), np.array([3, -2], np.int64)),
          inexact=False)


def test_maximum_and_minimum_of_signed_zeros_return_the_second_operand():
    # codegen (scalar templates for max/min in the prelude): on a tie NumPy returns the *second*
    # operand (np.maximum(-0.0, 0.0) is +0.0, np.minimum(0.0, -0.0) is -0.0); the compiled
    # kernel returns the first, so replays flip the sign of zero. The trace call is NumPy's own.
    def program(a):
        return np.maximum(a, 0.0), np.minimum(a, -0.0)

    check(program, _calls(np.array([-0.0, 0.0, 1.0, -2.0], np.float32)), inexact=False)


def test_float32_transcendental_flowing_into_a_float64_result():
    # Found by the long fuzz run. exp in float32 (vector math, 1 ulp from NumPy's SIMD exp) is
    # promoted to float64 by a strong np.float64 constant. The *oracle* was wrong: it held the
    # float64 result to float64 tolerances, but it is only as precise as the float32 step.
    # Module: tests/fuzz/differential.py (tolerance), compiled result is correct.
    def program(a1):
        v5 = np.exp(a1)
        return np.maximum(v5, np.float64(0.25))

    rng = np.random.default_rng(1)
    check(program, lambda call: [rng.standard_normal((1, 1, 1, 1)).astype(np.float32)])


def test_int64_wraparound_seen_by_a_float_comparison():
    # Found by the long fuzz run on the final code. codegen: Numba marks signed integer adds
    # "no signed wrap", so LLVM compared float(a + a) with 1.5 as if a + a could not overflow,
    # and np.maximum picked the wrong side for wrapped sums. Integer +, -, *, negation now go
    # through uint64 arithmetic (ir/ops.py templates), which wraps like NumPy.
    def program(a0):
        a0 += a0
        return np.maximum(a0, 1.5)

    values = np.array([[-4397479949780690751, -3717182306025508508],
                       [5796441818114535710, -7527822175994744835]], np.int64)
    check(program, _calls(values), inexact=False)


def test_fmax_of_signed_zeros_is_not_held_to_one_sign():
    # Found by the long fuzz run (program 1,222): the *oracle* was wrong. On a tie of -0.0 and
    # +0.0, np.fmax/np.fmin return either operand depending on dtype, layout and position
    # (float32: the second in the SIMD body of a long contiguous array, the first in a short
    # one or under broadcasting), so programs calling them are compared without zero signs
    # (tests/fuzz/differential.py); values and NaN positions still are.
    short, long = np.zeros(4, np.float32), np.zeros(64, np.float32)
    assert np.signbit(np.fmax(short, -short)[0]) != np.signbit(np.fmax(long, -long)[0])
    program = Program(args=[Arg("a0", "array", (1, 2), "float32"),
                            Arg("a1", "array", (1, 2, 2), "float32")],
                      lines=["v0 = np.min(a0, axis=0, keepdims=True)",
                             "v1 = np.true_divide(a0, a1)", "v4 = np.fmax(v0, v1)"],
                      returns=["v4"], specials=True)
    check(program.build(), lambda call: program.make_inputs(10286 + call), inexact=False)


def test_zero_d_basic_index_stays_a_zero_d_array():
    # Found by the long fuzz run (program ~10,000). runtime/program.py: the getitem view step
    # ran x[0] on a 1-d array, which NumPy answers with a scalar, so replays returned
    # np.float32 where eager NumPy (np.broadcast_to of it) returned a 0-d ndarray.
    def program(a0):
        return np.broadcast_to(a0[0], ()), a0[0], a0[0:1][0]

    check(program, _calls(np.array([1.5, -2.0], np.float32)), inexact=False)


def test_max_reduction_of_signed_zeros_is_not_held_to_one_sign():
    # Found by the long fuzz run: the *oracle* was wrong. np.max/np.min along an axis return
    # the last of tied -0.0/+0.0 in NumPy's plain loops but whichever lane wins in its SIMD
    # tree reductions, so the zero sign of programs reducing with max/min is not compared.
    rows = np.array([[0.0, -0.0], [-0.0, 0.0]])
    assert list(np.signbit(np.max(rows, axis=0))) == [True, False]
    program = Program(args=[Arg("a0", "array", (2, 2, 2), "float64"),
                            Arg("a1", "generic", (), "float32")],
                      lines=["v0 = np.rint(a0)", "v2 = np.max(v0, axis=0)"],
                      returns=["v2"], specials=True, wide_ints=True)
    _check_drawn(program)


def test_indexing_a_numpy_scalar_makes_a_copy_not_a_view():
    # Found by the long fuzz run (program 1,547 on c713434; older than this session).
    # tracer/indexing.py linked s[None] to s as a view, so `v += 2` was written back into the
    # sum s; in NumPy, np.sum returns a scalar and s[None] is a new array writes do not reach.
    def program(a0):
        s = np.sum(a0)
        v = s[None]
        v += 2
        return np.negative(s), v

    check(program, _calls(np.array([0.25], np.float32)), inexact=False)


def test_element_read_before_an_in_place_update_keeps_the_old_value():
    # Found by the long fuzz run on 5da102a; introduced by that session's fix above (x[0, ...]
    # made a 0-d *view* of the argument, which the replayed `a1 += 2` then changed).
    # runtime/program.py now copies a 0-d getitem, as NumPy's scalar result is a copy.
    def program(a1):
        v1 = a1[0]
        a1 += 2
        return v1

    check(program, _calls(np.array([0.5, -1.0], np.float32)), inexact=False)


def test_nested_tanh_of_a_zero_d_integer_beside_its_mean_compiles():
    # Found by the long fuzz run on 6b7d124 (program 8,988; it hung instead of failing, so
    # hypothesis had nothing to shrink; this is the program, cut to what hangs): the mean of a
    # 0-d integer array pads its space to (1,), and codegen/numba_cpu.py looped over that one
    # element, loading in0[0] and storing out1[0] on each iteration. LLVM's loop vectorizer
    # then walked tanh(tanh(x))'s expression tree once per path (isUniformAcrossVFsAndUFs):
    # minutes, at 100% CPU. The 0-d reduction now has no loop.
    def program(a0):
        v0 = np.tanh(a0)
        v1 = np.mean(a0)
        v5 = np.tanh(v0)
        return np.clip(v5, 0, None), a0.argmin(keepdims=True), v5, v1

    for dtype in (np.int64, np.int32):
        check(program, _calls(np.array(3, dtype)), inexact=True)


def test_cosine_of_a_tanh_of_a_zero_d_integer_compiles():
    # Found by a fuzz run on 54a26df (it hung at 100% CPU, as in the test above, and once
    # killed CI through the fuzz test's 300 s limit): the same one-iteration loop over a padded
    # (1,) space, in an elementwise kernel this time. LLVM's optimizer spent minutes on
    # cos(tanh(x)) loaded from in0[0] and stored to out0[0]. A 0-d elementwise kernel now has
    # no loop either (codegen/kernel.py plan_kernel, KernelPlan.zero_d).
    def program(a0):
        return np.maximum(np.cos(np.tanh(a0)), 2)

    for dtype in (np.int32, np.int64, np.float32):
        check(program, _calls(np.array(-236027138, dtype)), inexact=True)


def test_same_dtype_astype_is_a_copy_that_an_in_place_update_does_not_reach():
    # Found by the second long fuzz run on the final code of this session (after 4,442
    # programs; older than the session). tracer/functions.py recorded a0.astype(np.int32) on
    # an int32 a0 as a0 itself (a cast to the same dtype is no op), so the expand_dims of the
    # copy replayed as a view of the argument and saw `a0 += 2`. It is now a `copy` node.
    program = Program(args=[Arg("a0", "array", (1,), "int32")],
                      lines=["v0 = np.negative(a0)", "v1 = a0.astype(np.int32)",
                             "v2 = np.expand_dims(v1, 0)", "v3 = a0.astype(np.float32)",
                             "v4 = np.negative(a0)", "a0 += 2"],
                      returns=["v4", "v2"], wide_ints=True)
    _check_drawn(program)


def test_np_array_of_a_traced_argument_copies_in_the_traced_call():
    # Found while reducing the failure above (older than the session): np.array(x) asks
    # x.__array__(copy=True) for a new array, and NumPy 2 does not copy what it gets back;
    # the Tracer returned the argument itself, so the traced (first) call's result saw the
    # later `a0 += 2`. tracer/tracer.py now honours copy=True (and copy=False).
    def program(a0):
        v1 = np.array(a0)
        v2 = v1[None]
        a0 += 2
        return v2

    check(program, lambda call: [np.array([[5, 6]], np.int32)], inexact=False)


def test_epilogue_of_a_reduction_over_an_axis_of_size_one_reads_a_per_element_value():
    # codegen/kernel.py _assign_regions: the reduced axis has size 1, so max(v3, 2) (per
    # element) and sum(v3) (per row) have the same shape; their quotient was placed after the
    # row loop, where the per-element value is not defined (Numba NameError on replay).
    def program(a0):
        v3 = a0.astype(np.bool)
        v4 = np.sum(v3, axis=0, keepdims=True)
        return np.maximum(v3, 2) / v4

    check(program, lambda call: [np.full(1, 0.5 + call, np.float32)], inexact=False)


def test_index_by_a_traced_zero_d_integer_is_a_view_that_sees_later_writes():
    # tracer/indexing.py: NumPy indexes with a 0-d integer array as with an int, so a0[a1 % 2]
    # is a view of a0 and shows the write a0 += 2; the trace recorded a gather of the old a0.
    def program(a0, a1):
        v0 = a0[a1 % 2]
        a0 += 2
        return np.negative(v0)

    check(program, lambda call: [np.arange(4, dtype=np.float32).reshape(2, 2) + call,
                                 np.array(call, np.int32)], inexact=False)
