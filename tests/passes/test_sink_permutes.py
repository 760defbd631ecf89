"""sink_permutes (run by fuse): a transpose that moves the last axis moves below the elementwise
ops and reductions reading it, so kernels walk memory in order; results are bit-identical."""
import numpy as np
import pytest

import fusejit
from fusejit.passes.fuse import fuse
from fusejit.passes.sink_permutes import sink_permutes
from tests.oracle import assert_same
from tests.passes.test_fuse import Builder, fused_nodes, lit, rand
from tests.passes.test_sink_splits import check_identical


def ops_of(graph):
    return [n.op for n in graph.nodes]


def test_elementwise_chain_runs_on_the_untransposed_array():
    b = Builder()
    x, row = b.arg((6, 8)), b.arg((6,))          # x.T is (8, 6); row broadcasts along it
    t = b("permute", x, perm=(1, 0))
    out = b("mul", b("exp", b("add", t, lit(1.0))), row)
    graph = b.graph(out)
    sunk, count = sink_permutes(graph)
    assert count == 3                            # add, exp, mul: one level each
    assert ops_of(sunk) == ["add", "exp", "reshape", "permute", "mul", "permute"]
    assert sunk.nodes[0].inputs[0] is x          # the kernel reads x in its own order
    assert sunk.nodes[-1].out is out and sunk.nodes[-1].attr["perm"] == (1, 0)
    assert ops_of(fuse(graph).graph) == ["reshape", "permute", "fused", "permute"]
    check_identical(graph, sunk, rand(6, 8), rand(6))


