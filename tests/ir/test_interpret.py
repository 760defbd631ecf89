"""The reference interpreter runs each node's NumPy implementation."""
import numpy as np
import pytest

from fusejit.ir import Graph, Node, Var, indexing, interpret, ops
from tests.strategies import Program, lit, var


def test_runs_nodes_in_order_with_literals():
    x, w = var("x", "f32", (2, 3)), var("w", "f32", (3,))
    p = Program(x, w)
    y = p("mul", lit(0.5), p("add", x, w))
    g = p.graph(p("sum", y, axes=(1,), keepdims=False), y)
    xs, ws = np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32)
    total, half = interpret(g, xs, ws)
    np.testing.assert_array_equal(half, 0.5 * (xs + ws))
    assert total.dtype == np.float32 and total.shape == (2,)


def test_views_reductions_and_literal_outputs():
    x = var("x", "i64", (2, 3))
    p = Program(x)
    t = p("permute", x, perm=(1, 0))
    strided = p("getitem", t, key=indexing.encode((slice(None, None, 2),)))
    g = p.graph(p("argmax", strided, axes=(0, 1), keepdims=False), lit(7, "i32"))
    data = np.arange(6).reshape(2, 3)
    index, seven = interpret(g, data)
    assert index == np.argmax(data.T[::2]) and seven.dtype == np.int32 and seven == 7


def test_fused_node_runs_its_body():
    x = var("x", "f32", (3,))
    inner = Program(var("a", "f32", (3,)))
    body = inner.graph(inner("exp", inner("neg", inner.inputs[0])))
    out = Var(x.type)
    g = Graph("f", (x,), (Node("fused", (x,), (out,), {"body": body}),), (out,))
    data = np.array([0.0, 1.0, 2.0], np.float32)
    np.testing.assert_allclose(interpret(g, data)[0], np.exp(-data))


def test_multi_output_nodes():
    x = var("x", "f32", (4,))
    p = Program(x)
    left, right = p("split", x, indices=(1,), axis=0)
    a, b = interpret(p.graph(right, left), np.arange(4, dtype=np.float32))
    assert a.tolist() == [1.0, 2.0, 3.0] and b.tolist() == [0.0]


def test_wrong_argument_count():
    x = var("x", "f32", ())
    with pytest.raises(TypeError, match="takes 1 inputs, got 2"):
        interpret(Graph("f", (x,), (), (x,)), 1.0, 2.0)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.complex64])
@pytest.mark.parametrize("shape, width", [
    ((2, 3, 4, 4), ((0, 0), (0, 0), (1, 1), (1, 1))),
    ((3,), ((2, 0),)),
    ((0, 3), ((1, 2), (0, 1))),
    ((), ()),
])
def test_pad_op_gives_np_pad(shape, width, dtype):
    """The pad op fills and copies instead of calling np.pad (whose argument handling cost
    most of its time at conv sizes): same values, dtype, shape and a fresh C-contiguous
    array, also from a strided view."""
    base = np.random.default_rng(0).standard_normal(tuple(2 * d for d in shape)).astype(dtype)
    every_other = base[tuple(slice(None, None, 2) for _ in shape)]
    value = np.dtype(dtype).type(3)
    for x in (every_other.copy(), every_other):
        got = ops.get("pad").impl(x, width, value)
        want = np.pad(x, width, mode="constant", constant_values=value) if width else x.copy()
        assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
        assert not np.shares_memory(got, x)
        np.testing.assert_array_equal(got, want)