@pytest.mark.parametrize("op", ["sum", "reduce_max", "argmax"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduction_of_a_transpose_reduces_the_original_axes(op, keepdims):
    b = Builder()
    x = b.arg((3, 4, 5))
    t = b("permute", x, perm=(2, 0, 1))          # (5, 3, 4): axis 1 is x's axis 0
    out = b(op, b("mul", t, lit(2.0)), axes=(1,), keepdims=keepdims)
    graph = b.graph(out)
    sunk, _ = sink_permutes(graph)
    (reduce,) = [n for n in sunk.nodes if n.op == op]
    assert reduce.attr["axes"] == (0,) and reduce.inputs[0].type.shape == (3, 4, 5)
    # kept axes in the result's order: x's 2 then 1, so a transpose follows
    assert ops_of(sunk)[-1] == "permute"
    check_identical(graph, sunk, rand(3, 4, 5))


def test_reduction_whose_kept_axes_stay_in_order_needs_no_transpose():
    b = Builder()
    x = b.arg((6, 8))
    out = b("sum", b("permute", x, perm=(1, 0)), axes=(1,), keepdims=False)
    graph = b.graph(out)
    sunk, _ = sink_permutes(graph)
    assert ops_of(sunk) == ["sum"] and sunk.nodes[0].attr["axes"] == (0,)
    check_identical(graph, sunk, rand(6, 8))


def test_transpose_that_keeps_the_last_axis_stays():
    b = Builder()
    x = b.arg((2, 3, 4, 5))
    out = b("mul", b("permute", x, perm=(0, 2, 1, 3)), lit(0.5))
    assert sink_permutes(b.graph(out))[1] == 0


def test_result_a_reshape_would_copy_stays_transposed_before_it():
    b = Builder()
    x = b.arg((6, 8))
    y = b("mul", b("permute", x, perm=(1, 0)), lit(2.0))
    graph = b.graph(b("reshape", y, shape=(48,)))
    assert sink_permutes(graph)[1] == 0


def test_result_transposed_back_by_the_caller_is_the_untransposed_result():
    # (x^p * 2)^(p^-1): the transpose sunk below the mul and the caller's cancel out
    b = Builder()
    x = b.arg((6, 8))
    y = b("mul", b("permute", x, perm=(1, 0)), lit(2.0))
    graph = b.graph(b("permute", y, perm=(1, 0)))
    sunk, count = sink_permutes(graph)
    assert count == 1 and ops_of(sunk) == ["mul"] and sunk.outputs == (sunk.nodes[0].out,)
    check_identical(graph, sunk, rand(6, 8))


def test_operands_in_different_layouts_stay():
    b = Builder()
    x, y = b.arg((6, 8)), b.arg((8, 6))
    graph = b.graph(b("add", b("permute", x, perm=(1, 0)), y))
    assert sink_permutes(graph)[1] == 0


def test_multi_axis_argmax_of_a_transpose_stays():
    # its flat index counts in the transposed order
    b = Builder()
    x = b.arg((6, 8))
    graph = b.graph(b("argmax", b("permute", x, perm=(1, 0)), axes=(0, 1), keepdims=False))
    assert sink_permutes(graph)[1] == 0


def test_slice_of_a_transpose_slices_first_so_the_work_sinks():
    b = Builder()
    x = b.arg((6, 8))
    key = (("slice", 1, None, None), ("slice", None, 4, 2))      # x.T[1:, :4:2]
    out = b("mul", b("getitem", b("permute", x, perm=(1, 0)), key=key), lit(2.0))
    graph = b.graph(out)
    sunk, count = sink_permutes(graph)
    assert count == 2                            # the slice, then the mul
    assert ops_of(sunk) == ["getitem", "mul", "permute"]
    assert sunk.nodes[0].inputs[0] is x
    assert sunk.nodes[0].attr["key"] == (("slice", None, 4, 2), ("slice", 1, None, None))
    check_identical(graph, sunk, rand(6, 8))


def test_concatenation_of_transposes_concatenates_first():
    b = Builder()
    x, y = b.arg((6, 8)), b.arg((6, 3))
    t = b("concatenate", b("permute", x, perm=(1, 0)), b("permute", y, perm=(1, 0)), axis=0)
    graph = b.graph(b("add", t, lit(1.0)))
    sunk, count = sink_permutes(graph)
    assert count == 2 and ops_of(sunk) == ["concatenate", "add", "permute"]
    assert sunk.nodes[0].attr["axis"] == 1 and sunk.nodes[0].inputs == (x, y)
    check_identical(graph, sunk, rand(6, 8), rand(6, 3))


def test_concatenation_of_a_transpose_and_another_layout_stays():
    b = Builder()
    x, y = b.arg((6, 8)), b.arg((3, 6))
    graph = b.graph(b("concatenate", b("permute", x, perm=(1, 0)), y, axis=0))
    assert sink_permutes(graph)[1] == 0


def test_slice_with_an_integer_of_a_transpose_stays():
    b = Builder()
    x = b.arg((6, 8))
    out = b("mul", b("getitem", b("permute", x, perm=(1, 0)), key=(("int", 2),)), lit(2.0))
    graph = b.graph(out)
    assert ops_of(sink_permutes(graph)[0]) == ops_of(graph)


@pytest.mark.parametrize("fn", [
    lambda x, b: x.T * b + 1,
    lambda x, b: np.where(x.T > 0.5, np.exp(x.T), -x.T),
    lambda x, b: (x.T * b).sum(axis=1),
    lambda x, b: np.argmax(x.T - b, axis=1),
    lambda x, b: (x.T * 2).max(axis=0, keepdims=True),
    lambda x, b: np.tanh(x.transpose(1, 0)) @ x,
    lambda x, b: (x.T * 2).reshape(-1),
    lambda x, b: x.T[::2, 3:] - 1,
    lambda x, b: x.T.copy() * 2,
    lambda x, b: (x.T * 2).copy() + 1,
    lambda x, b: np.ascontiguousarray(x.T, dtype=np.float64) + 1,
    lambda x, b: np.asfortranarray(x * 2) - 1,
    lambda x, b: np.concatenate([x.T, x.T[:3]]) * 2,
], ids=["affine", "where", "sum", "argmax", "max_keepdims", "matmul", "reshape", "slice",
        "c_ordered_copy", "c_ordered_copy_of_work", "ascontiguousarray", "asfortranarray",
        "concatenate"])
def test_compiled_matches_numpy_values_and_layout(fn):
    compiled = fusejit.compile(fn, target="cpu")
    x = np.random.default_rng(3).standard_normal((40, 24)).astype(np.float32)
    b = np.linspace(-1, 1, 40, dtype=np.float32)
    for _ in range(2):                            # the trace, then a replay
        got, want = compiled(x, b), fn(x, b)
        assert_same(want, got)
        assert got.flags.c_contiguous == want.flags.c_contiguous
        assert got.flags.f_contiguous == want.flags.f_contiguous
    assert compiled.cache_info()["eager_calls"] == 0


def test_kernel_count_of_a_transposed_softmax():
    b = Builder()
    x = b.arg((6, 8))
    t = b("permute", x, perm=(1, 0))
    m = b("reduce_max", t, axes=(1,), keepdims=True)
    e = b("exp", b("sub", t, m))
    out = b("div", e, b("sum", e, axes=(1,), keepdims=True))
    graph = b.graph(out)
    result = fuse(graph)
    assert result.stats["sunk_transposes"] > 0
    assert ops_of(result.graph)[-1] == "permute"
    check_identical(graph, result.graph, rand(6, 8))
    assert len(fused_nodes(result.graph)) <= 3


def test_operand_that_cannot_sink_keeps_its_user_in_place():
    # y feeds a reshape (it stays transposed-computed), so z = y * 2 may not read y^-1 either
    b = Builder()
    x = b.arg((6, 8))
    y = b("add", b("permute", x, perm=(1, 0)), lit(1.0))
    z = b("mul", y, lit(2.0))
    graph = b.graph(b("reshape", y, shape=(48,)), z)
    assert sink_permutes(graph)[1] == 0
